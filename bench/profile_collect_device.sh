#!/usr/bin/env bash
# Profile kloop's planted-bottleneck probes with Nsight Compute on a real GPU and save everything
# the profiler tests need as fixtures: report.ncu-rep, details.csv, details.base.csv, raw.csv,
# the kloop digest per case, labels.json and the probe sources.
#
# Usage (device machine, repository root):  bash bench/profile_collect_device.sh [OUT_DIR]
# OUT_DIR defaults to $OUT (the device tool's output folder) or ./profile-probes-out.
# Afterwards copy OUT_DIR/ncu/<gpu>/ into tests/fixtures/profile/probes/ and commit it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OUT_DIR="${1:-${OUT:-$ROOT/profile-probes-out}}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
NCU="${NCU:-$(command -v ncu || true)}"
NVCC="${NVCC:-$(command -v nvcc || true)}"
CASES=(gather_random smem_column_sum spill_capped_regs atomic_hot local_array_dynamic gemm_naive gemm_tiled_smem)

[ -n "$NCU" ] || { echo "profile_collect_device: ncu not found (set NCU=/path/to/ncu)" >&2; exit 2; }
[ -n "$NVCC" ] || { echo "profile_collect_device: nvcc not found (set NVCC=/path/to/nvcc)" >&2; exit 2; }

GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '_' | tr -cd 'A-Za-z0-9_-')"
DEST="$OUT_DIR/ncu/${GPU:-gpu}"
mkdir -p "$DEST/probes"
cp "$HERE/profile_probes/probes.cu" "$HERE/profile_probes/labels.json" "$DEST/"
cp "$HERE/profile_probes/probes.cu" "$DEST/probes/"
{
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  echo "ncu: $("$NCU" --version | tail -1)"
  echo "nvcc: $("$NVCC" --version | tail -1)"
  date -u +"captured: %Y-%m-%dT%H:%M:%SZ"
} > "$DEST/SOURCES.txt"

# -lineinfo for source correlation; -arch=native builds for the GPU in this machine
"$NVCC" -O3 -lineinfo -arch=native -o "$DEST/probes/probes" "$HERE/profile_probes/probes.cu"

for case in "${CASES[@]}"; do
  dir="$DEST/$case"
  mkdir -p "$dir"
  # profile the second launch only (the first warms caches and the module load)
  "$NCU" --set full --import-source yes --clock-control none -k "regex:^${case}\$" -s 1 -c 1 \
    --force-overwrite --export "$dir/report" "$DEST/probes/probes" "$case" > "$dir/ncu.log" 2>&1
  "$NCU" --import "$dir/report.ncu-rep" --csv --page details > "$dir/details.csv"
  "$NCU" --import "$dir/report.ncu-rep" --csv --page details --print-units base > "$dir/details.base.csv"
  "$NCU" --import "$dir/report.ncu-rep" --csv --page raw > "$dir/raw.csv"
  "$NCU" --import "$dir/report.ncu-rep" --page details > "$dir/details.txt"
  PYTHONPATH="$ROOT/src" "$PY" -m kloop.cli profile analyze "$dir/report.ncu-rep" --json > "$dir/digest.json" || true
done

# summary: first finding per case and format against the labels (informational; tests assert it)
PYTHONPATH="$ROOT/src" "$PY" - "$DEST" <<'PYEOF'
import json, sys
from pathlib import Path
from kloop.profile import analyze, read
dest = Path(sys.argv[1])
labels = json.loads((dest / "labels.json").read_text())["cases"]
for case, label in labels.items():
    for fmt in ("report.ncu-rep", "details.csv", "raw.csv"):
        try:
            report = analyze(read(dest / case / fmt), min_bytes=label.get("min_bytes"))[0]
            first = report.findings[0].id.value if report.findings else "-"
        except Exception as exc:  # keep going: the summary is for the person reading the log
            first = f"error: {exc}"
        mark = "OK " if first in label["expect"] else "BAD"
        print(f"{mark} {case:18s} {fmt:15s} first={first} expect={label['expect']}")
PYEOF

# one end-to-end `kloop profile collect` on an example task (python solution on the GPU)
if PYTHONPATH="$ROOT/src" "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  PATH="$(dirname "$NCU"):$PATH" PYTHONPATH="$ROOT/src" "$PY" -m kloop.cli profile collect \
    "$ROOT/examples/rmsnorm" "$ROOT/examples/rmsnorm/solutions/python_vectorized" -o "$OUT_DIR/collect-rmsnorm" \
    > "$OUT_DIR/collect-rmsnorm.log" 2>&1 || echo "collect on examples/rmsnorm failed: see collect-rmsnorm.log" >&2
fi
echo "wrote $DEST"
