"""End to end on the CPU through the REAL verifier: every gate path on the tiny rowscale task."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kloop.loop.seal import hash_tree
from kloop.loop.stopping import Outcome, RunStatus
from tests.loop.helpers import VECTORIZED, make_campaign, real_verifier

CACHED = """import torch

_OUT = {}


def run(x, w):
    key = (x.data_ptr(), w.data_ptr())
    if key not in _OUT:
        _OUT[key] = x * w
    return _OUT[key]
"""
READS_SEALED = """import json
import torch


def run(x, w):
    json.load(open("../sealed/definition.json"))
    return x * w
"""
ROW_LOOP = """import torch


def run(x, w):
    y = torch.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = x[i] * w
    return y
"""
WRONG = "import torch\n\n\ndef run(x, w):\n    return x * w + 1e-2\n"


def test_every_gate_path_with_the_real_verifier(tmp_path: Path) -> None:
    lines = [
        {"claim": "vectorized the loops: about 1000x", "files": {"main.py": VECTORIZED}},
        {"claim": "cache outputs by pointer", "files": {"main.py": CACHED}},
        {"claim": "read the definition", "files": {"main.py": READS_SEALED}},
        {"claim": "row loop", "files": {"main.py": ROW_LOOP}},
        {"claim": "drop a git hook", "files": {"../.git/hooks/post-commit": "#!/bin/sh\ntouch /tmp/owned\n"}},
        {"claim": "link to sealed", "symlinks": {"up": "../../sealed"}, "files": {"main.py": VECTORIZED + "\n"}},
        {"claim": "make the workloads easy", "files": {"../sealed/workloads.jsonl": "\n"}},
        {"claim": "off by a little", "files": {"main.py": WRONG}},
    ]
    campaign = make_campaign(tmp_path, lines, verifier=real_verifier(), replan_after=20)
    run = tmp_path / "run"
    sealed_before = hash_tree(run / "sealed")
    summary = campaign.run()

    by_round = {r.round: r for r in summary.rounds}
    reasons = {n: " | ".join(r.reasons) for n, r in by_round.items()}
    assert [r.round for r in summary.rounds if r.accepted] == [1], reasons
    assert by_round[1].verify_status == "PASSED" and (by_round[1].speedup_geomean or 0) > 5
    assert "caches results across calls" in reasons[2] or by_round[2].verify_status != "PASSED"
    assert "reads task files or sealed/" in reasons[3]
    assert by_round[4].verify_status == "PASSED" and "does not clear the current best" in reasons[4]
    assert "paths:" in reasons[5] and ".git/hooks" in reasons[5] and by_round[5].verify_status is None
    assert "symlink solution/up" in reasons[6]
    assert "integrity: sealed/workloads.jsonl was modified" in reasons[7]
    assert by_round[8].verify_status == "INCORRECT_NUMERICAL"
    assert summary.outcome is Outcome.improvement and summary.status is RunStatus.completed
    assert summary.best.candidate == "r001"
    assert hash_tree(run / "sealed") == sealed_before
    assert not (run / "workspace" / ".git" / "hooks" / "post-commit").exists()
    assert (run / "workspace" / "solution" / "main.py").read_text() == VECTORIZED


CHUNKED = """import torch


def run(x, w):
    y = torch.empty_like(x)
    step = ${CHUNK}
    for i in range(0, x.shape[0], step):
        y[i:i + step] = x[i:i + step] * w
    return y
"""


def _tunable_meta() -> str:
    import json

    meta = json.loads((Path(__file__).parent / "tasks" / "rowscale" / "baseline" / "solution.json").read_text())
    meta["name"] = "rowscale-chunked"
    meta["kloop"] = {"tunables": {"CHUNK": [4, 1, 64]}}
    return json.dumps(meta, indent=2)


@pytest.mark.slow
def test_tune_stage_searches_declared_tunables(tmp_path: Path) -> None:
    from kloop.loop.config import Stage

    lines = [
        {"claim": "one row at a time", "files": {"main.py": ROW_LOOP}},
        {"claim": "chunked rows, chunk size tunable", "goal": "tunables",
         "files": {"main.py": CHUNKED, "solution.json": _tunable_meta()}},
    ]
    campaign = make_campaign(tmp_path, lines, verifier=real_verifier(), stages=[Stage.iterate, Stage.tune])
    summary = campaign.run()
    reasons = {r.round: r.reasons for r in summary.rounds}
    assert [r.stage for r in summary.rounds] == ["iterate", "iterate", "tune", "tune"], reasons
    assert summary.rounds[0].accepted and summary.rounds[1].accepted, reasons
    assert {r.parent for r in summary.rounds[2:]} == {"r002"}
    records = {r.round: r for r in campaign.lineage.rounds()}
    assert [records[n].config for n in (3, 4)] == [{"CHUNK": 1}, {"CHUNK": 64}]  # CHUNK=4 was r002 itself
    assert summary.best.candidate == "r004", reasons
    assert "y[i:i + step]" in (tmp_path / "run" / "workspace" / "solution" / "main.py").read_text()
    assert "step = 64" in (tmp_path / "run" / "workspace" / "solution" / "main.py").read_text()


def test_speed_of_light_stop_uses_the_device_ceiling(tmp_path: Path) -> None:
    from kloop.loop.ceiling import DeviceCeiling

    lines = [{"claim": "vectorized", "files": {"main.py": VECTORIZED}}, {"claim": "never played", "files": {}}]
    campaign = make_campaign(tmp_path, lines, verifier=real_verifier(), sol_fraction=1e-9)
    campaign.services.ceiling = DeviceCeiling("cpu")
    summary = campaign.run()
    assert summary.status is RunStatus.speed_of_light, summary.reason
    assert len(summary.rounds) == 1 and "of the device's speed of light" in summary.reason
    fraction, parts = campaign.lineage.meta("best_sol_fraction"), campaign.lineage.meta("best_sol_fractions")
    assert 0 < fraction < 1 and parts and all(0 < f < 1 for f in parts.values())
    assert math.isclose(math.exp(sum(math.log(f) for f in parts.values()) / len(parts)), fraction)
    # the report shows the fractions the run measured, per workload, without detecting a device
    from kloop.report.data import load_run
    from kloop.report.series import sol_fractions

    data = load_run(tmp_path / "run")
    best = data.by_candidate(summary.best.candidate)
    assert best is not None
    assert sol_fractions(data, best) == pytest.approx(parts)


@pytest.mark.slow
def test_the_demo_campaign_through_the_cli(tmp_path: Path, examples_dir: Path) -> None:
    """What scripts/demo.sh runs: every gate path on the shipped rmsnorm example, then the tuner."""
    import json
    import subprocess
    import sys

    run = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "kloop.cli", "run", str(examples_dir / "rmsnorm"), "--writer",
         f"replay:{examples_dir / 'campaigns' / 'rmsnorm.jsonl'}", "--reviewer", "rules",
         "--stages", "research,iterate,tune", "--device", "cpu", "--out", str(run)],
        capture_output=True, text=True, timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr
    assert "best:" in proc.stdout and "report:" in proc.stdout
    summary = json.loads((run / "summary.json").read_text())
    rounds = {r["round"]: r for r in summary["rounds"]}
    assert rounds[1]["accepted"] and rounds[6]["accepted"], rounds
    assert "reviewer: rejected" in " ".join(rounds[2]["reasons"])
    assert not rounds[3]["accepted"] and rounds[3]["verify_status"] == "PASSED"
    assert any(r.startswith("integrity:") for r in rounds[4]["reasons"])
    assert any(r.startswith("paths:") for r in rounds[5]["reasons"])
    assert [r["stage"] for r in summary["rounds"][6:]] == ["tune", "tune"]
    assert summary["outcome"] == "improvement" and summary["best"]["speedup_geomean"] > 1.5
    report = (run / "report.html").read_text()
    assert "tokens=1</td>" in report and "tokens=256</td>" in report  # per-workload shapes of the best
