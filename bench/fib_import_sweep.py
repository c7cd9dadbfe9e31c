"""Import every FlashInfer-Trace definition flashinfer publishes, then verify each reference against itself.

    .venv/bin/python bench/fib_import_sweep.py --repo /work/.mirror/flashinfer-ai+flashinfer/repo \
        --helpers /tmp/fi/flashinfer/trace/templates --out bench/results/fib_import_sweep \
        [--scale 0.5] [--aa-timeout 240] [--import-timeout 600] [--jobs 2] [--resume] [--only NAME...]
        [--memory-mb 8192] [--min-free-gb 8]

(`--helpers`: `git -C REPO archive HEAD flashinfer/trace/templates | tar -x -C /tmp/fi`.)

For each `tests/trace/fi_trace_out/*.json` at the repository's HEAD: `kloop task import-fib` (exit
0 = imported; otherwise its error lines are the reason), then an A/A: `kloop verify TASK REF
--no-timing --workloads 1 --heldout 1 --json` where REF is the definition's own reference packed as a python solution.
Writes `results.jsonl` (one line per definition, appended as each finishes, so a run that is stopped
keeps what it did; `--resume` skips the names already there) and `summary.md` (counts + one reason
each, rewritten after every row). `--jobs N` runs N definitions at once; an import or an A/A that
outlives its timeout is killed and recorded as `timeout`. An import whose reference check could not
run within `--memory-mb` (its note begins with `fib_import.UNCHECKED`) gets no A/A: the verifier's
sandbox has the same limit. `--min-free-gb` holds each import until the shared machine has that much
memory available.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kloop.task.fib_import import UNCHECKED

KLOOP = [sys.executable, "-m", "kloop.cli"]
FOLDER = "tests/trace/fi_trace_out"


def definitions(repo: Path) -> list[tuple[str, str]]:
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", "HEAD", f"{FOLDER}/"],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    found = []
    for path in sorted(n for n in names if n.endswith(".json")):
        text = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip
        found.append((Path(path).stem, text))
    return found


def reason(stderr: str) -> str:
    lines = [ln.split(": ", 3)[-1] for ln in stderr.strip().splitlines() if ln.startswith("kloop: error:")]
    return " | ".join(lines) if lines else (stderr.strip().splitlines() or ["no output"])[-1]


def aa(task: Path, work: Path, timeout: float) -> dict:
    from kloop.task.load import load_task, reference_solution, write_solution_dir

    solution = write_solution_dir(reference_solution(load_task(task).definition), work / "reference")
    verdict = work / "verify.json"
    started = time.monotonic()
    try:
        proc = subprocess.run([*KLOOP, "verify", str(task), str(solution), "--no-timing", "--json", str(verdict),
                               "--heldout", "1", "--workloads", "1"], capture_output=True, text=True, timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"aa": "timeout", "aa_reason": f"A/A did not finish in {timeout:g} s on this CPU", "aa_s": timeout}
    row: dict = {"aa_rc": proc.returncode, "aa_s": round(time.monotonic() - started, 1)}
    if verdict.is_file():
        data = json.loads(verdict.read_text())
        row["aa"] = data["status"]
        failed = [f"{c['name']}: {c['detail']}" for c in data.get("checks", []) if not c["passed"]]
        row["aa_reason"] = "; ".join(data.get("reasons") or failed)[:400]
    else:
        row["aa"], row["aa_reason"] = f"exit {proc.returncode}", reason(proc.stderr)[:400]
    return row


def _available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / (1 << 20)
    return float("inf")


def _wait_for_memory(min_free_gb: float) -> None:
    """Start an import only while the machine has `min_free_gb` available (it is shared; the check may take --memory-mb)."""
    while _available_gb() < min_free_gb:
        print(f"waiting: {_available_gb():.1f} GB available, below --min-free-gb {min_free_gb:g}", flush=True)
        time.sleep(30)


def sweep_one(name: str, text: str, args: argparse.Namespace) -> dict:
    """Import one definition (killed after --import-timeout) and, if it imported, run its A/A."""
    work = args.out / "work"
    src = work / name / "definition.json"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text)
    task = work / name / "task"
    size = ["--max-bytes", args.max_bytes] if args.max_bytes else ["--scale", args.scale]
    cmd = [*KLOOP, "task", "import-fib", str(src), "-o", str(task), "--force", *size, "--memory-mb", str(args.memory_mb)]
    _wait_for_memory(args.min_free_gb)
    cmd += ["--helpers", str(args.helpers)] if args.helpers else []
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.import_timeout)
    except subprocess.TimeoutExpired:
        return {"name": name, "import_rc": "timeout",
                "import_reason": f"import did not finish in {args.import_timeout:g} s on this CPU"}  # fmt: skip
    row: dict = {"name": name, "import_rc": proc.returncode, "import_s": round(time.monotonic() - started, 1)}
    if proc.returncode == 0:
        row["notes"] = [ln[6:] for ln in proc.stdout.splitlines() if ln.startswith("note: ")]
        unchecked = [n for n in row["notes"] if n.startswith(UNCHECKED)]
        if unchecked:  # the verifier's sandbox has the same limit: the A/A could not run the reference either
            row.update({"aa": "not run", "aa_reason": unchecked[0][:400]})
        else:
            row.update(aa(task, work / name, args.aa_timeout))
    else:
        row["import_reason"] = reason(proc.stderr)[:600]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scale", default="0.5")
    parser.add_argument("--aa-timeout", type=float, default=240)
    parser.add_argument("--import-timeout", type=float, default=600)
    parser.add_argument("--max-bytes", default=None)
    parser.add_argument("--memory-mb", type=int, default=8192, help="import-fib --memory-mb: the reference check's cap")
    parser.add_argument("--min-free-gb", type=float, default=0, help="wait before each import until this much is available")
    parser.add_argument("--helpers", type=Path, help="flashinfer/trace/templates of the same commit (helpers to inline)")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--resume", action="store_true", help="keep results.jsonl and skip the names it has")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    done = {json.loads(ln)["name"] for ln in results.read_text().splitlines() if ln.strip()} \
        if args.resume and results.is_file() else set()  # fmt: skip
    if not args.resume:
        results.write_text("")
    todo = [(n, t) for n, t in definitions(args.repo) if (not args.only or n in args.only) and n not in done]
    todo.sort(key=lambda pair: ("moe" in pair[0], pair[0]))  # the slow full-size MoE last: the rest lands first
    lock = threading.Lock()

    def record(name: str, text: str) -> None:
        row = sweep_one(name, text, args)
        with lock:
            print(json.dumps({k: row.get(k) for k in ("name", "import_rc", "aa", "aa_s")}), flush=True)
            with results.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            write_summary([json.loads(ln) for ln in results.read_text().splitlines() if ln.strip()], args.out / "summary.md")

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(lambda pair: record(*pair), todo))
    return 0


def write_summary(rows: list[dict], path: Path) -> None:
    rows = sorted(rows, key=lambda r: r["name"])
    imported = [r for r in rows if r["import_rc"] == 0]
    passed = [r for r in imported if r.get("aa") == "PASSED"]
    lines = [f"definitions: {len(rows)}; imported: {len(imported)}; A/A passed: {len(passed)}", "",
             "| definition | import | A/A | why not |", "| --- | --- | --- | --- |"]  # fmt: skip
    for r in rows:
        why = r.get("import_reason") or ("" if r.get("aa") == "PASSED" else r.get("aa_reason", ""))
        why = why.replace("|", "/").replace("\n", " ")[:300]
        lines.append(f"| {r['name']} | {'yes' if r['import_rc'] == 0 else 'no'} | {r.get('aa', '-')} | {why} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
