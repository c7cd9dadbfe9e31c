#!/usr/bin/env bash
# Device check on a lent GPU machine (H100 / H200: python3 3.12, torch 2.11, triton 3.6, nvcc 13, ncu), or an
# AMD MI300X / MI355X (ROCm: hipcc, rocprofv3, rocprof-compute; torch's ROCm build answers to "cuda").
# The repository arrives without .venv, so kloop runs from src/ with the system python. That image lacks
# pydantic, pyseccomp and simpleeval: run `bash bench/device_wheels.sh` here first and carry `.whl`
# (the deps step installs it into /tmp/kloop-site; without it every kloop step fails at import).
#   bash bench/device_check.sh                    # the issue-27/29 set, one run under 10 min
#   STEPS=all bash bench/device_check.sh          # also the older verifier steps (longer: raise BUDGET)
#   STEPS="deps contest seccomp" bash bench/device_check.sh
#   PRINT=1 VENDOR=amd bash bench/device_check.sh # print every command for that vendor, run nothing
#                                                   (what tests/examples/test_device_script.py checks)
# VENDOR is nvidia or amd (default: amd when rocm-smi is on PATH and nvidia-smi is not).
# Time: each step has its own limit, and all of them share BUDGET seconds (default 570): a step gets
# min(its limit, what is left), a step with under 15 s left is recorded as `skip`, so the whole run
# ends inside the device tool's 600 s. Limits (NVIDIA): env 20, deps 30, contest 170 (ten verifications
# at once), seccomp 60, ladder 80, redteam 60, profile 30+30+15, tune 50 = 545 s at most.
# Steps, in order; the summary table at the end reads the step log:
#   env        driver, card, versions (nvidia-smi / rocm-smi, nvcc / hipcc)
#   deps       installs carried .whl/*.whl, adds ncu's extras/python, then imports every module kloop
#              needs and reports libseccomp: a missing one is named here, not as ten import errors
#   contest    the five contest tasks (examples/contest, contest-sized workloads_gpu.jsonl swapped in)
#              verified on the GPU without timing, each its naive Triton baseline (contest_*_baseline)
#              and its honest vectorized rewrite (honest_*), all ten at once (correctness only, so
#              sharing the GPU changes no verdict); each runs under bench/gpu_seccomp.py, which
#              records every call the sandbox's seccomp filter refused (Triton's compiler and CUDA's
#              driver run inside the box)
#   seccomp    an honest GPU candidate (the GDN decode rewrite) verified WITH timing under
#              bench/gpu_seccomp.py: the timing path with the user-notification listener on; the
#              summary prints every refused call of every box, and says plainly when the filter was
#              off (no pyseccomp) or an honest candidate was rejected with refused calls
#   ladder     bench/timing_ladder.py: kloop's clock vs ncu gpu__time_duration (--clock-control none)
#              or rocprofv3's kernel trace, and triton's do_bench, ~2 us to ~5 ms
#   redteam    bench/gpu_redteam: side stream, L2-persistence carve-out, lazy launch, pointer cache
#   profile    kloop profile collect on a baseline and a candidate, then analyze --against (the diff);
#              ncu on NVIDIA, rocprofv3 and rocprof-compute on AMD
#   tune       bench/tune_bandwidth.py: the tuner on examples/rmsnorm_bf16, as a fraction of the copy
#              bandwidth the ladder measured
#   (STEPS=all adds) contest_honest (the reordered rewrites too) verify_cuda verify_triton gpu_tests
#              gpu_aa gpu_loop: the earlier verifier checks
# Output: raw files go to WORK (a temp folder); $OUT gets four files small enough to commit, since the
# device tool brings back at most 8: summary.txt (the table and every verdict), seccomp.txt (every
# refused call), steps.tsv, and raw.tgz (logs, verdict JSON, ladder/tune/redteam JSON, profile reports;
# without the reports if it would pass 15 MiB).
set -u
cd "$(dirname "$0")/.." || exit 2
OUT="${OUT:-$(mktemp -d -t kloop-device-XXXX)}"
mkdir -p "$OUT"
PRINT="${PRINT:-0}"
if [ "$PRINT" = 1 ]; then WORK="$OUT"; else WORK="${WORK:-$(mktemp -d -t kloop-device-work-XXXX)}"; fi
mkdir -p "$WORK" && chmod 755 "$WORK"  # mktemp makes it 0700; the sandbox runs as another uid
PY="${PYTHON:-python3}"
BUDGET="${BUDGET:-570}"
DEVICE="${DEVICE:-cuda}"  # contest and seccomp steps; DEVICE=cpu WORKLOADS=cpu check the script's mechanics on a CPU
LIMIT_SCALE="${LIMIT_SCALE:-1}"  # multiplies every step's limit (a loaded CPU check; BUDGET still caps the total)
WORKLOADS="${WORKLOADS:-gpu}"  # gpu: the contest-sized workloads_gpu.jsonl; cpu: the tasks' own small ones
DEADLINE=$((SECONDS + BUDGET - 15))  # 15 s kept for the summary and the packing
if [ -z "${VENDOR:-}" ]; then
  if command -v rocm-smi >/dev/null 2>&1 && ! command -v nvidia-smi >/dev/null 2>&1; then VENDOR=amd; else VENDOR=nvidia; fi
fi
STEPS="${STEPS:-env deps contest seccomp ladder redteam profile tune}"
[ "$STEPS" = all ] && STEPS="env deps contest contest_honest seccomp ladder redteam profile tune verify_cuda verify_triton gpu_tests gpu_aa gpu_loop"
SITE=/tmp/kloop-site
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"  # + $SITE once the deps step has filled it
export PYTHONUNBUFFERED=1
export KLOOP_HOME="${KLOOP_HOME:-$WORK/kloop-home}"
STATUS="$WORK/steps.tsv"
: > "$STATUS"
mkdir -p "$WORK/seccomp"
CONTEST_TASKS="${CONTEST_TASKS:-gdn_decode_qk4_v8_d128_k_last gdn_prefill_qk4_v8_d128_k_last dsa_topk_indexer_fp8_h64_d128_topk2048_ps64
  dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64 moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048}"
read -r -d '' -a CONTEST <<< "$CONTEST_TASKS"  # a subset for a CPU check of the mechanics

wanted() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

limit_for() {  # limit_for NAME SECONDS: the step's limit cut to what is left of BUDGET; empty: skip it
  local left=$((DEADLINE - SECONDS))
  if [ "$left" -lt 15 ]; then
    printf '%s\tskip\t0\n' "$1" >> "$STATUS"
    echo "== $1 skipped: ${left}s left of the ${BUDGET}s budget" >&2
    return 0
  fi
  local want=$(($2 * LIMIT_SCALE))
  [ "$want" -lt "$left" ] && echo "$want" || echo "$left"
}

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $WORK/NAME.txt, record rc
  local name="$1" limit="$2"
  shift 2
  if [ "$PRINT" = 1 ]; then
    printf 'CMD %s %s\n' "$name" "$*"
    return 0
  fi
  limit="$(limit_for "$name" "$limit")"
  [ -z "$limit" ] && return 0
  local start=$SECONDS
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" > "$WORK/$name.txt" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >> "$STATUS"
  tail -n 25 "$WORK/$name.txt"
  return 0
}

BG_NAMES=()
bstep() {  # bstep NAME SECONDS COMMAND...: like step, in the background; bwait collects them
  local name="$1" limit="$2"
  shift 2
  if [ "$PRINT" = 1 ]; then
    printf 'CMD %s %s\n' "$name" "$*"
    return 0
  fi
  limit="$(limit_for "$name" "$limit")"
  [ -z "$limit" ] && return 0
  echo "== $name (limit ${limit}s, in parallel)"
  BG_NAMES+=("$name")
  ( local t0; t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" > "$WORK/$name.txt" 2>&1
    local rc=$?
    printf '%s\t%s\n' "$rc" "$(( $(date +%s) - t0 ))" > "$WORK/$name.rc" ) &
}

bwait() {  # wait for every bstep, then record each one's rc and seconds, and show its tail
  [ "$PRINT" = 1 ] && return 0
  wait
  local name
  for name in "${BG_NAMES[@]}"; do
    if [ -f "$WORK/$name.rc" ]; then
      printf '%s\t%s\n' "$name" "$(cat "$WORK/$name.rc")" >> "$STATUS"
    else
      printf '%s\tlost\t0\n' "$name" >> "$STATUS"
    fi
    echo "== $name"; tail -n 12 "$WORK/$name.txt"
  done
  BG_NAMES=()
}

gpu_task() {  # gpu_task NAME: a copy of the contest task whose workloads are the contest-sized ones
  local dest="$WORK/contest/$1"
  [ "$PRINT" = 1 ] && { echo "$dest"; return 0; }
  rm -rf "$dest"; mkdir -p "$WORK/contest"
  cp -r "examples/contest/$1" "$dest"
  [ "$WORKLOADS" = gpu ] && cp "examples/contest/$1/workloads_gpu.jsonl" "$dest/workloads.jsonl"
  echo "$dest"
}

short() { echo "${1%%_*}_$(echo "$1" | cut -d_ -f2)"; }  # gdn_decode, dsa_topk, moe_fp8, ...

sverify() {  # sverify RECORD-NAME ARGS...: `kloop verify ARGS` with every seccomp refusal recorded
  echo "$PY" bench/gpu_seccomp.py --record "$WORK/seccomp/$1.json" -- verify
}

if wanted env; then
  if [ "$VENDOR" = amd ]; then
    step env 20 bash -c "rocm-smi --showproductname --showdriverversion; hipcc --version | head -3; rocprofv3 --version; rocprof-compute --version; $PY -c 'import sys, torch, triton; print(sys.version); print(\"torch\", torch.__version__, \"hip\", torch.version.hip, torch.cuda.get_device_name(0)); print(\"triton\", triton.__version__)'"
  else
    step env 20 bash -c "nvidia-smi; $PY -c 'import sys, torch, triton; print(sys.version); print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.get_device_name(0)); print(\"triton\", triton.__version__)'; which nvcc ncu; nvcc --version | tail -2"
  fi
fi
if wanted deps; then  # in this shell (PYTHONPATH must reach every later step), then checked as a step
  if [ "$PRINT" = 1 ]; then
    printf 'CMD deps_install %s\n' "$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE .whl/*.whl"
  elif compgen -G ".whl/*.whl" > /dev/null; then
    timeout 60 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
      > "$WORK/deps_install.txt" 2>&1
    printf 'deps_install\t%s\t0\n' "$?" >> "$STATUS"
    # only an existing folder: the sandbox's Landlock rules list the import paths that exist, so a
    # missing one on sys.path makes every import scan it and reject honest candidates (sandbox_policy)
    [ -d "$SITE" ] && PYTHONPATH="$PWD/src:$SITE:${PYTHONPATH#"$PWD/src:"}"
  else
    echo "no .whl/ carried: run bench/device_wheels.sh here and carry .whl (pydantic, pyseccomp, simpleeval)" | tee "$WORK/deps_install.txt"
    printf 'deps_install\tnone\t0\n' >> "$STATUS"
  fi
  NCU_BIN="$(command -v ncu 2>/dev/null || true)"
  NCU_PY="$(dirname "$(readlink -f "${NCU_BIN:-/nonexistent}")")/extras/python"
  if [ -n "$NCU_BIN" ] && [ -d "$NCU_PY" ]; then
    PYTHONPATH="$PYTHONPATH:$NCU_PY"  # ncu_report, for profile analyze
  fi
  step deps 30 "$PY" -c "
import ctypes.util, importlib
missing = []
for name in ('pydantic', 'pydantic_core', 'typer', 'rich', 'yaml', 'numpy', 'safetensors', 'psutil', 'simpleeval',
             'pyseccomp', 'cxxfilt', 'ncu_report', 'torch', 'triton', 'kloop.cli'):
    try:
        mod = importlib.import_module(name)
        print(f'ok      {name:14s} {getattr(mod, \"__version__\", \"\")} {getattr(mod, \"__file__\", \"\")}')
    except Exception as exc:
        missing.append(name)
        print(f'MISSING {name:14s} {type(exc).__name__}: {exc}')
print('libseccomp:', ctypes.util.find_library('seccomp') or 'NOT FOUND (no seccomp filter in the sandbox)')
from kloop.verify import seccomp
print('seccomp filter available to the sandbox:', seccomp.available())
raise SystemExit(1 if missing else 0)"
fi
if wanted contest; then  # ten verifications at once, no timing: 170 s at most for all of them
  for task in "${CONTEST[@]}"; do
    dir="$(gpu_task "$task")"
    name="$(short "$task")"
    # shellcheck disable=SC2046  # sverify prints the wrapper's argv, split on purpose (no spaces in it)
    bstep "contest_${name}_baseline" 170 $(sverify "contest_${name}_baseline") "$dir" "$dir/baseline" --device "$DEVICE" \
      --no-timing --json "$WORK/contest_${name}_baseline.json" --trace-out "$WORK/contest_${name}_baseline.jsonl"
    # shellcheck disable=SC2046
    bstep "honest_${name}_vectorized" 170 $(sverify "honest_${name}_vectorized") "$dir" "$dir/solutions/vectorized" \
      --device "$DEVICE" --no-timing --json "$WORK/honest_${name}_vectorized.json"
    # shellcheck disable=SC2046
    wanted contest_honest && bstep "contest_${name}_reordered" 170 $(sverify "contest_${name}_reordered") "$dir" \
      "$dir/solutions/reordered" --device "$DEVICE" --no-timing --json "$WORK/contest_${name}_reordered.json"
  done
  bwait
fi
if wanted seccomp; then  # an honest GPU candidate through the timing path, the listener on
  dir="$(gpu_task gdn_decode_qk4_v8_d128_k_last)"
  # shellcheck disable=SC2046
  step seccomp_timed 60 $(sverify seccomp_timed) "$dir" "$dir/solutions/vectorized" --device "$DEVICE" \
    --json "$WORK/seccomp_timed.json" --trace-out "$WORK/seccomp_timed.jsonl"
fi
if wanted ladder; then
  step ladder 80 "$PY" bench/timing_ladder.py --out "$WORK/ladder"
fi
if wanted redteam; then
  step gpu_redteam 60 "$PY" bench/gpu_redteam/run.py --out "$WORK/gpu_redteam"
fi
if wanted profile; then  # baseline (unfused torch) vs candidate (fused Triton) of examples/rmsnorm_bf16
  mkdir -p "$WORK/profile"
  [ "$PRINT" = 1 ] || "$PY" - "$WORK/profile/candidate" <<'PYX'
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
        --tool "$tool" -o "$WORK/profile/base_$tool"
      step "profile_cand_$tool" 90 "$PY" -m kloop.cli profile collect examples/rmsnorm_bf16 "$WORK/profile/candidate" \
        --tool "$tool" -o "$WORK/profile/cand_$tool"
    done
    step profile_diff 15 "$PY" -m kloop.cli profile analyze "$WORK/profile/cand_rocprofv3/rocprofv3" \
      --against "$WORK/profile/base_rocprofv3/rocprofv3" --json
  else
    step profile_base_ncu 30 "$PY" -m kloop.cli profile collect examples/rmsnorm_bf16 examples/rmsnorm_bf16/baseline \
      --tool ncu -o "$WORK/profile/base_ncu"
    step profile_cand_ncu 30 "$PY" -m kloop.cli profile collect examples/rmsnorm_bf16 "$WORK/profile/candidate" \
      --tool ncu -o "$WORK/profile/cand_ncu"
    step profile_diff 15 "$PY" -m kloop.cli profile analyze "$WORK/profile/cand_ncu/profile.ncu-rep" \
      --against "$WORK/profile/base_ncu/profile.ncu-rep" --json
  fi
fi
if wanted tune; then
  step tune 50 "$PY" bench/tune_bandwidth.py --ladder "$WORK/ladder/timing_ladder.json" --out "$WORK/tune"
fi
wanted verify_cuda && step doctor 60 "$PY" -m kloop.cli doctor
wanted verify_cuda && step verify_cuda 240 "$PY" -m kloop.cli verify examples/rmsnorm bench/gpu_solutions/rmsnorm_cuda --device cuda \
  --json "$WORK/verify_cuda.json" --trace-out "$WORK/trace_cuda.jsonl" --log-dir "$WORK/logs_cuda" --build-timeout 200
wanted verify_triton && step verify_triton 120 "$PY" -m kloop.cli verify examples/rmsnorm bench/gpu_solutions/rmsnorm_triton --device cuda \
  --json "$WORK/verify_triton.json" --trace-out "$WORK/trace_triton.jsonl" --log-dir "$WORK/logs_triton"
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
  --json "$WORK/gpu_aa.json"
wanted gpu_loop && step gpu_loop 150 "$PY" -m kloop.cli run examples/rmsnorm_bf16 \
  --writer replay:examples/campaigns/rmsnorm_bf16.jsonl --reviewer rules --stages research,iterate,tune \
  --device cuda --out "$WORK/gpu_loop"

[ "$PRINT" = 1 ] && exit 0
"$PY" - "$WORK" "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, sys
from pathlib import Path
out, dest = Path(sys.argv[1]), Path(sys.argv[2])
print("\n== summary")
print(f"{'step':28s} {'rc':>5s} {'seconds':>8s}")
for line in (out / "steps.tsv").read_text().splitlines():
    name, rc, secs = (line.split("\t") + ["", ""])[:3]
    print(f"{name:28s} {rc:>5s} {secs:>8s}")


def failed(v):
    return [c["name"] for c in v.get("checks", []) if not c.get("passed")]


for name in ("verify_cuda", "verify_triton", "seccomp_timed"):
    path = out / f"{name}.json"
    if not path.is_file():
        print(f"{name}: no verdict"); continue
    v = json.loads(path.read_text())
    s = v["summary"]
    print(f"{name}: {v['status']} speedup {s.get('speedup_geomean')} CI {s.get('speedup_ci')} "
          f"median {s.get('latency_ms_median')} ms; failed checks {failed(v)} reasons {v.get('reasons', [])[:2]}")
    for w in v["workloads"]:
        if not w.get("heldout"):  # the listed workloads; held-out and coverage draws are in raw.tgz
            print(f"   {str(w['axes']):18s} {w['status']:8s} lat {w['latency_ms']} base {w['baseline_latency_ms']} x{w['speedup']}")
loop = out / "gpu_loop" / "summary.json"
if loop.is_file():
    s = json.loads(loop.read_text())
    print(f"gpu_loop: {s['status']} {s['outcome']} best {s['best']}")
    for r in s["rounds"]:
        print(f"   round {r['round']} {r['stage']:8s} {r['verify_status']} x{r['speedup_geomean']} accepted={r['accepted']} {r['reasons'][:1]}")
for path in sorted([*out.glob("contest_*.json"), *out.glob("honest_*.json")]):
    v = json.loads(path.read_text())
    worst = max((w["max_abs_error"] for w in v.get("workloads", [])
                 if not w.get("heldout") and isinstance(w.get("max_abs_error"), (int, float))), default=None)
    print(f"{path.stem:34s} {v['status']:9s} workloads {len(v.get('workloads', []))} failed {failed(v)} "
          f"reasons {[r[:160] for r in v.get('reasons', [])[:2]]}" + (f" max_abs_error (listed workloads) {worst:.3g}" if worst is not None else ""))
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

# seccomp: every refused call of every box, per verification (bench/gpu_seccomp.py records), in its own file too
lines = []
records = sorted((out / "seccomp").glob("*.json"))
if not records:
    lines.append("seccomp: no record (the contest and seccomp steps did not run, or died before writing one)")
for path in records:
    rec = json.loads(path.read_text())
    verdict = rec.get("verdict") or {}
    boxes = rec.get("listeners", [])
    after = sum(b["count"] for b in boxes)
    state = ("FILTER OFF (no pyseccomp/libseccomp): says nothing" if not rec.get("seccomp_available")
             else "NO LISTENER: refusals not observed" if not boxes else f"{len(boxes)} listener(s)")
    lines.append(f"{path.stem:34s} rc {rec.get('rc')} verdict {verdict.get('status')} {state}; {after} refused after arming")
    for b in boxes:
        for when in ("before", "refused"):
            for row in b[when]:
                lines.append(f"   REFUSED {'before' if when == 'before' else 'after':6s} box {b['box']:10s} {row['call']} (pid {row['pid']})")
    if after and verdict.get("status") != "PASSED":
        lines.append("   HONEST CANDIDATE REJECTED WITH REFUSED CALLS: a call the GPU stack needs is on the deny list")
print("\n== seccomp (every refused call)")
print("\n".join(lines))
(dest / "seccomp.txt").write_text("\n".join(lines) + "\n")
PY
cp "$WORK/steps.tsv" "$OUT/steps.tsv"
tar czf "$OUT/raw.tgz" -C "$WORK" --exclude=kloop-home --exclude=contest . 2>/dev/null
if [ "$(stat -c %s "$OUT/raw.tgz")" -gt 15000000 ]; then  # the device tool brings back files up to 16 MiB
  tar czf "$OUT/raw.tgz" -C "$WORK" --exclude=kloop-home --exclude=contest --exclude='*.ncu-rep' --exclude='*.db' . 2>/dev/null
fi
echo "results: $OUT (summary.txt seccomp.txt steps.tsv raw.tgz); raw outputs: $WORK"
