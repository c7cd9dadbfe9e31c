"""The progress views: a line per round result on a pipe, a live panel on a terminal."""

from __future__ import annotations

import io

from kloop.loop.progress import PlainProgress, RichProgress


def test_plain_progress_prints_round_results_not_every_step() -> None:
    out = io.StringIO()
    view = PlainProgress(out)
    view.update(round=1, stage="iterate", step="writer")
    for step in ("commit", "verify", "review"):
        view.update(round=1, stage="iterate", step=step)
    view.update(best=2.5, note="round 1 accepted")
    view.update(round=2, stage="iterate", step="writer")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("kloop: round 1  stage iterate  step writer  best -")
    assert "best 2.50x" in lines[1] and lines[1].endswith("round 1 accepted")


def test_rich_progress_renders_the_fields() -> None:
    view = RichProgress()
    view.console.file = io.StringIO()
    view.update(round=3, stage="tune", step="verify", best=1.75)
    from rich.console import Console

    console = Console(file=io.StringIO(), width=80)
    console.print(view._render())
    text = console.file.getvalue()
    view.close()
    for expected in ("round", "3", "tune", "verify", "1.75x", "elapsed"):
        assert expected in text
