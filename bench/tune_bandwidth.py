"""The tuner on a memory-bound example, as a fraction of the measured copy bandwidth.

Takes the tunable fused Triton RMSNorm of examples/campaigns/rmsnorm_bf16.jsonl (its last round),
runs `kloop tune` on examples/rmsnorm_bf16, verifies the best configuration with timing, and
divides each workload's achieved bandwidth (bytes that must move: x read, y written, weight read,
over kloop's latency) by the device's copy bandwidth measured by bench/timing_ladder.py (its
copy_1GiB rung: 2 GiB moved). Target (issue #27): >= 0.85 on the large workloads.

    python3 bench/tune_bandwidth.py --ladder OUT/timing_ladder.json --out OUT/tune   # device
    python3 bench/tune_bandwidth.py --dry-run --out DIR                              # CPU: prints the plan
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
TASK = ROOT / "examples" / "rmsnorm_bf16"
CAMPAIGN = ROOT / "examples" / "campaigns" / "rmsnorm_bf16.jsonl"
HIDDEN = 4096


def extract_tunable(dest: Path) -> Path:
    """The campaign's last round (the NUM_WARPS-tunable kernel) as a solution directory."""
    rounds = [json.loads(line) for line in CAMPAIGN.read_text().splitlines() if line.strip()]
    files = rounds[-1]["files"]
    dest.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (dest / rel).write_text(text)
    return dest


def kloop(*args: str) -> list[str]:
    return [sys.executable, "-m", "kloop.cli", *args]


def copy_bandwidth(ladder: Path) -> float | None:
    """Bytes per second of the ladder's largest copy (read + write), by kloop's own clock."""
    rows = {r["rung"]: r for r in json.loads(ladder.read_text())}
    row = rows.get("copy_1GiB")
    return 2 * (1 << 30) / (row["kloop_us"] * 1e-6) if row else None


def fractions(verdict: dict, copy_bps: float) -> list[dict]:
    out = []
    for w in verdict.get("workloads", []):
        if w.get("heldout") or not w.get("latency_ms"):
            continue
        tokens = w["axes"]["tokens"]
        moved = 2 * tokens * HIDDEN * 2 + HIDDEN * 2  # bf16 x read, y written, weight read
        bps = moved / (w["latency_ms"] * 1e-3)
        out.append({"tokens": tokens, "latency_ms": w["latency_ms"], "GBps": bps / 1e9, "of_copy": bps / copy_bps})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ladder", type=Path, default=None, help="timing_ladder.json with a copy_1GiB rung")
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--dry-run", action="store_true", help="extract and print the commands only")
    args = parser.parse_args()
    solution = extract_tunable(args.out / "tunable")
    tune = kloop("tune", str(TASK), str(solution), "--budget", str(args.budget), "--device", "cuda",
                 "--json", str(args.out / "tune.json"))  # fmt: skip
    if args.dry_run:
        print(" ".join(tune))
        return 0
    subprocess.run(tune, check=False, timeout=400)
    result = json.loads((args.out / "tune.json").read_text())
    best = (result.get("best") or {}).get("config")
    if not best:
        print("tune: no configuration passed")
        return 1
    from kloop.task.tunables import instantiate_dir

    fixed = args.out / "best"
    extract_tunable(fixed)
    instantiate_dir(fixed, best)
    verdict_path = args.out / "best_verify.json"
    subprocess.run(kloop("verify", str(TASK), str(fixed), "--device", "cuda", "--json", str(verdict_path)), timeout=300)
    copy_bps = copy_bandwidth(args.ladder) if args.ladder and args.ladder.is_file() else None
    rows = fractions(json.loads(verdict_path.read_text()), copy_bps) if copy_bps else []
    summary = {"best_config": best, "copy_GBps": copy_bps / 1e9 if copy_bps else None, "workloads": rows}
    (args.out / "tune_bandwidth.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
