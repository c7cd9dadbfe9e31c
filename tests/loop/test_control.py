"""Run control on the tiny task: agent faults, budgets, the plan gate, blocked runs, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from kloop.agents import AgentRequest, AgentResult, AgentStatus, Claim
from kloop.agents.registry import get_agent
from kloop.agents.tuner import TunerAgent
from kloop.loop.approval import approve, status_report
from kloop.loop.campaign import Campaign, Services
from kloop.loop.config import RunConfig, Stage
from kloop.loop.stopping import Outcome, RunStatus
from kloop.loop.verifier import FakeVerifier
from tests.loop.helpers import ROWSCALE, VECTORIZED, fake, make_campaign, real_verifier


class ScriptedWriter:
    """A scripted model: crashes, hangs, overspends, then writes an honest round."""

    def run(self, request: AgentRequest) -> AgentResult:
        if request.turn == 0:
            raise RuntimeError("model server went away")
        if request.turn == 1:
            time.sleep(3)
            return AgentResult(status=AgentStatus.completed, final_message="too late")
        if request.turn == 2:
            (request.workspace / "solution" / "FAKE_VERDICT.json").write_text(fake(2.0))
            return AgentResult(status=AgentStatus.completed, final_message="2x", claim=Claim(text="2x"))
        if request.turn == 3:
            (request.workspace / "solution" / "main.py").write_text(VECTORIZED)
            return AgentResult(status=AgentStatus.completed, final_message="spent a lot", cost_usd=9.0)
        return AgentResult(status=AgentStatus.exhausted)


def test_agent_crash_hang_and_overspend_reject_the_round_and_the_loop_goes_on(tmp_path: Path) -> None:
    cfg = RunConfig(task=str(ROWSCALE), writer="scripted", reviewer="rules", stages=[Stage.iterate],
                    agent_time_limit_s=1.0, cost_limit_usd=5.0, replan_after=10)
    services = Services(writer=ScriptedWriter(), reviewer=get_agent("rules"), tuner=TunerAgent(),
                        verifier=FakeVerifier())
    summary = Campaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    reasons = [r.reasons for r in summary.rounds]
    assert "writer: crashed: RuntimeError: model server went away" in reasons[0]
    assert reasons[1] == ["writer: timed_out: no answer within 1s"]
    assert summary.rounds[2].accepted and summary.best.candidate == "r003"
    assert reasons[3][0].startswith("writer: over_budget: cost $9.00 over the $5.00 limit")
    assert len(summary.rounds) == 4 and "cost budget used: $9.00 of $5.00" in summary.reason
    assert summary.status is RunStatus.budget  # the overspent $9 used the run's $5 budget


class SpendingReviewer:
    """A reviewer that accepts, and whose model call cost $9 (a long full review on a pricey model)."""

    def run(self, request: AgentRequest) -> AgentResult:
        from kloop.agents import Decision, ProgressMark, Verdict

        return AgentResult(status=AgentStatus.completed, final_message="ok", cost_usd=9.0,
                           verdict=Verdict(decision=Decision.accept, progress=ProgressMark.advanced, summary="ok"))


class CheapWriter:
    """An honest round for $1, then nothing more to do."""

    def run(self, request: AgentRequest) -> AgentResult:
        if request.turn == 0:
            (request.workspace / "solution" / "FAKE_VERDICT.json").write_text(fake(2.0))
            return AgentResult(status=AgentStatus.completed, final_message="2x", claim=Claim(text="2x"), cost_usd=1.0)
        return AgentResult(status=AgentStatus.exhausted)


def test_the_reviewer_spends_from_the_runs_budget(tmp_path: Path) -> None:
    """The reviewer's call gets what the budget has left after the writer's, and its cost counts.

    Before, only the writer had a limit and only its cost was recorded: a $9 review under a $5
    budget was accepted and the run reported $1 spent."""
    cfg = RunConfig(task=str(ROWSCALE), writer="scripted", reviewer="scripted", stages=[Stage.iterate],
                    cost_limit_usd=5.0, replan_after=10)
    services = Services(writer=CheapWriter(), reviewer=SpendingReviewer(), tuner=TunerAgent(), verifier=FakeVerifier())
    summary = Campaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    first = summary.rounds[0]
    assert not first.accepted and any("over_budget" in r and "$4.00 limit" in r for r in first.reasons), first.reasons
    assert summary.status is RunStatus.budget and "cost budget used: $10.00 of $5.00" in summary.reason


class PriceyResearcher:
    """Writes a plan; its model call cost $6."""

    def run(self, request: AgentRequest) -> AgentResult:
        plan = request.workspace / "notes" / "plan.md"
        plan.write_text(plan.read_text() + "\n4. Vectorize the row loop.\n")
        return AgentResult(status=AgentStatus.completed, final_message="planned", cost_usd=6.0)


def test_the_researcher_spends_from_the_runs_budget(tmp_path: Path) -> None:
    """The planning call's cost counts: a $6 plan under a $5 budget leaves nothing for rounds.

    Before, the researcher's spending was written only to researcher.json and the rounds began with
    the whole $5 still "left"."""
    cfg = RunConfig(task=str(ROWSCALE), writer="scripted", reviewer="rules", stages=[Stage.research, Stage.iterate],
                    cost_limit_usd=5.0, replan_after=10)
    services = Services(writer=CheapWriter(), reviewer=get_agent("rules"), tuner=TunerAgent(), verifier=FakeVerifier(),
                        researcher=PriceyResearcher())
    summary = Campaign.create(ROWSCALE, tmp_path / "run", cfg, services).run()
    assert summary.rounds == [] and summary.status is RunStatus.budget, summary
    assert "cost budget used: $6.00 of $5.00" in summary.reason


def test_wall_time_budget(tmp_path: Path) -> None:
    lines = [{"claim": f"{i}", "files": {"FAKE_VERDICT.json": fake(1.0 + i)}} for i in range(1, 5)]
    campaign = make_campaign(tmp_path, lines, budget_s=0.001)
    summary = campaign.run()
    assert summary.status is RunStatus.budget and "wall-time budget" in summary.reason


def test_plan_gate_pauses_until_approved(tmp_path: Path) -> None:
    lines = [{"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}}]
    campaign = make_campaign(tmp_path, lines, stages=[Stage.research, Stage.iterate], gate_plan=True)
    run = tmp_path / "run"
    summary = campaign.run()
    assert summary.status is RunStatus.awaiting_approval and summary.rounds == []
    plan = run / "workspace" / "notes" / "plan.md"
    assert "## Acceptance criteria" in plan.read_text()
    plan.write_text(plan.read_text() + "\n4. A person added this criterion.\n")
    assert "approved" in approve(run)
    campaign.lineage.close()
    services = Services(writer=get_agent(f"replay:{tmp_path / 'campaign.jsonl'}"), reviewer=get_agent("rules"),
                        tuner=TunerAgent(), verifier=FakeVerifier())
    summary = Campaign.open(run, services).run()
    assert summary.status is RunStatus.completed and summary.best.candidate == "r001"
    prompt = (run / "artifacts" / "round-001" / "prompt.md").read_text()
    assert "A person added this criterion." in prompt and "## Rules" in prompt
    assert "best: r001" in status_report(run, as_json=False)


def test_a_plan_edited_after_approval_is_not_frozen(tmp_path: Path) -> None:
    lines = [{"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}}]
    campaign = make_campaign(tmp_path, lines, stages=[Stage.research, Stage.iterate], gate_plan=True)
    run = tmp_path / "run"
    campaign.run()
    approve(run)
    plan = run / "workspace" / "notes" / "plan.md"
    plan.write_text(plan.read_text() + "\n5. Slipped in after approval.\n")
    campaign.lineage.close()
    services = Services(writer=get_agent(f"replay:{tmp_path / 'campaign.jsonl'}"), reviewer=get_agent("rules"),
                        tuner=TunerAgent(), verifier=FakeVerifier())
    summary = Campaign.open(run, services).run()
    assert summary.status is RunStatus.awaiting_approval and summary.rounds == []
    assert "changed since" in summary.reason


def test_broken_baseline_blocks_the_run(tmp_path: Path) -> None:
    import shutil

    task = tmp_path / "task"
    shutil.copytree(ROWSCALE, task)
    (task / "baseline" / "main.py").write_text("import torch\n\n\ndef run(x, w):\n    return x + w\n")
    lines = [{"claim": "2x", "files": {"main.py": VECTORIZED}}]
    summary = make_campaign(tmp_path, lines, task=task, verifier=real_verifier(),
                            stages=[Stage.research, Stage.iterate]).run()
    assert summary.status is RunStatus.blocked and summary.outcome is Outcome.blocked
    assert "baseline does not pass the verifier: INCORRECT_NUMERICAL" in summary.reason


def _kloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kloop.cli", *args], capture_output=True, text=True, timeout=120)


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    cases = [
        (["run", str(ROWSCALE), "--writer", "nope:x", "--reviewer", "rules", "--out", str(tmp_path / "a")],
         "kloop: error: --writer: unknown agent kind 'nope'"),
        (["run", str(ROWSCALE), "--writer", "replay:/no/such.jsonl", "--reviewer", "rules", "--out", str(tmp_path / "b")],
         "replay campaign not found"),
        (["run", str(ROWSCALE), "--writer", "tuner", "--reviewer", "rules", "--stages", "iterate,polish",
          "--out", str(tmp_path / "c")], "--stages: unknown stage 'polish'"),
        (["run", str(ROWSCALE), "--writer", "tuner", "--reviewer", "rules", "--budget", "soon",
          "--out", str(tmp_path / "d")], "--budget: 'soon' is not a duration"),
        (["run", "--resume", str(tmp_path)], "not a kloop run directory"),
        (["status", str(tmp_path)], "not a kloop run directory"),
    ]
    for args, message in cases:
        proc = _kloop(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_cli_status_json_of_a_finished_run(tmp_path: Path) -> None:
    lines = [{"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}}]
    make_campaign(tmp_path, lines).run()
    proc = _kloop("status", str(tmp_path / "run"), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "completed" and data["best"]["candidate"] == "r001" and data["in_flight"] is None
    (tmp_path / "run" / "report.html").unlink(missing_ok=True)
    text = _kloop("status", str(tmp_path / "run"))  # the typer-free path (kloop.cli_fast) writes the report
    assert text.returncode == 0 and "best: r001" in text.stdout, text.stderr
    assert text.stdout.rstrip().endswith(f"report: {tmp_path / 'run' / 'report.html'}"), text.stdout
    assert (tmp_path / "run" / "report.html").is_file()
    saved = tmp_path / "run" / ".kloop" / "round.json"  # the round in flight, as a crash mid-write could leave it
    for content, said in (('{"round": 2, "stage": ', "Expecting value"), ('{"round": 2}', "no stage, parent")):
        saved.write_text(content)
        for args in (("status", str(tmp_path / "run")), ("run", "--resume", str(tmp_path / "run"))):
            proc = _kloop(*args)
            assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
            assert f"{saved}: not a saved round: {said}" in proc.stderr, proc.stderr


def test_wiki_hits_reach_the_plan_and_the_prompts_fenced(tmp_path: Path) -> None:
    from kloop.loop.prompts import UNTRUSTED_CLOSE, UNTRUSTED_OPEN
    from kloop.loop.services import KernelWiki
    from kloop.wiki import WikiStore, shipped_cards

    db = tmp_path / "wiki.sqlite"
    WikiStore(db).add(shipped_cards())
    lines = [{"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}}]
    campaign = make_campaign(tmp_path, lines, stages=[Stage.research, Stage.iterate])
    campaign.services.wiki = KernelWiki(db)
    campaign.ctx.task.description += " elementwise memory bound vectorized loads coalescing"
    campaign.run()
    run = tmp_path / "run"
    plan = (run / "workspace" / "notes" / "plan.md").read_text()
    assert "## Related knowledge (wiki, untrusted excerpts)" in plan and "[card/" in plan
    assert "```untrusted-upstream-text" in plan  # upstream text fenced by render_for_agent
    prompt = (run / "artifacts" / "round-001" / "prompt.md").read_text()
    start, end = prompt.index(UNTRUSTED_OPEN), prompt.index(UNTRUSTED_CLOSE)
    assert "[card/" in prompt[start:end] and "```untrusted-upstream-text" in prompt[start:end]


class MeddlingReviewer:
    """A scripted reviewer model that edits the solution it was asked to judge."""

    def run(self, request: AgentRequest) -> AgentResult:
        from kloop.agents import Decision, ProgressMark, Verdict

        (request.workspace / "solution" / "main.py").write_text("# improved by the reviewer\n")
        verdict = Verdict(decision=Decision.accept, progress=ProgressMark.advanced, summary="looks great")
        return AgentResult(status=AgentStatus.completed, verdict=verdict)


def test_a_reviewer_that_writes_is_refused(tmp_path: Path) -> None:
    lines = [{"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}}]
    campaign = make_campaign(tmp_path, lines)
    campaign.runner.reviewer = MeddlingReviewer()
    summary = campaign.run()
    assert not summary.rounds[0].accepted
    assert summary.rounds[0].reasons == ["reviewer: the reviewer changed the workspace (it is read-only); reverted"]
    assert "reviewer" not in (tmp_path / "run" / "workspace" / "solution" / "main.py").read_text()


def test_stall_after_flag_reaches_the_saved_config() -> None:
    from kloop.loop.commands import _new_config

    config = _new_config(str(ROWSCALE), "tuner", "rules", "iterate", 20, None, None, "cpu", None, stall_after=12)
    assert config.stall_after == 12 and config.replan_after == 3
    assert _new_config(str(ROWSCALE), "tuner", "rules", "iterate", 20, None, None, "cpu", None).stall_after == 3
    proc = _kloop("run", "--help")
    assert "--stall-after" in proc.stdout
