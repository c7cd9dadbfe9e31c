"""replay:FILE - campaign parsing, writes carried out as written (escapes included), exhaustion."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from kloop.agents import AgentRequest, AgentStatus, Role, get_agent
from kloop.agents.replay import load_campaign
from kloop.errors import BadInput


def _request(workspace: Path, turn: int) -> AgentRequest:
    return AgentRequest(role=Role.writer, prompt="p", workspace=workspace, turn=turn)


def test_plays_lines_by_turn_including_escapes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "solution").mkdir(parents=True)
    (ws / "solution" / "old.py").write_text("x")
    sealed = tmp_path / "sealed.txt"
    sealed.write_text("original")
    sealed.chmod(stat.S_IRUSR)
    lines = [
        {"claim": "first 2x", "files": {"a.py": "A", "../outside.txt": "out", str(sealed): "changed"},
         "delete": ["old.py"], "prediction": 2.0, "goal": "refactor"},
        {"claim": "link", "symlinks": {"up": ".."}, "files": {"up/through.txt": "t"}},
    ]
    campaign = tmp_path / "c.jsonl"
    campaign.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    agent = get_agent(f"replay:{campaign}")

    first = agent.run(_request(ws, 0))
    assert first.status is AgentStatus.completed and first.claim is not None
    assert first.claim.prediction == 2.0 and first.claim.goal == "refactor"
    assert (ws / "solution" / "a.py").read_text() == "A"
    assert not (ws / "solution" / "old.py").exists()
    assert (ws / "outside.txt").read_text() == "out"  # carried out: the gate refuses it, not the writer
    assert sealed.read_text() == "changed"  # even a read-only file, as a determined agent would

    agent.run(_request(ws, 1))
    assert (ws / "solution" / "up").is_symlink() and (ws / "through.txt").read_text() == "t"
    again = agent.run(_request(ws, 0))  # a repeated round replays the same line
    assert again.final_message == "first 2x"
    assert agent.run(_request(ws, 2)).status is AgentStatus.exhausted


@pytest.mark.parametrize(("text", "message"), [
    ("not json\n", "c.jsonl:1: not JSON"),
    ('{"claim": 3}\n', "c.jsonl:1: claim"),
    ('{"claim": "x"}\n{"claim": "y", "filez": {}}\n', "c.jsonl:2: filez"),
    ('{"files": {}}\n', "c.jsonl:1: claim"),
])
def test_bad_campaign_lines_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(text)
    with pytest.raises(BadInput) as info:
        load_campaign(path)
    assert message in str(info.value)


def test_missing_campaign_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="replay campaign not found"):
        get_agent(f"replay:{tmp_path / 'nope.jsonl'}")


def test_shipped_demo_campaign_is_valid(examples_dir: Path) -> None:
    steps = load_campaign(examples_dir / "campaigns" / "rmsnorm.jsonl")
    writes = [path for step in steps for path in step.files]
    assert "../sealed/definition.json" in writes and "../.git/hooks/pre-commit" in writes
    tunable = [s for s in steps if s.goal == "tunables"]
    assert len(tunable) == 1 and '"tunables"' in tunable[0].files["solution.json"]
    assert "${ROWS}" in tunable[0].files["main.py"]
