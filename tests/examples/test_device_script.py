"""bench/device_check.sh: valid bash, and the command lines it runs on NVIDIA and on AMD (MI300X /
MI355X) are the ones kloop's collectors expect. The script's PRINT=1 mode prints every command
(`CMD NAME ARGV...`) without running any, so these tests read the real lines the device runs."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kloop.profile.collect import ROCPROFV3_COUNTERS, Tool, ncu_argv, rocprof_compute_argv, rocprofv3_argv

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "device_check.sh"
CONTEST_TASKS = 5


def _commands(vendor: str, tmp_path: Path, steps: str | None = None) -> dict[str, list[str]]:
    env = {**os.environ, "PRINT": "1", "VENDOR": vendor, "OUT": str(tmp_path / "out")}
    if steps:
        env["STEPS"] = steps
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    commands = {}
    for line in proc.stdout.splitlines():
        if line.startswith("CMD "):
            _, name, rest = line.split(" ", 2)
            commands[name] = shlex.split(rest) if not rest.startswith("bash -c ") else ["bash", "-c", rest[8:]]
    return commands


def test_script_is_valid_bash() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_default_steps_cover_the_issue(vendor: str, tmp_path: Path) -> None:
    names = list(_commands(vendor, tmp_path))
    contest = [n for n in names if n.startswith("contest_")]
    assert len(contest) == CONTEST_TASKS and all(n.endswith("_baseline") for n in contest)
    assert {"env", "ladder", "gpu_redteam", "profile_diff", "tune"} <= set(names)
    assert not {"verify_cuda", "gpu_loop"} & set(names)  # the older steps only with STEPS=all
    everything = _commands(vendor, tmp_path, "all")
    assert {"verify_cuda", "gpu_loop"} <= set(everything) and len([n for n in everything if n.startswith("contest_")]) == 2 * CONTEST_TASKS


def test_amd_commands_match_kloops_rocprof_collectors(tmp_path: Path) -> None:
    cmds = _commands("amd", tmp_path)
    env = cmds["env"][2]
    for tool in ("rocm-smi", "hipcc --version", "rocprofv3 --version", "rocprof-compute --version", "torch.version.hip"):
        assert tool in env
    tools = {}
    for name, argv in cmds.items():
        if name.startswith("profile_") and "collect" in argv:
            tool = argv[argv.index("--tool") + 1]
            tools[tool] = argv[argv.index("-o") + 1]
            assert Tool(tool) in (Tool.rocprofv3, Tool.rocprof_compute)
            assert argv[argv.index("collect") + 1] == "examples/rmsnorm_bf16"
    assert set(tools) == {"rocprofv3", "rocprof-compute"}
    # analyze reads exactly the folder kloop's rocprofv3 collector says its report is in
    diff = cmds["profile_diff"]
    for role, path in (("cand", diff[diff.index("analyze") + 1]), ("base", diff[diff.index("--against") + 1])):
        out_dir = Path(path).parent
        assert out_dir.name == f"{role}_rocprofv3"
        assert rocprofv3_argv("rocprofv3", ["driver"], out_dir)[1] == Path(path)
    # and the rocprof-compute collector writes where its own -o points
    assert rocprof_compute_argv("rocprof-compute", [], Path(tools["rocprof-compute"]))[1].parent == Path(tools["rocprof-compute"])


def test_ladder_profiler_lines_agree_with_kloops_collectors() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import timing_ladder

    ncu = timing_ladder.ncu_argv("ncu", "copy_64KiB", 5)
    kloop_ncu = ncu_argv("ncu", ["driver"], Path("/tmp/x"))[0]
    assert ncu[ncu.index("--clock-control") + 1] == kloop_ncu[kloop_ncu.index("--clock-control") + 1] == "none"
    assert "gpu__time_duration.sum" in ncu and "--nvtx-include" in ncu
    roc = timing_ladder.rocprofv3_argv("rocprofv3", "copy_64KiB", 5, Path("/tmp/x"))
    kloop_roc = rocprofv3_argv("rocprofv3", ["driver"], Path("/tmp/x"))[0]
    for flag in ("--kernel-trace", "--output-format", "--output-directory", "--"):
        assert flag in roc and flag in kloop_roc
    assert roc[roc.index("--output-format") + 1] == kloop_roc[kloop_roc.index("--output-format") + 1] == "csv"
    assert ",".join(ROCPROFV3_COUNTERS) not in roc  # the ladder times kernels; counters would perturb them


def test_ladder_parses_ncu_csv_and_runs_dry(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import timing_ladder

    csv_text = ('==PROF== Connected\n"ID","Process ID","Kernel Name","gpu__time_duration.sum"\n'
                '"","","","nsecond"\n"0","1","copy","3,104"\n"1","1","copy","3200"\n')  # fmt: skip
    assert timing_ladder.parse_ncu_csv(csv_text) == [3104.0, 3200.0]
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "timing_ladder.py"), "--dry-run", "--iters", "3",
                           "--repeats", "2", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((tmp_path / "timing_ladder.json").read_text())
    assert [r["rung"] for r in rows] == list(timing_ladder.DRY_RUNGS)
    assert all(r["kloop_us"] > 0 and len(r["kloop_runs_us"]) == 2 and r["ncu_us"] is None for r in rows)
