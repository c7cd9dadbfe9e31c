"""`kloop export` output loads back with FlashInfer-Bench's own `TraceSet.from_path`."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kloop.export.fib import export_run
from kloop.task.fib_import import import_fib
from kloop.task.load import load_task, reference_solution, write_solution_dir

fib_data = pytest.importorskip("flashinfer_bench.data")
DATA = Path(__file__).parents[1] / "task" / "data" / "fib"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run directory built from real parts (an imported task, a real verify.json), and its export."""
    root = tmp_path_factory.mktemp("export")
    run = root / "run"
    import_fib(DATA / "gqa_paged_decode_h32_kv8_d128_ps16.json", run / "sealed", scale=0.25)  # scalars + structure
    task = load_task(run / "sealed")
    art = run / "artifacts" / "round-001"
    candidate = reference_solution(task.definition).model_copy(update={"name": "gqa_vectorized"})
    write_solution_dir(candidate, art / "candidate")
    proc = subprocess.run([sys.executable, "-m", "kloop.cli", "verify", str(run / "sealed"), str(art / "candidate"),
                           "--heldout", "1", "--rounds", "1", "--json", str(art / "verify.json")],
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run / "summary.json").write_text(json.dumps({"best": {"round": 1}}))
    dest = root / "fib"
    export_run(run, dest)
    return run, dest


def test_every_file_validates_in_flashinfer_bench(exported: tuple[Path, Path]) -> None:
    run, dest = exported
    traces = fib_data.TraceSet.from_path(str(dest))
    name = "gqa_paged_decode_h32_kv8_d128_ps16"
    definition = traces.definitions[name]
    assert definition.inputs["sm_scale"].shape is None  # `"shape": null` survives the export
    assert [s.name for s in traces.solutions[name]] == ["gqa_vectorized_best"]
    assert traces.traces[name] and all(t.evaluation.status.value == "PASSED" for t in traces.traces[name])
    listed = {w.workload.uuid for w in traces.workloads[name]}
    verdict = json.loads((run / "artifacts" / "round-001" / "verify.json").read_text())
    assert any(w["heldout"] for w in verdict["workloads"])  # the verdict had held-out rows ...
    assert {t.workload.uuid for t in traces.traces[name]} <= listed  # ... and no trace names a workload no file holds


def test_no_placeholder_traces_and_speedup_is_reference_over_latency(exported: tuple[Path, Path]) -> None:
    _, dest = exported
    lines = [json.loads(x) for x in (dest / "traces" / "gqa_paged_decode_h32_kv8_d128_ps16.jsonl").read_text().splitlines()]
    assert lines
    for line in lines:
        perf = line["evaluation"]["performance"]
        assert perf["latency_ms"] > 0 and perf["reference_latency_ms"] > 0
        assert math.isclose(perf["speedup_factor"], perf["reference_latency_ms"] / perf["latency_ms"], rel_tol=1e-12)


def test_export_of_a_folder_fib_rejected_before_is_now_accepted(exported: tuple[Path, Path], tmp_path: Path) -> None:
    """The definition written with exclude_none loses `shape: null`; FIB then rejects the whole folder."""
    _, dest = exported
    broken = tmp_path / "broken"
    shutil.copytree(dest, broken)
    path = broken / "definitions" / "gqa_paged_decode_h32_kv8_d128_ps16.json"
    data = json.loads(path.read_text())
    for spec in data["inputs"].values():
        if spec.get("shape", []) is None:
            del spec["shape"]
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match="shape"):
        fib_data.TraceSet.from_path(str(broken))
