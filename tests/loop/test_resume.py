"""kill -9 of a real `kloop run` at named steps, then `--resume`: nothing accepted is lost,
at most the interrupted round is repeated. The kill is a real SIGKILL sent by the process to
itself at the step named in KLOOP_TEST_CRASH_AT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.loop.helpers import FAST_VERIFY, ROWSCALE, VECTORIZED, write_campaign
from tests.loop.test_end_to_end import ROW_LOOP

LINES = [
    {"claim": "vectorized: about 1000x", "files": {"main.py": VECTORIZED}},
    {"claim": "row loop", "files": {"main.py": ROW_LOOP}},
    {"claim": "escape", "files": {"../escape.txt": "x"}},
]


def kloop(*args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KLOOP_VERIFY_OPTIONS": json.dumps(FAST_VERIFY)}
    env.pop("KLOOP_TEST_CRASH_AT", None)
    if crash_at:
        env["KLOOP_TEST_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "kloop.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def round_commits(workspace: Path) -> dict[int, int]:
    log = subprocess.run(["git", "log", "--all", "--reflog", "--format=%s"], cwd=workspace,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    counts: dict[int, int] = {}
    for subject in log:
        if subject.startswith("round ") and ":" in subject:
            number = int(subject.split()[1].rstrip(":"))
            counts[number] = counts.get(number, 0) + 1
    return counts


def crash_and_resume(tmp_path: Path, crash_at: str, stages: str = "iterate") -> dict:
    campaign = write_campaign(tmp_path / "campaign.jsonl", LINES)
    run = tmp_path / "run"
    first = kloop("run", str(ROWSCALE), "--writer", f"replay:{campaign}", "--reviewer", "rules",
                  "--stages", stages, "--device", "cpu", "--out", str(run), crash_at=crash_at)
    assert first.returncode == -signal.SIGKILL, first.stderr
    status = kloop("status", str(run))
    step, _, at_round = crash_at.partition(":")
    if step != "after_finish":
        assert f"in flight: round {at_round}" in status.stdout, status.stdout
    second = kloop("run", "--resume", str(run))
    assert second.returncode == 0, second.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert [r["round"] for r in summary["rounds"]] == [1, 2, 3]
    assert [r["accepted"] for r in summary["rounds"]] == [True, False, False]
    assert summary["best"]["candidate"] == "r001" and summary["status"] == "completed"
    assert (run / "workspace" / "solution" / "main.py").read_text() == VECTORIZED
    assert not (run / "workspace" / "escape.txt").exists()
    commits = round_commits(run / "workspace")
    repeated = [n for n, c in commits.items() if n > 0 and c > 1]
    assert len(repeated) <= 1, commits
    return summary


def test_kill_after_an_accepted_row_then_resume(tmp_path: Path) -> None:
    crash_and_resume(tmp_path, "after_lineage:1")


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", ["after_verify:1", "after_writer:2", "after_commit:3", "after_review:2", "after_finish:1"])
def test_kill_at_more_points_then_resume(tmp_path: Path, crash_at: str) -> None:
    crash_and_resume(tmp_path, crash_at)


@pytest.mark.slow
def test_kill_during_research_then_resume(tmp_path: Path) -> None:
    crash_and_resume(tmp_path, "after_writer:2", stages="research,iterate")


@pytest.mark.slow
def test_sigterm_finishes_the_round_then_stops_interrupted_and_resumes(tmp_path: Path) -> None:
    import time

    campaign = write_campaign(tmp_path / "campaign.jsonl", LINES)
    run = tmp_path / "run"
    env = {**os.environ, "KLOOP_VERIFY_OPTIONS": json.dumps(FAST_VERIFY)}
    proc = subprocess.Popen([sys.executable, "-m", "kloop.cli", "run", str(ROWSCALE), "--writer",
                             f"replay:{campaign}", "--reviewer", "rules", "--stages", "iterate", "--device", "cpu",
                             "--out", str(run)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (run / ".kloop" / "round.json").exists() and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "interrupted" and len(summary["rounds"]) == 1  # the round in flight finished
    assert kloop("run", "--resume", str(run)).returncode == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and [r["round"] for r in summary["rounds"]] == [1, 2, 3]
