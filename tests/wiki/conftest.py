"""Real git repositories and real wiki databases for the wiki tests (no mocks)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kloop.wiki.store import WikiStore

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Kernel Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Kernel Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


class GitRepo:
    """A throwaway repository driven through the real git CLI."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, input: bytes | None = None) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=self.path, env=GIT_ENV, input=input, capture_output=True, check=True
        )
        return proc.stdout.decode("utf-8", "replace").strip()

    def write(self, relpath: str, content: str | bytes) -> None:
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)

    def commit(self, message: str | bytes, files: dict[str, str | bytes] | None = None, date: str | None = None) -> str:
        """Write files, stage everything, commit with `message` (bytes allowed: non-UTF-8)."""
        for relpath, content in (files or {}).items():
            self.write(relpath, content)
        self.git("add", "-A")
        raw = message.encode() if isinstance(message, str) else message
        extra = ["--allow-empty", "--allow-empty-message", "--cleanup=verbatim", "-q", "-F", "-"]
        env_date = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
        subprocess.run(
            ["git", "commit", *extra], cwd=self.path, env={**GIT_ENV, **env_date}, input=raw,
            capture_output=True, check=True,
        )
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "kernels-repo")


@pytest.fixture
def store(tmp_path: Path) -> WikiStore:
    with WikiStore(tmp_path / "wiki.sqlite", seed_cards=False) as opened:
        yield opened


@pytest.fixture
def seeded_store(tmp_path: Path) -> WikiStore:
    with WikiStore(tmp_path / "seeded.sqlite") as opened:
        yield opened
