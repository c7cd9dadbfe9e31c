"""`kloop bench` as a user runs it: a real subprocess over the local pool; bad input is one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.pool.conftest import FAST, RMSNORM, SILU, VECTORIZED


def kloop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "KLOOP_VERIFY_OPTIONS": json.dumps(FAST), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kloop.cli", *args], env=full, capture_output=True, text=True,
                          timeout=600)


def check_bench(proc: subprocess.CompletedProcess[str], out: Path, pool: str) -> None:
    from flashinfer_bench.data import Trace

    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads((out / "bench.json").read_text())
    assert report["pool"] == pool and len(report["pairs"]) == 2
    assert {p["task"] for p in report["pairs"]} == {"silu_and_mul_d1024", "rmsnorm_h2048"}
    assert all(p["worker"].startswith(f"{pool}:") and p["attempts"] == 1 for p in report["pairs"])
    assert proc.returncode == (0 if report["passed"] == 2 else 1)
    lines = (out / "traces.jsonl").read_text().splitlines()
    traces = [Trace.model_validate(json.loads(line)) for line in lines]  # FlashInfer-Bench's own schema
    assert {t.definition for t in traces} == {"silu_and_mul_d1024", "rmsnorm_h2048"}
    assert "kloop bench" in proc.stdout and "passed in" in proc.stdout


def test_bench_local_pool(tmp_path: Path) -> None:
    proc = kloop("bench", str(SILU), str(RMSNORM), "--solutions", str(VECTORIZED),
                 str(RMSNORM / "solutions" / "python_vectorized"), "--device", "cpu", "--slots", "2",
                 "--trace-out", str(tmp_path / "traces.jsonl"), "--json", str(tmp_path / "bench.json"))
    check_bench(proc, tmp_path, "local")


def test_bench_bad_input_is_one_line() -> None:
    wrong = kloop("bench", str(SILU), "--solutions", str(RMSNORM / "solutions" / "python_vectorized"))
    assert wrong.returncode == 2 and "no TASK given defines it" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
    missing = kloop("bench", str(SILU))
    assert missing.returncode == 2 and "--solutions SOL... is required" in missing.stderr
    cluster = kloop("bench", str(SILU), "--solutions", str(VECTORIZED), "--cluster", "nowhere")
    assert cluster.returncode == 2 and "unknown cluster" in cluster.stderr
