"""Helpers for task tests: copy an example task into tmp_path to mutate it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest


@pytest.fixture
def rmsnorm_copy(tmp_path: Path, examples_dir: Path) -> Path:
    """A private, writable copy of examples/rmsnorm."""
    target = tmp_path / "rmsnorm"
    shutil.copytree(examples_dir / "rmsnorm", target)
    return target


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2))
