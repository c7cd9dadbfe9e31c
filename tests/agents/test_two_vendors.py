"""The documented default for long campaigns: a writer from one vendor, a reviewer from another.

Both come from `get_agent` with their endpoints in `KLOOP_<AGENT>_*` (as `kloop run` builds them);
Codex writes through its sandboxed shell, Claude Code reviews read-only, the real verifier judges.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.agents.doctor import scripted_verdict
from kloop.agents.registry import get_agent
from kloop.agents.scripted_server import ScriptedServer, text
from kloop.agents.tuner import TunerAgent
from kloop.loop.campaign import Campaign, Services
from kloop.loop.config import RunConfig, Stage
from tests.agents.cli_cases import CLIS
from tests.loop.helpers import ROWSCALE, VECTORIZED, real_verifier

pytestmark = pytest.mark.timeout(500)
INSTALLED = {c.name: c for c in CLIS if c.installed()}


@pytest.mark.skipif(not {"codex", "claude"} <= set(INSTALLED), reason="codex or claude CLI missing")
def test_codex_writes_claude_reviews_the_loop_decides(tmp_path: Path, monkeypatch) -> None:
    run_dir = tmp_path / "run"
    target = run_dir / "workspace" / "solution" / "main.py"
    verdict = {"decision": "accept", "progress": "advanced", "findings": [], "summary": "one multiply"}
    writer_steps = [*INSTALLED["codex"].write(target, VECTORIZED), text("Vectorized: expect 100x.")]
    with ScriptedServer(writer_steps) as codex_model, ScriptedServer(scripted_verdict("claude", verdict)) as claude_model:
        monkeypatch.setenv("KLOOP_CODEX_BASE_URL", codex_model.base_url + "/v1")
        monkeypatch.setenv("KLOOP_CODEX_API_KEY", "scripted")
        monkeypatch.setenv("KLOOP_CODEX_MODEL", "scripted-model")
        monkeypatch.setenv("KLOOP_CLAUDE_BASE_URL", claude_model.base_url)
        monkeypatch.setenv("KLOOP_CLAUDE_API_KEY", "scripted")
        cfg = RunConfig(task=str(ROWSCALE), writer="codex", reviewer="claude", stages=[Stage.iterate],
                        device="cpu", rounds=1, agent_time_limit_s=300)
        services = Services(writer=get_agent("codex"), reviewer=get_agent("claude"), tuner=TunerAgent(),
                            verifier=real_verifier())
        summary = Campaign.create(ROWSCALE, run_dir, cfg, services).run()
    first = summary.rounds[0]
    assert first.verify_status == "PASSED", first.reasons
    assert first.review_decision == "accept", first.reasons
    assert first.accepted or [r.split(":")[0] for r in first.reasons] == ["speed"], first.reasons
    review_prompt = json.dumps(claude_model.model_calls()[0].body["messages"])
    assert "Vectorized: expect 100x." in review_prompt  # the writer's claim reached the reviewer
    assert codex_model.model_calls("responses") and not codex_model.model_calls("anthropic")
