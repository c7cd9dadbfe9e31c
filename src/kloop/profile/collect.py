"""`kloop profile collect`: run a profiler around one workload of a candidate, then analyze it.

The command line of each tool is built by a pure function (tested without the tool); the process
runner is passed in (`Runner`), so tests use the real `subprocess.run` on real programs and the
loop can substitute its own supervisor. Output in DIR: the tool's report, `digest.md`,
`digest.json`, `command.txt` (the exact argv) and `profiler.log` (the tool's stdout/stderr).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from kloop.errors import BadInput, HarnessFailure
from kloop.profile.driver import NVTX_RANGE


class Tool(StrEnum):
    """Profilers kloop can drive."""

    ncu = "ncu"
    rocprofv3 = "rocprofv3"
    rocprof_compute = "rocprof-compute"


#: Counters rocprofv3 collects in one pass (comma-joined, as `rocprofv3 --pmc A,B`): waves, busy
#: cycles, HBM bytes (FETCH_SIZE/WRITE_SIZE, KB), LDS instructions and bank conflicts.
# One pass; SQ_LDS_IDX_ACTIVE (not SQ_INSTS_LDS) is the denominator of the bank-conflict rate.
# Untested on hardware: whether FETCH_SIZE + WRITE_SIZE fit one pass beside the SQ counters.
ROCPROFV3_COUNTERS = (
    "SQ_WAVES", "GRBM_GUI_ACTIVE", "FETCH_SIZE", "WRITE_SIZE",
    "SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT", "SQ_BUSY_CYCLES", "SQ_WAVE_CYCLES",
)  # fmt: skip
INSTALL_HINT = {
    Tool.ncu: "install Nsight Compute (CUDA toolkit) or put `ncu` on PATH",
    Tool.rocprofv3: "install ROCm's rocprofiler-sdk or put `rocprofv3` on PATH",
    Tool.rocprof_compute: "install ROCm's rocprofiler-compute or put `rocprof-compute` on PATH",
}
REPORT_NAME = "profile"
Runner = Callable[[list[str], Path], subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class CollectPlan:
    """Everything `collect` will run and where the report will appear."""

    tool: Tool
    argv: list[str]
    report: Path


def driver_argv(task: Path, solution: Path, *, workload: str | None, device: str, warmup: int, python: str | None = None) -> list[str]:
    """The driver process the profiler wraps."""
    argv = [python or sys.executable, "-m", "kloop.profile.driver", str(task), str(solution), "--device", device, "--warmup", str(warmup)]
    if workload is not None:
        argv += ["--workload", workload]
    return argv


def ncu_argv(executable: str, driver: list[str], out_dir: Path) -> tuple[list[str], Path]:
    """ncu: full set, source correlation, unlocked clocks, only kernels inside the candidate's NVTX range."""
    stem = out_dir / REPORT_NAME
    argv = [
        executable, "--set", "full", "--import-source", "yes", "--clock-control", "none",
        "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/", "--target-processes", "all",
        "--force-overwrite", "--export", str(stem), *driver,
    ]  # fmt: skip
    return argv, stem.with_suffix(".ncu-rep")


def rocprofv3_argv(executable: str, driver: list[str], out_dir: Path) -> tuple[list[str], Path]:
    """rocprofv3: kernel trace plus one pass of counters, CSV output."""
    folder = out_dir / "rocprofv3"
    argv = [
        executable, "--kernel-trace", "--pmc", ",".join(ROCPROFV3_COUNTERS), "--output-format", "csv",
        "--output-directory", str(folder), "--output-file", REPORT_NAME, "--", *driver,
    ]  # fmt: skip
    return argv, folder


def rocprof_compute_argv(executable: str, driver: list[str], out_dir: Path) -> tuple[list[str], Path]:
    """rocprof-compute: a named workload written under DIR/rocprof-compute."""
    folder = out_dir / "rocprof-compute"
    argv = [executable, "profile", "-n", REPORT_NAME, "--path", str(folder), "--no-roof", "--", *driver]
    return argv, folder


BUILDERS = {Tool.ncu: ncu_argv, Tool.rocprofv3: rocprofv3_argv, Tool.rocprof_compute: rocprof_compute_argv}


def find_tool(tool: Tool, which: Callable[[str], str | None] = shutil.which) -> str:
    """Path of the profiler executable, or BadInput naming the missing tool in one line."""
    path = which(tool.value)
    if path is None:
        raise BadInput(tool.value, f"profiler not found on PATH; {INSTALL_HINT[tool]}")
    return path


def plan_collect(
    tool: Tool, task: Path, solution: Path, out_dir: Path, *, workload: str | None = None,
    executable: str | None = None, python: str | None = None,
) -> CollectPlan:  # fmt: skip
    """The exact command line for `tool` around the driver."""
    device = "cuda" if tool is Tool.ncu else "rocm"
    warmup = 2 if tool is Tool.ncu else 0  # only ncu can exclude warm-up calls (NVTX filter)
    driver = driver_argv(task, solution, workload=workload, device=device, warmup=warmup, python=python)
    argv, report = BUILDERS[tool](executable or find_tool(tool), driver, out_dir)
    return CollectPlan(tool, argv, report)


def run_subprocess(argv: list[str], log: Path) -> subprocess.CompletedProcess[str]:
    """Default runner: the real process, output captured into `log`."""
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    log.write_text(f"$ {shlex.join(argv)}\n{result.stdout}\n{result.stderr}")
    return result


def _algorithmic_minimums(task: Path, workload: str | None) -> tuple[float | None, float | None]:
    from kloop.profile.driver import select_workload
    from kloop.task.load import load_task
    from kloop.task.shapes import flops_for, min_bytes_for, resolve_axes

    loaded = load_task(task)
    axes = resolve_axes(loaded.definition, select_workload(loaded, workload))
    return float(min_bytes_for(loaded.definition, axes)), flops_for(loaded.definition, axes)


def collect(
    task: Path, solution: Path, out_dir: Path, *, tool: Tool = Tool.ncu, workload: str | None = None,
    runner: Runner = run_subprocess, executable: str | None = None,
) -> Path:  # fmt: skip
    """Profile one workload, write report + digest into `out_dir`; returns the digest.md path."""
    from kloop.profile.digest import analyze, digest_json, digest_markdown
    from kloop.profile.read import read

    plan = plan_collect(tool, task, solution, out_dir, workload=workload, executable=executable)
    min_bytes, min_flops = _algorithmic_minimums(task, workload)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "command.txt").write_text(shlex.join(plan.argv) + "\n")
    result = runner(plan.argv, out_dir / "profiler.log")
    if result.returncode != 0:
        raise HarnessFailure(f"{tool.value} exited with {result.returncode}; see {out_dir / 'profiler.log'}")
    if not plan.report.exists():
        raise HarnessFailure(f"{tool.value} wrote no report at {plan.report}; see {out_dir / 'profiler.log'}")
    reports = analyze(read(_report_input(plan)), min_bytes=min_bytes, min_flops=min_flops)
    (out_dir / "digest.json").write_text(json.dumps(digest_json(reports), indent=2))
    digest = out_dir / "digest.md"
    digest.write_text(digest_markdown(reports))
    return digest


def _report_input(plan: CollectPlan) -> Path:
    """The file/folder `read` should get: rocprofv3 nests its CSVs under host/pid folders."""
    if plan.tool is Tool.rocprofv3:
        found = sorted(plan.report.rglob("*counter_collection.csv")) or sorted(plan.report.rglob("*kernel_trace.csv"))
        if not found:
            raise HarnessFailure(f"rocprofv3 wrote no counter_collection/kernel_trace CSV under {plan.report}")
        return found[0]
    return plan.report
