"""`kloop profile collect`: exact profiler command lines, missing tools, and the collect flow."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kloop.cli import main
from kloop.errors import BadInput, HarnessFailure
from kloop.profile.collect import ROCPROFV3_COUNTERS, Tool, collect, find_tool, plan_collect

TASK, SOLUTION = Path("task"), Path("sol")
DRIVER = ["/py", "-m", "kloop.profile.driver", "task", "sol"]


def test_ncu_command_line(tmp_path: Path) -> None:
    plan = plan_collect(Tool.ncu, TASK, SOLUTION, tmp_path, workload="w-1", executable="/opt/ncu", python="/py")
    assert plan.argv == [
        "/opt/ncu", "--set", "full", "--import-source", "yes", "--clock-control", "none",
        "--nvtx", "--nvtx-include", "kloop_candidate/", "--target-processes", "all",
        "--force-overwrite", "--export", str(tmp_path / "profile"),
        *DRIVER, "--device", "cuda", "--warmup", "2", "--workload", "w-1",
    ]  # fmt: skip
    assert plan.report == tmp_path / "profile.ncu-rep"


def test_rocprofv3_command_line(tmp_path: Path) -> None:
    plan = plan_collect(Tool.rocprofv3, TASK, SOLUTION, tmp_path, executable="/opt/rocprofv3", python="/py")
    assert plan.argv == [
        "/opt/rocprofv3", "--kernel-trace", "--pmc", ",".join(ROCPROFV3_COUNTERS), "--output-format", "csv",
        "--output-directory", str(tmp_path / "rocprofv3"), "--output-file", "profile", "--",
        *DRIVER, "--device", "rocm", "--warmup", "0",
    ]  # fmt: skip


def test_rocprof_compute_command_line(tmp_path: Path) -> None:
    plan = plan_collect(Tool.rocprof_compute, TASK, SOLUTION, tmp_path, executable="/opt/rpc", python="/py")
    assert plan.argv == [
        "/opt/rpc", "profile", "-n", "profile", "--path", str(tmp_path / "rocprof-compute"), "--no-roof", "--",
        *DRIVER, "--device", "rocm", "--warmup", "0",
    ]  # fmt: skip


def test_missing_tool_is_one_clear_line(capsys, monkeypatch, tmp_path: Path, examples_dir: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BadInput, match="rocprof-compute: profiler not found on PATH"):
        find_tool(Tool.rocprof_compute)
    code = main(["profile", "collect", str(examples_dir / "rmsnorm"), str(examples_dir / "rmsnorm" / "baseline"),
                 "--tool", "ncu", "-o", str(tmp_path / "out")])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2 and err == "kloop: error: ncu: profiler not found on PATH; install Nsight Compute (CUDA toolkit) or put `ncu` on PATH\n"


def test_unknown_tool(capsys, tmp_path: Path) -> None:
    code = main(["profile", "collect", "t", "s", "--tool", "nsys", "-o", str(tmp_path)])
    assert code == 2 and "unknown profiler 'nsys'" in capsys.readouterr().err


def _report_copier(source: Path):
    """Stands in for ncu at the runner boundary: writes a real report where ncu would."""

    def run(argv: list[str], log: Path) -> subprocess.CompletedProcess[str]:
        export = Path(argv[argv.index("--export") + 1])
        shutil.copy(source, export.with_suffix(".ncu-rep"))
        log.write_text("copied\n")
        return subprocess.CompletedProcess(argv, 0, "", "")

    return run


def test_collect_writes_report_digest_and_command(tmp_path: Path, examples_dir: Path, h200: Path) -> None:
    out = tmp_path / "out"
    digest = collect(examples_dir / "rmsnorm", examples_dir / "rmsnorm" / "baseline", out, tool=Tool.ncu,
                     runner=_report_copier(h200 / "copy_strided" / "report.ncu-rep"), executable="/opt/ncu")  # fmt: skip
    assert digest == out / "digest.md" and "uncoalesced_global_access" in digest.read_text()
    assert (out / "command.txt").read_text().startswith("/opt/ncu --set full")
    document = json.loads((out / "digest.json").read_text())
    # min_bytes came from the task's first workload (rmsnorm, 1 token x 2048): the copy moved far more
    evidence = {e["metric"] for f in document["kernels"][0]["findings"] for e in f["evidence"]}
    assert "min_bytes" in evidence


def test_collect_reports_profiler_failure(tmp_path: Path, examples_dir: Path) -> None:
    def failing(argv: list[str], log: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", "import sys; sys.exit(7)"], capture_output=True, text=True)

    with pytest.raises(HarnessFailure, match="exited with 7"):
        collect(examples_dir / "rmsnorm", examples_dir / "rmsnorm" / "baseline", tmp_path, runner=failing, executable="/opt/ncu")


@pytest.mark.slow
def test_driver_runs_the_candidate_on_cpu(examples_dir: Path) -> None:
    """The real driver process: build, inputs, warm-up and the profiled call (CPU, no NVTX)."""
    result = subprocess.run(
        [sys.executable, "-m", "kloop.profile.driver", str(examples_dir / "rmsnorm"), str(examples_dir / "rmsnorm" / "baseline"),
         "--device", "cpu", "--warmup", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.mark.gpu
def test_real_ncu_collect(tmp_path: Path, examples_dir: Path) -> None:
    if shutil.which("ncu") is None:
        pytest.skip("ncu not installed on this machine")
    digest = collect(examples_dir / "rmsnorm", examples_dir / "rmsnorm" / "solutions" / "python_vectorized", tmp_path)
    assert (tmp_path / "profile.ncu-rep").exists() and "**Next edit:**" in digest.read_text()
