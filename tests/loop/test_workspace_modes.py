"""The writer's solution/ is its own: copied from the read-only sealed baseline, but writable."""

from __future__ import annotations

import stat
from pathlib import Path

from kloop.loop.workspace import Workspace


def test_solution_copied_from_a_read_only_baseline_is_writable(tmp_path: Path) -> None:
    baseline = tmp_path / "sealed" / "baseline"
    baseline.mkdir(parents=True)
    (baseline / "main.py").write_text("def run(x, out):\n    out.copy_(x)\n")
    (baseline / "main.py").chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)  # as seal.py leaves it
    ws = Workspace(tmp_path / "workspace")
    ws.create(baseline, {})
    copied = ws.solution / "main.py"
    assert copied.read_text() == (baseline / "main.py").read_text()
    assert copied.stat().st_mode & stat.S_IWUSR
    assert not (baseline / "main.py").stat().st_mode & stat.S_IWUSR
