"""The loop's parts on their own: gate, lineage, workspace, seal, budgets, summary."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kloop.agents import AgentStatus, Decision, ProgressMark, ReviewFinding, Severity, Verdict
from kloop.errors import BadInput, HarnessFailure
from kloop.loop.config import parse_budget
from kloop.loop.gate import GateInput, decide
from kloop.loop.lineage import MIGRATIONS, Lineage
from kloop.loop.record import CandidateRecord
from kloop.loop.seal import Seal
from kloop.loop.workspace import Workspace
from kloop.verify.result import Summary, VerifyResult, VerifyStatus
from tests.loop.helpers import ROWSCALE

ACCEPT = Verdict(decision=Decision.accept, progress=ProgressMark.advanced)


def _passed(speedup: float, lo: float, hi: float) -> VerifyResult:
    return VerifyResult(status=VerifyStatus.PASSED, task="t", solution="s", device="cpu",
                        summary=Summary(speedup_geomean=speedup, speedup_ci=[lo, hi]))


def _gate(**kw: object) -> list[str]:
    base: dict[str, object] = {"agent_status": AgentStatus.completed, "changed_paths": ["solution/main.py"],
                               "verify": _passed(2.0, 1.9, 2.1), "verdict": ACCEPT}
    return decide(GateInput(**{**base, **kw})).reasons  # type: ignore[arg-type]


def test_gate_conditions_each_give_a_reason() -> None:
    assert _gate() == []
    assert _gate(changed_paths=[]) == ["writer: no change to solution/ or notes/"]
    assert _gate(agent_status=AgentStatus.timed_out, agent_message="no answer")[0] == "writer: timed_out: no answer"
    assert _gate(path_violations=["created x"]) == ["paths: created x"]
    assert _gate(integrity_problems=["sealed/a was modified"]) == ["integrity: sealed/a was modified"]
    failed = VerifyResult(status=VerifyStatus.INCORRECT_NUMERICAL, reasons=["numeric: off"], task="t",
                          solution="s", device="cpu")
    assert _gate(verify=failed) == ["verify: INCORRECT_NUMERICAL: numeric: off"]
    assert "does not clear the current best 2.00x" in _gate(best_speedup=2.0)[0]  # CI lo 1.9 < 2.0
    reject = Verdict(decision=Decision.reject, progress=ProgressMark.stalled,
                     findings=[ReviewFinding(severity=Severity.high, text="caches outputs")])
    assert _gate(verdict=reject) == ["reviewer: rejected: caches outputs"]
    assert _gate(verdict=None) == ["reviewer: no verdict"]


def test_gate_non_speed_goals() -> None:
    assert _gate(best_speedup=2.0, goal="refactor") == []
    assert "declares no kloop.tunables" in _gate(best_speedup=2.0, goal="tunables")[0]
    assert _gate(best_speedup=2.0, goal="tunables", declares_tunables=True) == []
    assert "clear regression" in _gate(best_speedup=3.0, goal="refactor")[0]  # CI hi 2.1 < 0.95 * 3
    assert "not a goal kloop can check" in _gate(best_speedup=2.0, goal="prettier")[0]


def test_lineage_migrations_wal_and_rows(tmp_path: Path) -> None:
    path = tmp_path / "lineage.sqlite"
    lineage = Lineage(path)
    lineage.add(CandidateRecord(round=0, candidate="baseline", stage="research", agent_status="completed",
                                accepted=True, speedup_geomean=1.0))
    lineage.add(CandidateRecord(round=1, candidate="r001", parent="baseline", stage="iterate",
                                agent_status="completed", accepted=True, speedup_geomean=3.0,
                                workload_speedups={"w": 3.0}, findings=[{"severity": "low", "text": "ok"}]))
    lineage.add(CandidateRecord(round=2, candidate="r002", parent="r001", stage="iterate", agent_status="crashed",
                                accepted=False, reasons=["writer: crashed"]))
    lineage.close()
    again = Lineage(path)  # reopening applies nothing twice (every shipped migration, once: 2 added team branches)
    assert again.migrations() == list(range(1, len(MIGRATIONS) + 1))
    assert again.best().candidate == "r001" and again.head().candidate == "r001"
    assert again.get(2).reasons == ["writer: crashed"] and again.get(1).workload_speedups == {"w": 3.0}
    assert [r.round for r in again.rounds()] == [1, 2]
    with pytest.raises(sqlite3.IntegrityError):
        again.add(CandidateRecord(round=2, candidate="r002b", stage="iterate", agent_status="x", accepted=False))
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_workspace_sees_every_escape_and_reverts_it(tmp_path: Path) -> None:
    (tmp_path / "sealed").mkdir()
    ws = Workspace(tmp_path / "workspace")
    base = ws.create(ROWSCALE / "baseline", {})
    ws.save_git_pristine(tmp_path / "pristine-git")
    before = ws.fingerprint()
    (ws.solution / "main.py").write_text("changed")
    (ws.notes / "idea.md").write_text("fine")
    assert ws.violations(before) == []
    assert ws.changed_paths() == ["notes/idea.md", "solution/main.py"]
    (ws.root / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    with open(ws.root / ".git" / "config", "a") as handle:
        handle.write("[core]\n\thooksPath = /tmp\n")
    (ws.root / "top.txt").write_text("x")
    (ws.solution / "link").symlink_to("/etc")
    problems = "\n".join(ws.violations(before))
    for expected in (".git/hooks/pre-commit", ".git/config", "top.txt", "symlink solution/link -> /etc"):
        assert expected in problems
    ws.reset_to(base, tmp_path / "pristine-git")
    assert ws.fingerprint() == before and ws.changed_paths() == []
    assert not (ws.solution / "link").exists() and "hooksPath" not in (ws.root / ".git" / "config").read_text()


def test_seal_detects_and_restores(tmp_path: Path) -> None:
    seal = Seal(tmp_path)
    (tmp_path / ".kloop").mkdir()
    trusted = seal.create(ROWSCALE)
    assert set(trusted) == {"definition.json", "workloads.jsonl", "README.md", "baseline/main.py", "baseline/solution.json"}
    assert seal.problems(trusted) == []
    (seal.sealed / "workloads.jsonl").write_text("\n")
    (seal.sealed / "extra.py").write_text("x")
    (seal.sealed / "baseline" / "main.py").unlink()
    assert seal.problems(trusted) == ["sealed/workloads.jsonl was modified", "sealed/baseline/main.py was removed",
                                      "sealed/extra.py was added"]
    seal.restore(trusted)
    assert seal.problems(trusted) == []
    assert json.loads((seal.sealed / "manifest.json").read_text()) == trusted
    with pytest.raises(HarnessFailure, match="disagrees with the lineage DB"):
        seal.trusted({**trusted, "definition.json": "0" * 64})


def test_budget_parsing() -> None:
    assert parse_budget("1h30m") == (5400.0, None)
    assert parse_budget("90s,$2.5") == (90.0, 2.5)
    assert parse_budget("120") == (120.0, None)
    with pytest.raises(BadInput, match="--budget"):
        parse_budget("tomorrow")


def test_a_task_without_baseline_starts_from_the_reference(tmp_path: Path) -> None:
    import shutil

    from tests.loop.helpers import fake, make_campaign

    task = tmp_path / "task"
    shutil.copytree(ROWSCALE, task, ignore=shutil.ignore_patterns("baseline"))
    lines = [{"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}}]
    summary = make_campaign(tmp_path, lines, task=task).run()
    solution = tmp_path / "run" / "workspace" / "solution"
    assert (solution / "main.py").read_text() == json.loads((task / "definition.json").read_text())["reference"]
    meta = json.loads((solution / "solution.json").read_text())
    assert meta["spec"]["entry_point"] == "main.py::run" and meta["definition"] == "rowscale_d16"
    assert summary.best.candidate == "r001"


def test_a_setup_that_died_halfway_is_redone(tmp_path: Path) -> None:
    from tests.loop.helpers import fake, make_campaign

    run = tmp_path / "run"
    (run / ".kloop" / "pristine").mkdir(parents=True)  # as if kloop died while sealing
    (run / "sealed").mkdir()
    summary = make_campaign(tmp_path, [{"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}}]).run()
    assert summary.best.candidate == "r001"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mine.txt").write_text("user data")
    with pytest.raises(BadInput, match="not empty"):
        from kloop.loop.campaign import Campaign

        Campaign.create(ROWSCALE, tmp_path / "other", None, None)  # type: ignore[arg-type]
    assert (tmp_path / "other" / "mine.txt").read_text() == "user data"
