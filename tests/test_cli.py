"""The root CLI: every capability registers, and kloop's errors become one line and an exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kloop.errors import BadInput, one_line

KLOOP = [sys.executable, "-m", "kloop.cli"]


def test_every_capability_is_registered() -> None:
    """Registration skips a missing module silently, so check the command table itself."""
    import typer

    from kloop import cli

    cli._register()
    names = set(typer.main.get_command(cli.app).commands)
    assert names >= {"verify", "doctor", "run", "approve", "status", "task", "profile", "wiki"}


def test_bad_input_carrying_newlines_prints_one_line(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "definition.json").write_text('{"name": "x\\ny", "axes": {"n": {"type": "def run():\\n  pass"}}}')
    done = subprocess.run([*KLOOP, "task", "show", str(task)], capture_output=True, text=True)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "definition.json" in done.stderr


def test_messages_are_flattened_and_bounded() -> None:
    error = BadInput("a\nb.json", "line one\nline two")
    assert "\n" not in str(error) and str(error) == "a\\nb.json: line one\\nline two"
    assert len(one_line("x" * 10_000)) == 400


def test_usage_errors_exit_2() -> None:
    done = subprocess.run([*KLOOP, "verify"], capture_output=True, text=True)
    assert done.returncode == 2
