"""The run's token and dollar budgets, enforced by kloop's model gateway for every adapter.

The REAL CLIs (Claude Code, Codex, Kimi Code) and kloop's `openai:` agent run as writers against
the scripted model server behind the gateway. Each scripted model call reports 120 input and 30
output tokens (150 tokens, $0.00081 at the gateway's default price), so a budget of 100 tokens or
$0.0005 lets the first model call through and refuses the second. The call must end as
`over_budget` with the gateway's reason, whatever the CLI did with the 403, and nothing past the
refusal may reach the model. Inside the loop, that round is rejected with the budget as the reason
and the run stops with status `budget`, not a crash.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.agents.base import AgentRequest, AgentStatus, Role
from kloop.agents.cli_process import BUDGET_REFUSED
from kloop.agents.openai_agent import OpenAIAgent
from kloop.agents.registry import get_agent
from kloop.agents.scripted_server import ScriptedServer, text
from kloop.agents.tuner import TunerAgent
from kloop.loop.campaign import Campaign, Services
from kloop.loop.config import RunConfig, Stage
from kloop.loop.stopping import RunStatus
from kloop.loop.verifier import FakeVerifier
from tests.agents.test_confinement import SHELL, _agent, adapter_params
from tests.loop.helpers import ROWSCALE

pytestmark = pytest.mark.timeout(400)
LIMITS = {"tokens": {"token_limit": 100}, "dollars": {"cost_limit_usd": 0.0005}}
REASON = {"tokens": "token budget spent (150 of 100)", "dollars": "dollar budget spent ($0.0008 of $0.0005)"}


def _gateway_log(folder: Path) -> list[dict]:
    return [json.loads(line) for p in folder.glob("*.gateway.jsonl") for line in p.read_text().splitlines()]


@pytest.mark.parametrize("kind", sorted(LIMITS))
@pytest.mark.parametrize("name", adapter_params())
def test_the_gateway_refuses_the_model_call_past_the_budget_and_the_call_is_over_budget(
        name: str, kind: str, tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    (ws / "solution").mkdir(parents=True)
    art = tmp_path / "art"
    steps = [SHELL[name]("echo FIRST-$((6*7))"), text("SHOULD-NEVER-BE-SAID")]
    with ScriptedServer(steps) as srv:
        result = _agent(name, srv, "sk-real").run(AgentRequest(
            role=Role.writer, prompt="work", workspace=ws, time_limit_s=240, artifacts_dir=art, **LIMITS[kind]))
    log = _gateway_log(art)
    answered = [e for e in log if e.get("status") == 200]
    refused = [e for e in log if e.get("status") == 403]
    assert result.status is AgentStatus.over_budget, (result.status, result.final_message)
    assert result.final_message == f"{BUDGET_REFUSED}: {REASON[kind]}"
    assert refused and all(e["refused"] == REASON[kind] for e in refused), log
    assert len(answered) == 1 and len(srv.model_calls()) == 1  # nothing past the budget reached the model
    assert result.tokens == 150 and result.cost_usd == pytest.approx(0.00081)
    assert "SHOULD-NEVER-BE-SAID" not in (result.final_message or "")


def test_a_spent_budget_ends_the_run_as_budget_with_the_gateways_reason(tmp_path: Path) -> None:
    """`kloop run --budget '$0.0005'` with an `openai:` writer: the round whose model call the gateway
    refused is rejected for the budget, and the run stops with status `budget`."""
    steps = [SHELL["openai"]("echo FIRST"), text("SHOULD-NEVER-BE-SAID")]
    with ScriptedServer(steps) as srv:
        cfg = RunConfig(task=str(ROWSCALE), writer="openai:scripted-model", reviewer="rules", stages=[Stage.iterate],
                        device="cpu", cost_limit_usd=0.0005, agent_time_limit_s=120)  # fmt: skip
        writer = OpenAIAgent("scripted-model", base_url=srv.base_url + "/v1", api_key="sk-real")
        services = Services(writer=writer, reviewer=get_agent("rules"), tuner=TunerAgent(), verifier=FakeVerifier())
        summary = Campaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    rounds = [r for r in summary.rounds if r.round]
    assert summary.status is RunStatus.budget, summary.status
    assert len(rounds) == 1 and not rounds[0].accepted
    assert f"writer: over_budget: {BUDGET_REFUSED}: {REASON['dollars']}" in rounds[0].reasons, rounds[0].reasons
    assert len(srv.model_calls()) == 1
