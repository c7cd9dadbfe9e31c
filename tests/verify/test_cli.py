"""`kloop verify` as a user runs it: real subprocesses, exit codes, JSON contract, FIB traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TASK = HERE / "tasks" / "rmsnorm_tiny"
REDTEAM = HERE / "redteam"
FAST = ["--device", "cpu", "--heldout", "1", "--iterations", "5", "--rounds", "2", "--timeout", "20"]
CONTRACT_KEYS = {"status", "reasons", "task", "solution", "device", "checks", "workloads", "summary", "environment"}
WORKLOAD_KEYS = {"uuid", "axes", "heldout", "status", "max_abs_error", "max_rel_error", "latency_ms",
                 "latency_ci_ms", "baseline_latency_ms", "speedup"}  # fmt: skip


def kloop(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kloop.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


def test_passing_solution_exit_0_json_contract_and_fib_traces(tmp_path: Path) -> None:
    out, traces = tmp_path / "v.json", tmp_path / "t.jsonl"
    proc = kloop("verify", TASK, REDTEAM / "honest_dps", *FAST, "--json", out, "--trace-out", traces,
                 "--log-dir", tmp_path / "logs")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert set(data) >= CONTRACT_KEYS
    assert data["status"] == "PASSED" and data["task"] == "rmsnorm_tiny" and data["device"] == "cpu"
    assert all(set(c) == {"name", "passed", "detail"} for c in data["checks"])
    names = {c["name"] for c in data["checks"]}
    assert {"shape", "dtype", "exact_type", "finite", "outputs_written", "numeric", "inputs_unmodified",
            "determinism", "timed_outputs", "heldout", "physics_floor", "wall_clock", "integrity"} <= names  # fmt: skip
    for w in data["workloads"]:
        assert set(w) >= WORKLOAD_KEYS
    timed = [w for w in data["workloads"] if not w["heldout"]]
    assert timed and all(w["latency_ms"] > 0 and w["baseline_latency_ms"] > 0 for w in timed)
    assert all(w["latency_ci_ms"][0] <= w["latency_ms"] <= w["latency_ci_ms"][1] for w in timed)
    assert any(w["heldout"] for w in data["workloads"])
    summary = data["summary"]
    assert summary["speedup_geomean"] > 0 and summary["speedup_ci"][0] <= summary["speedup_geomean"] <= summary["speedup_ci"][1]
    assert "PASSED" in proc.stdout and "speedup" in proc.stdout

    from flashinfer_bench.data import EvaluationStatus, Trace

    lines = traces.read_text().splitlines()
    assert len(lines) == len(data["workloads"])
    parsed = [Trace.model_validate_json(line) for line in lines]
    assert all(t.evaluation.status == EvaluationStatus.PASSED for t in parsed)
    # held-out and input-coverage workloads are judged for correctness only, never timed
    assert all(t.evaluation.performance.latency_ms > 0 for t in parsed
               if not t.workload.uuid.startswith(("heldout", "coverage")))  # fmt: skip


def test_rejected_solution_exit_1_and_trace_says_runtime_error(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    proc = kloop("verify", TASK, REDTEAM / "attack_mutate_inputs", *FAST, "--no-timing", "--json", "-",
                 "--trace-out", traces)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "REJECTED"
    assert any(r.startswith("inputs_unmodified:") for r in data["reasons"])
    from flashinfer_bench.data import EvaluationStatus, Trace

    parsed = [Trace.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert parsed and all(t.evaluation.status == EvaluationStatus.RUNTIME_ERROR for t in parsed)
    assert all("REJECTED" in t.evaluation.log and "inputs_unmodified" in t.evaluation.log for t in parsed)


def test_incorrect_numerical_trace_carries_correctness(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    proc = kloop("verify", TASK, REDTEAM / "attack_low_precision", *FAST, "--no-timing", "--trace-out", traces)
    assert proc.returncode == 1
    from flashinfer_bench.data import EvaluationStatus, Trace

    parsed = [Trace.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert all(t.evaluation.status == EvaluationStatus.INCORRECT_NUMERICAL for t in parsed)
    assert all(t.evaluation.correctness.max_absolute_error > 1e-4 for t in parsed)


def test_compile_error_exports_one_trace_per_listed_workload(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    proc = kloop("verify", TASK, REDTEAM / "broken_import", *FAST, "--trace-out", traces)
    assert proc.returncode == 1
    from flashinfer_bench.data import EvaluationStatus, Trace

    parsed = [Trace.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert len(parsed) == 2 and all(t.evaluation.status == EvaluationStatus.COMPILE_ERROR for t in parsed)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["verify", HERE / "tasks" / "missing", REDTEAM / "honest_dps"], "missing"),
        (["verify", TASK, REDTEAM / "no_such_solution"], "no_such_solution"),
        (["verify", TASK, TASK / "definition.json"], "definition.json"),  # not a solution
        (["verify", TASK, REDTEAM / "honest_dps", "--workloads", "zero"], "--workloads"),
        (["verify", TASK, REDTEAM / "honest_dps", "--device", "tpu"], "--device"),
        (["verify", TASK, REDTEAM / "honest_dps", "--manifest", TASK / "workloads.jsonl"], "manifest"),
        (["verify", TASK, REDTEAM / "honest_dps", "--seed-secret"], "KLOOP_SEED_SECRET"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str | Path], fragment: str) -> None:
    proc = kloop(*args, env={"KLOOP_SEED_SECRET": "", "KLOOP_SEED_SECRET_FILE": ""})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in proc.stderr


def test_seed_secret_reproduces_the_same_heldout_draw(tmp_path: Path) -> None:
    env = {"KLOOP_SEED_SECRET": "correct horse battery staple"}
    runs = []
    for i in range(2):
        out = tmp_path / f"{i}.json"
        proc = kloop("verify", TASK, REDTEAM / "honest_value", *FAST, "--no-timing", "--seed-secret", "--json", out,
                     env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert env["KLOOP_SEED_SECRET"] not in proc.stdout + proc.stderr + out.read_text()
        runs.append(json.loads(out.read_text()))
    first, second = ([w["axes"] for w in r["workloads"] if w["heldout"]] for r in runs)
    assert first == second
    errors = [[w["max_abs_error"] for w in r["workloads"]] for r in runs]
    assert errors[0] == errors[1]  # same inputs, same deterministic solution


def test_integrity_manifest_mismatch_is_rejected(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"definition.json": "0" * 64, "workloads.jsonl": "1" * 64}))
    proc = kloop("verify", TASK, REDTEAM / "honest_dps", *FAST, "--no-timing", "--manifest", manifest, "--json", "-")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["status"] == "REJECTED" and any(r.startswith("integrity:") for r in data["reasons"])


def test_fib_root_and_definition_name(shared_fixtures: Path, tmp_path: Path) -> None:
    root = shared_fixtures / "flashinfer-trace"
    traces = tmp_path / "t.jsonl"
    proc = kloop("verify", "gemm_n4096_k4096", root / "solutions" / "example_agent_solution.json", "--fib-root", root,
                 "--device", "cpu", "--workloads", "2", "--json", "-", "--trace-out", traces)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "COMPILE_ERROR" and data["task"] == "gemm_n4096_k4096"
    assert data["solution"] == "example_agent_solution"
    from flashinfer_bench.data import EvaluationStatus, Trace

    parsed = [Trace.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert len(parsed) == 2 and all(t.evaluation.status == EvaluationStatus.COMPILE_ERROR for t in parsed)
    missing = kloop("verify", "no_such_definition", root / "solutions" / "example_agent_solution.json", "--fib-root", root)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_sandbox_that_cannot_start_is_a_harness_failure_exit_3(tmp_path: Path) -> None:
    # 64 MB of address space is too little for the sandbox to import torch: no candidate code ran,
    # so this is kloop failing to judge, not the candidate failing.
    proc = kloop("verify", TASK, REDTEAM / "honest_dps", "--device", "cpu", "--memory-mb", "64", "--log-dir", tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sandbox did not start" in lines[0]
