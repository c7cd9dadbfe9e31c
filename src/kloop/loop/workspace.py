"""The writer's workspace: a git repository with `solution/` and `notes/`, one commit per round.

The writer may change `solution/**` and `notes/**` only. Before the writer runs, kloop takes a
fingerprint of everything else (tracked files, `.git` itself minus objects); afterwards any
difference, any symlink under the allowed folders, any new top-level entry is a violation, and
the round is reverted. kloop's own git calls never run hooks.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from kloop.errors import HarnessFailure

ALLOWED = ("solution", "notes")
GIT_VOLATILE = ("objects", "index", "logs", "ORIG_HEAD", "COMMIT_EDITMSG", "refs/tags", "packed-refs")
GITIGNORE = "__pycache__/\n*.pyc\n.pytest_cache/\n"
_GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false",
        "-c", "user.name=kloop", "-c", "user.email=kloop@localhost", "-c", "init.defaultBranch=main"]


def file_digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Workspace:
    """RUN_DIR/workspace: the only place a writer acts."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def solution(self) -> Path:
        return self.root / "solution"

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    def git(self, *args: str, check: bool = True) -> str:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
        proc = subprocess.run([*_GIT, *args], cwd=self.root, capture_output=True, text=True, env=env)
        if check and proc.returncode != 0:
            raise HarnessFailure(f"git {' '.join(args)} in {self.root}: {proc.stderr.strip()}")
        return proc.stdout

    def create(self, baseline: Path | None, initial_files: dict[str, str]) -> str:
        """Make the repository: solution/ from the baseline (or `initial_files`), notes/, a first commit."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q")
        if baseline is not None:
            # contents only: the sealed baseline is read-only, the writer's copy must not be
            shutil.copytree(baseline, self.solution, dirs_exist_ok=True, copy_function=shutil.copyfile)
        for rel, text in initial_files.items():
            (self.solution / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.solution / rel).write_text(text, encoding="utf-8")
        self.notes.mkdir(exist_ok=True)
        (self.notes / "README.md").write_text(
            "Your notes for this run. notes/plan.md is frozen once research ends.\n", encoding="utf-8"
        )
        (self.root / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
        sealed_link = self.root / "sealed"
        if not sealed_link.exists():
            sealed_link.symlink_to(Path("..") / "sealed")  # read the task at ../sealed from solution/
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "round 0: baseline")
        self.git("tag", "round-000")
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def fingerprint(self) -> dict[str, str]:
        """Digest of every path a writer must not change (all but solution/ and notes/ contents)."""
        prints: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            rel_dir = Path(dirpath).relative_to(self.root)
            top = rel_dir.parts[0] if rel_dir.parts else ""
            if top in ALLOWED:
                dirnames[:] = []
                continue
            if top == ".git":
                inner = "/".join(rel_dir.parts[1:])
                dirnames[:] = [d for d in dirnames if f"{inner}/{d}".strip("/") not in GIT_VOLATILE]
                filenames = [f for f in filenames if f"{inner}/{f}".strip("/") not in GIT_VOLATILE]
            for name in filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
                path = Path(dirpath) / name
                prints[str(path.relative_to(self.root))] = file_digest(path)
            for name in list(dirnames):
                prints.setdefault(str(rel_dir / name) + "/", "dir")
        for name in ALLOWED:
            path = self.root / name
            prints[name] = "link:" + os.readlink(path) if path.is_symlink() else ("dir" if path.is_dir() else "missing")
        return prints

    def violations(self, before: dict[str, str]) -> list[str]:
        """Why the writer's changes are not allowed ([] when they are)."""
        after = self.fingerprint()
        out = [f"changed {p} (outside solution/ and notes/)" for p in sorted(before) if after.get(p) != before[p]]
        out += [f"created {p} (outside solution/ and notes/)" for p in sorted(set(after) - set(before))]
        for name in ALLOWED:
            base = self.root / name
            if base.is_symlink() or not base.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(base):
                for entry in dirnames + filenames:
                    path = Path(dirpath) / entry
                    if path.is_symlink():
                        out.append(f"symlink {path.relative_to(self.root)} -> {os.readlink(path)} (links may escape)")
        return out

    def changed_paths(self) -> list[str]:
        """Paths changed since HEAD (staged or not, untracked included)."""
        lines = self.git("status", "--porcelain", "-uall", "--", *ALLOWED).splitlines()
        return sorted({line[3:].split(" -> ")[-1].strip('"') for line in lines if line.strip()})

    def commit_round(self, number: int, message: str) -> str:
        """Commit the allowed folders as this round's attempt, tagged round-NNN; returns the sha."""
        self.git("add", "-A", "--", *ALLOWED)
        self.git("commit", "-q", "--allow-empty", "-m", f"round {number}: {message}"[:500])
        sha = self.head()
        self.git("tag", "-f", f"round-{number:03d}", sha)
        return sha

    def reset_to(self, sha: str, git_pristine: Path | None = None) -> None:
        """Put the workspace back exactly at `sha`: tracked files, untracked junk, .git hooks/config."""
        if git_pristine is not None and git_pristine.is_dir():
            for name in ("hooks", "info"):
                target = self.root / ".git" / name
                if target.is_symlink() or target.is_file():
                    target.unlink()
                elif target.exists():
                    shutil.rmtree(target)
                if (git_pristine / name).exists():
                    shutil.copytree(git_pristine / name, target, symlinks=True)
            shutil.copy2(git_pristine / "config", self.root / ".git" / "config")
        for name in ALLOWED:  # a writer may have replaced a folder with a link or file
            path = self.root / name
            if path.is_symlink() or path.is_file():
                path.unlink()
        self.git("reset", "-q", "--hard", sha)
        self.git("clean", "-q", "-fdx")

    def save_git_pristine(self, dest: Path) -> None:
        """Keep .git's hooks/, info/ and config where the writer cannot reach, for reverts."""
        dest.mkdir(parents=True, exist_ok=True)
        for name in ("hooks", "info"):
            src = self.root / ".git" / name
            if src.is_dir():
                shutil.copytree(src, dest / name, symlinks=True, dirs_exist_ok=True)
        shutil.copy2(self.root / ".git" / "config", dest / "config")

    def diff(self, parent: str, child: str) -> str:
        return self.git("diff", parent, child, "--", *ALLOWED)

    def read_files(self, sha: str, folder: str = "solution") -> dict[str, str]:
        """Text of every file under `folder` at commit `sha`."""
        names = self.git("ls-tree", "-r", "--name-only", sha, "--", folder).splitlines()
        out: dict[str, str] = {}
        for name in names:
            text = self.git("show", f"{sha}:{name}", check=False)
            out[name] = text
        return out
