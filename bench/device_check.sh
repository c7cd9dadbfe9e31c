#!/usr/bin/env bash
# Device check on a lent GPU machine (H200: python3 3.12, torch 2.11, triton 3.6, nvcc 13, ncu), or an
# AMD MI300X / MI355X (ROCm: hipcc, rocprofv3, rocprof-compute; torch's ROCm build answers to "cuda").
# The repository arrives without .venv, so kloop runs from src/ with the system python.
#   bash bench/device_check.sh                    # the issue-27 set (< 10 min): raw outputs under $OUT
#   STEPS=all bash bench/device_check.sh          # also the older verifier steps (about 15 min)
#   STEPS="contest ladder" bash bench/device_check.sh
# Time limits of the default set (NVIDIA): env 60 + contest 5x40 + ladder 100 + redteam 80 + profile
# 45+45+20 + tune 80 = 570 s at most; each step that runs out is recorded with rc 124 and the rest go on.
#   PRINT=1 VENDOR=amd bash bench/device_check.sh # print every command for that vendor, run nothing
#                                                   (what tests/examples/test_device_script.py checks)
# VENDOR is nvidia or amd (default: amd when rocm-smi is on PATH and nvidia-smi is not).
# Steps, each time-boxed; the summary table at the end reads the step log:
#   env        driver, card, versions (nvidia-smi / rocm-smi, nvcc / hipcc)
#   contest    the five contest tasks (examples/contest, contest-sized workloads_gpu.jsonl) built and
#              verified on the GPU with timing, baseline and honest rewrite
#   ladder     bench/timing_ladder.py: kloop's clock vs ncu gpu__time_duration (--clock-control none)
#              or rocprofv3's kernel trace, and triton's do_bench, ~2 us to ~5 ms
#   redteam    bench/gpu_redteam: side stream, L2-persistence carve-out, lazy launch, pointer cache
#   profile    kloop profile collect on a baseline and a candidate, then analyze --against (the diff);
#              ncu on NVIDIA, rocprofv3 and rocprof-compute on AMD
#   tune       bench/tune_bandwidth.py: the tuner on examples/rmsnorm_bf16, as a fraction of the copy
#              bandwidth the ladder measured
#   (STEPS=all adds) contest_honest (the vectorized rewrites) verify_cuda verify_triton gpu_tests gpu_aa gpu_loop: the earlier verifier checks
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$(mktemp -d -t kloop-device-XXXX)}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
PRINT="${PRINT:-0}"
if [ -z "${VENDOR:-}" ]; then
  if command -v rocm-smi >/dev/null 2>&1 && ! command -v nvidia-smi >/dev/null 2>&1; then VENDOR=amd; else VENDOR=nvidia; fi
fi
STEPS="${STEPS:-env contest ladder redteam profile tune}"
[ "$STEPS" = all ] && STEPS="env contest contest_honest ladder redteam profile tune verify_cuda verify_triton gpu_tests gpu_aa gpu_loop"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export KLOOP_HOME="${KLOOP_HOME:-$OUT/kloop-home}"
STATUS="$OUT/steps.tsv"
: > "$STATUS"
CONTEST=(gdn_decode_qk4_v8_d128_k_last gdn_prefill_qk4_v8_d128_k_last dsa_topk_indexer_fp8_h64_d128_topk2048_ps64
         dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64 moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048)

wanted() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $OUT/NAME.txt, record rc
  local name="$1" limit="$2"
  shift 2
  if [ "$PRINT" = 1 ]; then
    printf 'CMD %s %s\n' "$name" "$*"
    return 0
  fi
  local start=$SECONDS
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >> "$STATUS"
  tail -n 25 "$OUT/$name.txt"
  return 0
}

gpu_task() {  # gpu_task NAME: a copy of the contest task whose workloads are the contest-sized ones
  local dest="$OUT/contest/$1"
  [ "$PRINT" = 1 ] && { echo "$dest"; return 0; }
  rm -rf "$dest"; mkdir -p "$OUT/contest"
  cp -r "examples/contest/$1" "$dest"
  cp "examples/contest/$1/workloads_gpu.jsonl" "$dest/workloads.jsonl"
  echo "$dest"
}

if wanted env; then
  if [ "$VENDOR" = amd ]; then
    step env 60 bash -c "rocm-smi --showproductname --showdriverversion; hipcc --version | head -3; rocprofv3 --version; rocprof-compute --version; $PY -c 'import sys, torch, triton; print(sys.version); print(\"torch\", torch.__version__, \"hip\", torch.version.hip, torch.cuda.get_device_name(0)); print(\"triton\", triton.__version__)'"
  else
    step env 60 bash -c "nvidia-smi; $PY -c 'import sys, torch, triton; print(sys.version); print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.get_device_name(0)); print(\"triton\", triton.__version__)'; which nvcc ncu; nvcc --version | tail -2"
  fi
fi
if wanted contest; then  # 200 s at most: each verification boxed to 40 s
  for task in "${CONTEST[@]}"; do
    dir="$(gpu_task "$task")"
    step "contest_${task%%_*}_$(echo "$task" | cut -d_ -f2)_baseline" 40 "$PY" -m kloop.cli verify "$dir" "$dir/baseline" --device cuda \
      --json "$OUT/contest_${task}_baseline.json" --trace-out "$OUT/contest_${task}_baseline.jsonl"
    wanted contest_honest && step "contest_${task%%_*}_$(echo "$task" | cut -d_ -f2)_vectorized" 60 "$PY" -m kloop.cli \
      verify "$dir" "$dir/solutions/vectorized" --device cuda --json "$OUT/contest_${task}_vectorized.json"
  done
fi
if wanted ladder; then
  step ladder 100 "$PY" bench/timing_ladder.py --out "$OUT/ladder"
fi
if wanted redteam; then
  step gpu_redteam 80 "$PY" bench/gpu_redteam/run.py --out "$OUT/gpu_redteam"
fi
if wanted profile; then  # baseline (unfused torch) vs candidate (fused Triton) of examples/rmsnorm_bf16
  mkdir -p "$OUT/profile"
  [ "$PRINT" = 1 ] || "$PY" - "$OUT/profile/candidate" <<'PYX'
import json, sys
from pathlib import Path
dest = Path(sys.argv[1]); dest.mkdir(parents=True, exist_ok=True)
first = json.loads(Path("examples/campaigns/rmsnorm_bf16.jsonl").read_text().splitlines()[0])
for rel, text in first["files"].items():
    (dest / rel).write_text(text)
PYX
  if [ "$VENDOR" = amd ]; then
    for tool in rocprofv3 rocprof-compute; do
      step "profile_base_$tool" 90 "$PY" -m kloop.cli profile collect examples/rmsnorm_bf16 examples/rmsnorm_bf16/baseline \
        --tool "$tool" -o "$OUT/profile/base_$tool"
      step "profile_cand_$tool" 90 "$PY" -m kloop.cli profile collect examples/rmsnorm_bf16 "$OUT/profile/candidate" \
        --tool "$tool" -o "$OUT/profile/cand_$tool"
    done
    step profile_diff 20 "$PY" -m kloop.cli profile analyze "$OUT/profile/cand_rocprofv3/rocprofv3" \
      --against "$OUT/profile/base_rocprofv3/rocprofv3" --json
  else
    step profile_base_ncu 45 "$PY" -m kloop.cli profile collect examples/rmsnorm_bf16 examples/rmsnorm_bf16/baseline \
      --tool ncu -o "$OUT/profile/base_ncu"
    step profile_cand_ncu 45 "$PY" -m kloop.cli profile collect examples/rmsnorm_bf16 "$OUT/profile/candidate" \
      --tool ncu -o "$OUT/profile/cand_ncu"
    step profile_diff 20 "$PY" -m kloop.cli profile analyze "$OUT/profile/cand_ncu/profile.ncu-rep" \
      --against "$OUT/profile/base_ncu/profile.ncu-rep" --json
  fi
fi
if wanted tune; then
  step tune 80 "$PY" bench/tune_bandwidth.py --ladder "$OUT/ladder/timing_ladder.json" --out "$OUT/tune"
fi
wanted verify_cuda && step doctor 60 "$PY" -m kloop.cli doctor
wanted verify_cuda && step verify_cuda 240 "$PY" -m kloop.cli verify examples/rmsnorm bench/gpu_solutions/rmsnorm_cuda --device cuda \
  --json "$OUT/verify_cuda.json" --trace-out "$OUT/trace_cuda.jsonl" --log-dir "$OUT/logs_cuda" --build-timeout 200
wanted verify_triton && step verify_triton 120 "$PY" -m kloop.cli verify examples/rmsnorm bench/gpu_solutions/rmsnorm_triton --device cuda \
  --json "$OUT/verify_triton.json" --trace-out "$OUT/trace_triton.jsonl" --log-dir "$OUT/logs_triton"
if ! wanted gpu_tests; then
  :
elif "$PY" -c "import pytest" 2>/dev/null; then
  step gpu_tests 120 "$PY" -m pytest tests -m gpu -q -x -p no:cacheprovider \
    --deselect tests/verify/test_gpu.py::test_gpu_redteam_and_solutions
else
  printf 'gpu_tests\tskipped (no pytest)\t0\n' >> "$STATUS"
fi
# A/A on the GPU (wall clock): the CI must contain 1.0, and the spread between pairs of boxes is
# what kloop.verify.stats.BOX_SD should be there (measured on CPUs only so far)
wanted gpu_aa && step gpu_aa 150 "$PY" bench/aa_coverage.py --device cuda --tasks examples/rmsnorm_bf16 --runs 10 --load-at 1 \
  --json "$OUT/gpu_aa.json"
wanted gpu_loop && step gpu_loop 150 "$PY" -m kloop.cli run examples/rmsnorm_bf16 \
  --writer replay:examples/campaigns/rmsnorm_bf16.jsonl --reviewer rules --stages research,iterate,tune \
  --device cuda --out "$OUT/gpu_loop"

[ "$PRINT" = 1 ] && exit 0
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
for path in sorted(out.glob("contest_*.json")):
    v = json.loads(path.read_text())
    s = v["summary"]
    print(f"{path.stem}: {v['status']} x{s.get('speedup_geomean')} median {s.get('latency_ms_median')} ms "
          f"failed {[c['name'] for c in v['checks'] if not c['passed']]}")
ladder = out / "ladder" / "timing_ladder.json"
if ladder.is_file():
    for r in json.loads(ladder.read_text()):
        print(f"ladder {r['rung']:12s} kloop {r['kloop_us']:.2f} us ncu {r['ncu_us']} do_bench {r['do_bench_us']} "
              f"k/ncu {r.get('kloop_over_ncu')} cv {r['cv']:.4f} within={r.get('within_target')}")
tune = out / "tune" / "tune_bandwidth.json"
if tune.is_file():
    t = json.loads(tune.read_text())
    print(f"tune best {t['best_config']} copy {t['copy_GBps']} GB/s")
    for w in t["workloads"]:
        print(f"   tokens {w['tokens']:6d} {w['GBps']:.0f} GB/s = {w['of_copy']:.2f} of copy")
summary = out / "gpu_redteam" / "summary.json"
if summary.is_file():
    for row in json.loads(summary.read_text()):
        print(f"redteam {row['case']:22s} {row['status']:20s} {'ok' if row['ok'] else 'BAD'} {row['why']}")
PY
echo "raw outputs: $OUT"
