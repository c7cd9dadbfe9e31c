"""Every shipped replay campaign parses and writes solutions that load against its example task."""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.agents.replay import load_campaign
from kloop.task.load import load_solution, load_task

REPO = Path(__file__).resolve().parents[2]
CAMPAIGNS = sorted((REPO / "examples" / "campaigns").glob("*.jsonl"))


def test_campaigns_are_shipped_for_a_cpu_and_a_gpu_example() -> None:
    tags = {c.stem: load_task(REPO / "examples" / c.stem).definition.tags for c in CAMPAIGNS}
    assert any("gpu" in t for t in tags.values()), tags  # scripts/demo.sh picks it when a GPU is present
    assert any("gpu" not in t for t in tags.values()), tags


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda p: p.stem)
def test_campaign_solutions_load_for_their_task(campaign: Path, tmp_path: Path) -> None:
    task = load_task(REPO / "examples" / campaign.stem)
    solution_dir = tmp_path / "solution"
    solution_dir.mkdir()
    for name in ("solution.json", *(s.path for s in (task.baseline.sources if task.baseline else []))):
        source = (REPO / "examples" / campaign.stem / "baseline" / name)
        if source.is_file():
            (solution_dir / name).write_text(source.read_text())
    loaded = 0
    for step in load_campaign(campaign):
        for relpath, content in step.files.items():
            target = (solution_dir / relpath).resolve()
            if solution_dir.resolve() not in target.parents:
                continue  # escape attempts are the gate's business, not a solution
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        solution = load_solution(solution_dir)
        assert solution.definition == task.definition.name
        loaded += 1
    assert loaded >= 3
