"""Import a sample of real KernelBench problems and verify each baseline, as a new user would.

Method: read the problem files straight from a KernelBench git directory (the `fetch` tool's
bare mirror of ScalingIntelligence/KernelBench; files read with `git show`), take every STEP-th
problem of levels 1-3 (deterministic sample), run `kloop task import-kernelbench FILE -o DIR
--max-bytes N` and then `kloop verify DIR DIR/baseline --no-timing --workloads 1` (the listed
workload plus the held-out draws), each as a real subprocess with a time limit. Results are one
JSON line per problem in bench/results/kernelbench_sweep.jsonl, with the load average.

    .venv/bin/python bench/kernelbench_sweep.py --git-dir /work/.mirror/ScalingIntelligence+KernelBench/repo
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KLOOP = ROOT / ".venv" / "bin" / "kloop"


def problems(git_dir: Path, step: int, levels: list[int]) -> list[str]:
    names = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "HEAD", "KernelBench"],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    picked = []
    for level in levels:
        files = sorted((n for n in names if n.startswith(f"KernelBench/level{level}/") and n.endswith(".py")),
                       key=lambda n: int(Path(n).name.split("_")[0]))  # fmt: skip
        picked += files[::step]
    return picked


def _run(cmd: list[str], timeout: float) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "KLOOP_NO_PROGRESS": "1"})  # fmt: skip
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:g} s", time.monotonic() - t0
    last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1]
    return proc.returncode, last, time.monotonic() - t0


def sweep_one(git_dir: Path, path: str, work: Path, max_bytes: int, timeout: float) -> dict[str, object]:
    source = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{path}"], capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    file = work / Path(path).name
    file.write_text(source)
    task = work / Path(path).stem
    rc, line, seconds = _run([str(KLOOP), "task", "import-kernelbench", str(file), "-o", str(task),
                              "--max-bytes", str(max_bytes)], timeout)  # fmt: skip
    row: dict[str, object] = {"problem": path, "import_rc": rc, "import_s": round(seconds, 1), "import_msg": line}
    if rc == 0:
        definition = json.loads((task / "definition.json").read_text())
        row["axes"] = {a: v.get("value", "var") for a, v in definition["axes"].items()}
        rc, line, seconds = _run([str(KLOOP), "verify", str(task), str(task / "baseline"), "--no-timing",
                                  "--workloads", "1", "--json", str(task / "verify.json")], timeout)  # fmt: skip
        row.update(verify_rc=rc, verify_s=round(seconds, 1))
        if task.joinpath("verify.json").exists():
            row["verify_status"] = json.loads((task / "verify.json").read_text())["status"]
        if rc != 0:
            row["verify_msg"] = line
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", type=Path, required=True)
    parser.add_argument("--step", type=int, default=10, help="take every STEP-th problem per level")
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--max-bytes", type=int, default=16 << 20)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "kernelbench_sweep.jsonl")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    picked = problems(args.git_dir, args.step, [int(x) for x in args.levels.split(",")])
    with tempfile.TemporaryDirectory(prefix="kb-sweep-") as tmp, args.out.open("w") as sink:
        for path in picked:
            row = sweep_one(args.git_dir, path, Path(tmp), args.max_bytes, args.timeout)
            row["loadavg"] = Path("/proc/loadavg").read_text().split()[0]
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
