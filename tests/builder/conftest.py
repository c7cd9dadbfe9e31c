"""Build tests share one cache directory: a C++ extension takes ~40 s to compile here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kloop.task.schema import Solution

REPO = Path(__file__).resolve().parents[2]


def make_solution(language: str, files: dict[str, str], entry: str, *, dps: bool = False,
                  tunables: dict[str, list[Any]] | None = None, binding: str | None = None,
                  name: str = "candidate") -> Solution:
    """A validated Solution from in-memory sources (the task layer's own schema)."""
    data: dict[str, Any] = {
        "name": name, "definition": "test_op", "author": "tests",
        "spec": {"language": language, "target_hardware": ["cpu"], "entry_point": entry,
                 "destination_passing_style": dps, "binding": binding},
        "sources": [{"path": path, "content": content} for path, content in files.items()],
    }
    if tunables is not None:
        data["kloop"] = {"tunables": tunables}
    return Solution.model_validate(data)


def run_python(code: str, *, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter (the sandbox is a fresh process too)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=REPO, check=False)


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("build-cache")
