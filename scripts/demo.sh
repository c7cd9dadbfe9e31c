#!/usr/bin/env bash
# The main demo: set up kloop, then run the gated loop on a shipped example with the offline
# agents - a replay campaign (honest rounds, a hack, a regression, escape attempts) as the
# writer, the rules reviewer, then the tuner over the tunables the campaign declares.
#
#   bash scripts/demo.sh [RUN_DIR]        (default: runs/demo)
#
# A finished run already in RUN_DIR is moved aside to RUN_DIR.previous (never deleted); an
# unfinished one (interrupted, killed, paused) is continued with --resume.
# With a GPU present, an example tagged "gpu" that has a campaign in examples/campaigns/ is used.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo: setting up .venv/ (scripts/setup.sh; the test-only tools are not installed here)" >&2
SECONDS=0
bash scripts/setup.sh
echo "demo: setup done in ${SECONDS} s" >&2
OUT=${1:-runs/demo}
PY=.venv/bin/python

EXAMPLE=rmsnorm
DEVICE=cpu
# Ask torch about a GPU only where the kernel shows one (importing torch to ask takes seconds).
GPU_EXAMPLE=""
if compgen -G "/dev/nvidia[0-9]*" >/dev/null || [ -e /dev/kfd ] || [ -e /dev/dxg ]; then
GPU_EXAMPLE=$($PY - <<'PY' || true
import json, pathlib
try:
    import torch
    has_gpu = torch.cuda.is_available()
except Exception:
    has_gpu = False
if has_gpu:
    for d in sorted(pathlib.Path("examples").glob("*/definition.json")):
        tags = json.loads(d.read_text()).get("tags", [])
        if "gpu" in tags and pathlib.Path(f"examples/campaigns/{d.parent.name}.jsonl").is_file():
            print(d.parent.name)
            break
PY
)
fi
if [ -n "$GPU_EXAMPLE" ]; then
  EXAMPLE=$GPU_EXAMPLE
  DEVICE=auto
fi

STATUS=""
if [ -f "$OUT/.kloop/config.json" ]; then
  STATUS=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status",""))' "$OUT/summary.json" 2>/dev/null || echo interrupted)
fi
case "$STATUS" in
  interrupted|running|awaiting_approval)
    echo "demo: continuing the unfinished run in $OUT ($STATUS)"
    .venv/bin/kloop run --resume "$OUT" ;;
  *)
    if [ -e "$OUT" ]; then
      rm -rf "$OUT.previous"
      mv "$OUT" "$OUT.previous"
      echo "demo: the previous run is kept in $OUT.previous"
    fi
    mkdir -p "$(dirname "$OUT")"
    echo "demo: running kloop on examples/$EXAMPLE (device $DEVICE) into $OUT" >&2
    .venv/bin/kloop run "examples/$EXAMPLE" --writer "replay:examples/campaigns/$EXAMPLE.jsonl" \
      --reviewer rules --stages research,iterate,tune --device "$DEVICE" --out "$OUT" ;;
esac

$PY - "$OUT" <<'PY'
import json, sys, pathlib
run = pathlib.Path(sys.argv[1])
s = json.loads((run / "summary.json").read_text())
best = s.get("best") or {}
accepted = sum(r["accepted"] for r in s["rounds"])
speedup = best.get("speedup_geomean")
head = f"best speedup: {speedup:.2f}x ({best['candidate']}, round {best['round']})" if speedup else "no accepted candidate"
print(f"\n{head}; {accepted} of {len(s['rounds'])} rounds accepted; status {s['status']}, outcome {s['outcome']}")
PY
echo "demo: done in ${SECONDS} s, setup included" >&2
