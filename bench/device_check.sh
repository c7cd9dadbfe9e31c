#!/usr/bin/env bash
# Device check for the verifier on a lent GPU machine (H200: python3 3.12, torch 2.11, triton 3.6,
# nvcc 13, ncu). The repository arrives without .venv, so kloop runs from src/ with the system python.
#   bash bench/device_check.sh          # raw outputs under $OUT (default: a temp dir)
# Steps, each time-boxed so the whole script stays under ~8 minutes:
#   1. environment (nvidia-smi, versions)
#   2. build + verify a CUDA and a Triton solution of examples/rmsnorm with the GPU timing path
#      (CUDA events, L2 flush, persisting-L2 reset, device-wide sync, A-B vs the baseline)
#   3. the GPU red team: side stream, L2-persistence carve-out, lazy launch, pointer cache
#   4. every other gpu-marked test in the suite (when pytest is installed there)
#   5. A/A verifications of the GPU example (coverage, and the between-box spread on a GPU)
#   6. the loop on the GPU example (examples/rmsnorm_bf16 with its replay campaign), last: a run
#      cut short by the command's limit still leaves the steps above under $OUT
#   7. a summary table
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$(mktemp -d -t kloop-device-XXXX)}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export KLOOP_HOME="${KLOOP_HOME:-$OUT/kloop-home}"
STATUS="$OUT/steps.tsv"
: > "$STATUS"

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $OUT/NAME.txt, record rc
  local name="$1" limit="$2"
  shift 2
  local start=$SECONDS
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >> "$STATUS"
  tail -n 25 "$OUT/$name.txt"
  return 0
}

step env 60 bash -c "nvidia-smi; $PY -c 'import sys, torch, triton; print(sys.version); print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.get_device_name(0)); print(\"triton\", triton.__version__)'; which nvcc ncu; nvcc --version | tail -2"
step doctor 60 "$PY" -m kloop.cli doctor
step verify_cuda 240 "$PY" -m kloop.cli verify examples/rmsnorm bench/gpu_solutions/rmsnorm_cuda --device cuda \
  --json "$OUT/verify_cuda.json" --trace-out "$OUT/trace_cuda.jsonl" --log-dir "$OUT/logs_cuda" --build-timeout 200
step verify_triton 120 "$PY" -m kloop.cli verify examples/rmsnorm bench/gpu_solutions/rmsnorm_triton --device cuda \
  --json "$OUT/verify_triton.json" --trace-out "$OUT/trace_triton.jsonl" --log-dir "$OUT/logs_triton"
step gpu_redteam 240 "$PY" bench/gpu_redteam/run.py --out "$OUT/gpu_redteam"
if "$PY" -c "import pytest" 2>/dev/null; then
  step gpu_tests 120 "$PY" -m pytest tests -m gpu -q -x -p no:cacheprovider \
    --deselect tests/verify/test_gpu.py::test_gpu_redteam_and_solutions
else
  printf 'gpu_tests\tskipped (no pytest)\t0\n' >> "$STATUS"
fi
# A/A on the GPU (wall clock): the CI must contain 1.0, and the spread between pairs of boxes is
# what kloop.verify.stats.BOX_SD should be there (measured on CPUs only so far)
step gpu_aa 150 "$PY" bench/aa_coverage.py --device cuda --tasks examples/rmsnorm_bf16 --runs 10 --load-at 1 \
  --json "$OUT/gpu_aa.json"
step gpu_loop 150 "$PY" -m kloop.cli run examples/rmsnorm_bf16 \
  --writer replay:examples/campaigns/rmsnorm_bf16.jsonl --reviewer rules --stages research,iterate,tune \
  --device cuda --out "$OUT/gpu_loop"

"$PY" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print("\n== summary")
print(f"{'step':16s} {'rc':>4s} {'seconds':>8s}")
for line in (out / "steps.tsv").read_text().splitlines():
    name, rc, secs = line.split("\t")
    print(f"{name:16s} {rc:>4s} {secs:>8s}")
for name in ("verify_cuda", "verify_triton"):
    path = out / f"{name}.json"
    if not path.is_file():
        print(f"{name}: no verdict"); continue
    v = json.loads(path.read_text())
    s = v["summary"]
    print(f"{name}: {v['status']} speedup {s.get('speedup_geomean')} CI {s.get('speedup_ci')} "
          f"median {s.get('latency_ms_median')} ms; failed checks {[c['name'] for c in v['checks'] if not c['passed']]}")
    for w in v["workloads"]:
        print(f"   {str(w['axes']):18s} {w['status']:8s} lat {w['latency_ms']} base {w['baseline_latency_ms']} x{w['speedup']}")
loop = out / "gpu_loop" / "summary.json"
if loop.is_file():
    s = json.loads(loop.read_text())
    print(f"gpu_loop: {s['status']} {s['outcome']} best {s['best']}")
    for r in s["rounds"]:
        print(f"   round {r['round']} {r['stage']:8s} {r['verify_status']} x{r['speedup_geomean']} accepted={r['accepted']} {r['reasons'][:1]}")
summary = out / "gpu_redteam" / "summary.json"
if summary.is_file():
    for row in json.loads(summary.read_text()):
        print(f"redteam {row['case']:22s} {row['status']:20s} {'ok' if row['ok'] else 'BAD'} {row['why']}")
PY
echo "raw outputs: $OUT"
