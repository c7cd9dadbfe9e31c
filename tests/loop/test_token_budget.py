"""The run's token budget and what summary.json, the report and `kloop status` say was spent.

Real parts: kloop's `openai:` agent (the cheapest real adapter) through the real per-call
gateway, against the scripted model server; the real SQLite lineage; `kloop run` as a process
where the flag and `--resume` are tested. Each scripted model call reports 120 input and 30
output tokens: 150 tokens, $0.00081 at the gateway's default price ($3 / $15 per 1M).

A writer call here makes two model requests (a tool call, then its claim): 300 tokens.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from kloop.agents.doctor import scripted_verdict
from kloop.agents.openai_agent import OpenAIAgent
from kloop.agents.registry import get_agent
from kloop.agents.scripted_server import ScriptedServer, Step, call, text
from kloop.agents.tuner import TunerAgent
from kloop.loop.approval import status_report
from kloop.loop.campaign import Campaign, Services
from kloop.loop.config import RunConfig, Stage
from kloop.loop.stopping import RunStatus
from kloop.loop.team import TeamCampaign
from kloop.loop.verifier import FakeVerifier
from tests.loop.helpers import ROWSCALE, lineage_rows
from tests.loop.test_resume import kloop

pytestmark = pytest.mark.timeout(400)
PER_CALL_TOKENS = 150
PER_CALL_USD = 0.00081
WRITER_STEPS: list[Step] = [call("write_file", path="solution/stamp.txt", content="stamp\n"), text("stamped")]
VERDICT = {"decision": "accept", "progress": "advanced", "findings": [], "summary": "fine"}


def _openai(srv: ScriptedServer) -> OpenAIAgent:
    return OpenAIAgent("scripted-model", base_url=srv.base_url + "/v1", api_key="sk-real")


def _rows(run: Path) -> list[dict[str, Any]]:
    return lineage_rows(run, "round, branch, tokens, review_tokens, cost_usd, review_cost_usd")


def test_the_budget_flag_reads_tokens_beside_time_and_dollars() -> None:
    # imported here, not above: the other tests of this file still run (and fail) on an older kloop
    from kloop.loop.config import parse_budgets

    assert parse_budgets("30m,$5,200k tokens") == (1800.0, 5.0, 200_000)
    assert parse_budgets("2Mtok").tokens == 2_000_000 and parse_budgets("1500 tokens").tokens == 1500
    assert parse_budgets("90s").tokens is None


@pytest.mark.parametrize(("budget", "requests", "rounds"), [(200, 2, 1), (400, 3, 2)])
def test_a_token_budget_stops_the_run_after_the_call_that_crossed_it(budget: int, requests: int, rounds: int,
                                                                      tmp_path: Path) -> None:
    """200 tokens: the first writer call's second request crosses it (300), the round is rejected as
    over budget and nothing more reaches the model. 400 tokens: round 1 spends 300, round 2's writer
    gets the 100 left, its first request spends 150 and the gateway refuses its second. Before, a run
    had no token budget: the writer was called until the run stalled (12 requests)."""
    with ScriptedServer(WRITER_STEPS) as srv:
        cfg = RunConfig(task=str(ROWSCALE), writer="openai:scripted-model", reviewer="rules", stages=[Stage.iterate],
                        device="cpu", token_limit=budget, agent_time_limit_s=120)  # fmt: skip
        services = Services(writer=_openai(srv), reviewer=get_agent("rules"), tuner=TunerAgent(),
                            verifier=FakeVerifier())
        summary = Campaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    spent = requests * PER_CALL_TOKENS
    assert summary.status is RunStatus.budget, (summary.status, summary.reason)
    assert summary.reason == f"token budget used: {spent} of {budget} tokens"
    assert len(srv.model_calls()) == requests  # nothing past the crossing reached the model
    assert len(summary.rounds) == rounds and not summary.rounds[-1].accepted
    assert any("over_budget" in r for r in summary.rounds[-1].reasons), summary.rounds[-1].reasons
    assert summary.spent.tokens == spent == sum(r["tokens"] for r in _rows(tmp_path / "run"))


def test_the_reviewer_gets_what_the_writer_left(tmp_path: Path) -> None:
    """450 tokens: the writer's call spends 300, so the round's reviewer is given 150. Its first
    request spends them and the gateway refuses its second: the review is over budget, the round is
    rejected for it, and the run stops at 450 with one reviewer request at the model. Before, the
    reviewer's call had no token limit."""
    with ScriptedServer(WRITER_STEPS) as wsrv, ScriptedServer(scripted_verdict("openai", VERDICT)) as rsrv:
        cfg = RunConfig(task=str(ROWSCALE), writer="openai:scripted-model", reviewer="openai:scripted-model",
                        stages=[Stage.iterate], device="cpu", token_limit=450, agent_time_limit_s=120)  # fmt: skip
        services = Services(writer=_openai(wsrv), reviewer=_openai(rsrv), tuner=TunerAgent(), verifier=FakeVerifier())
        summary = Campaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    assert summary.status is RunStatus.budget and summary.reason == "token budget used: 450 of 450 tokens"
    assert (len(wsrv.model_calls()), len(rsrv.model_calls())) == (2, 1)
    assert len(summary.rounds) == 1 and not summary.rounds[0].accepted
    assert any(r.startswith("reviewer") and "over_budget" in r and "token budget spent (150 of 150)" in r
               for r in summary.rounds[0].reasons), summary.rounds[0].reasons
    assert (summary.spent.writer.tokens, summary.spent.reviewer.tokens) == (300, 150)


def test_the_summary_totals_are_the_lineage_rows_and_what_the_model_server_counted(tmp_path: Path) -> None:
    """Writer, reviewer and researcher each talk to their own scripted server, so each part of
    summary.json's `spent` can be checked against the requests that server answered, and against the
    lineage (rows and research meta). Before, summary.json had no spending at all."""
    plan = [call("write_file", path="notes/plan.md", content="# plan\n\nvectorize the row loop\n"), text("planned")]
    with ScriptedServer(WRITER_STEPS) as wsrv, ScriptedServer(scripted_verdict("openai", VERDICT)) as rsrv, \
            ScriptedServer(plan) as psrv:
        cfg = RunConfig(task=str(ROWSCALE), writer="openai:scripted-model", reviewer="openai:scripted-model",
                        stages=[Stage.research, Stage.iterate], device="cpu", rounds=2, agent_time_limit_s=120,
                        token_limit=100_000, cost_limit_usd=5.0)  # fmt: skip
        services = Services(writer=_openai(wsrv), reviewer=_openai(rsrv), tuner=TunerAgent(), verifier=FakeVerifier(),
                            researcher=_openai(psrv))  # fmt: skip
        Campaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    run = tmp_path / "run"
    spent = json.loads((run / "summary.json").read_text())["spent"]
    rows = _rows(run)
    db = sqlite3.connect(run / "lineage.sqlite")
    meta = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
    db.close()
    calls = {"writer": len(wsrv.model_calls()), "reviewer": len(rsrv.model_calls()), "research": len(psrv.model_calls())}
    assert calls == {"writer": 4, "reviewer": 4, "research": 2}, calls  # two rounds, each reviewed; one plan
    lineage = {"writer": (sum(r["tokens"] - r["review_tokens"] for r in rows),
                          sum(r["cost_usd"] - r["review_cost_usd"] for r in rows)),
               "reviewer": (sum(r["review_tokens"] for r in rows), sum(r["review_cost_usd"] for r in rows)),
               "research": (meta["research_tokens"], meta["research_cost_usd"])}
    for part, n in calls.items():
        assert spent[part]["tokens"] == lineage[part][0] == n * PER_CALL_TOKENS, (part, spent, rows)
        assert spent[part]["usd"] == pytest.approx(lineage[part][1]) == pytest.approx(n * PER_CALL_USD)
    assert spent["tokens"] == sum(calls.values()) * PER_CALL_TOKENS
    assert spent["usd"] == pytest.approx(sum(calls.values()) * PER_CALL_USD)
    assert "branches" not in spent  # a single run's summary keeps its shape
    report = (run / "report.html").read_text()
    assert f"{spent['tokens']:,} tokens" in report and f"${spent['usd']:.4f}" in report
    status = json.loads(status_report(run, as_json=True))
    assert status["spent"] == spent
    assert f"{spent['tokens']:,} tokens" in status_report(run, as_json=False)


def test_a_team_splits_the_token_budget_and_the_summary_shows_each_branchs_spending(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--team 2` under 500 tokens: each branch gets 250; its first writer call spends 300 (two
    requests, the second let through at 150), so each branch does one round and ends on its own
    budget. Before, branches had no token share and summary.json no per-branch spending."""
    with ScriptedServer(WRITER_STEPS) as srv:
        monkeypatch.setenv("KLOOP_OPENAI_BASE_URL", srv.base_url + "/v1")  # each branch's writer from its spec
        monkeypatch.setenv("KLOOP_OPENAI_API_KEY", "sk-real")
        cfg = RunConfig(task=str(ROWSCALE), writer="openai:scripted-model", reviewer="rules", stages=[Stage.iterate],
                        device="cpu", rounds=8, team=2, token_limit=500, agent_time_limit_s=120)  # fmt: skip
        services = Services(writer=get_agent(cfg.writer), reviewer=get_agent("rules"), tuner=TunerAgent(),
                            verifier=FakeVerifier())
        summary = TeamCampaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    assert summary.status is RunStatus.budget, (summary.status, summary.reason)
    assert len(srv.model_calls()) == 4 and len(summary.rounds) == 2
    assert summary.branches is not None and all(b.status == "budget" for b in summary.branches), summary.branches
    spent = json.loads((tmp_path / "run" / "summary.json").read_text())["spent"]
    rows = _rows(tmp_path / "run")
    for name in ("b1", "b2"):
        assert spent["branches"][name]["tokens"] == sum(r["tokens"] for r in rows if r["branch"] == name) == 300
        assert spent["branches"][name]["writer"]["usd"] == pytest.approx(2 * PER_CALL_USD)
    assert spent["tokens"] == 4 * PER_CALL_TOKENS
    assert json.loads(status_report(tmp_path / "run", as_json=True))["spent"] == spent  # status reads plain rows
    assert "b1" in (tmp_path / "run" / "report.html").read_text().split('id="spent"', 1)[1]


def test_the_flag_and_resume_keep_the_token_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kloop run --budget '200 tokens'`, killed (kill -9) after round 1's lineage row, then
    `--resume`: round 2's writer gets the 50 tokens left (its one request spends 150: over budget)
    and the run stops as `budget` at 300 tokens, two model requests in all. A count kept only in
    memory would give round 2 the whole 200 and ask the model a third time. The writer answers
    without changing anything, so no round is verified."""
    run = tmp_path / "run"
    with ScriptedServer([text("no change this time")]) as srv:
        monkeypatch.setenv("KLOOP_OPENAI_BASE_URL", srv.base_url + "/v1")
        monkeypatch.setenv("KLOOP_OPENAI_API_KEY", "sk-real")
        first = kloop("run", str(ROWSCALE), "--writer", "openai:scripted-model", "--reviewer", "rules",
                      "--stages", "iterate", "--device", "cpu", "--budget", "200 tokens", "--out", str(run),
                      crash_at="after_lineage:1")
        assert first.returncode != 0 and len(srv.model_calls()) == 1, first.stderr
        assert json.loads((run / ".kloop" / "config.json").read_text())["token_limit"] == 200
        second = kloop("run", "--resume", str(run))
        assert second.returncode == 0, second.stderr
        assert len(srv.model_calls()) == 2
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "budget" and summary["reason"] == "token budget used: 300 of 200 tokens"
    assert summary["spent"]["tokens"] == 300 and summary["spent"]["writer"]["tokens"] == 300
    assert "150 tokens over the 50 token limit" in summary["rounds"][1]["reasons"][0]
    status = kloop("status", str(run))
    assert "spent: $0.0016, 300 tokens" in status.stdout, status.stdout
    bad = kloop("run", str(ROWSCALE), "--writer", "tuner", "--reviewer", "rules", "--budget", "many tokens",
                "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "--budget" in bad.stderr, bad.stderr
