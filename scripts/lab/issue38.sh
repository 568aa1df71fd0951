#!/usr/bin/env bash
# Issue 38's lab-GPU run: one entry point, at most ~7 minutes, everything under $OUT.
#
#   bash scripts/lab/issue38.sh BUNDLE_DIR        (from the repository root, on the lab GPU machine)
#
# BUNDLE_DIR holds the stripped `clustersim` binary (scripts/build-gpu-bundle.sh makes it;
# only `clustersim` is used). $OUT (default ./lab-out) receives:
#   log.txt                  progress, GPU state (nvidia-smi -q before and after), versions,
#                            clustersim cuda-libs, every part's own output
#   errors.txt               one entry per failed or timed-out part (only if one failed)
#   profile-<gpu>.json       clustersim calibrate (full grid, FP8 and the sustained stage)
#   torch-kernels.json       scripts/lab/torch_kernels.py: everything it measured, with clocks
#   torch-gemm-<gpu>.csv     its linear GEMMs, bf16 and fp8        (clustersim validate reads it)
#   torch-attn-gemm-<gpu>.csv  attention's batched GEMMs           (clustersim validate reads it)
#   torch-attention-<gpu>.csv  eager core and FLASH attention rows (clustersim validate reads it)
#   torch-steps.json         scripts/lab/torch_step.py: single-GPU training steps
#   torch-steps-cases.json   the same as dev-set cases            (clustersim validate reads it)
# The device tool brings back at most 8 files: when errors.txt makes a ninth, log.txt and
# errors.txt are packed into logs.tar.gz (and errors.txt is also printed at the end).
#
# Budget (seconds, caps; each part runs under `timeout`, later parts keep their share):
#   state 20 | calibrate 105 (typical ~50) | torch_kernels 185 | torch_step 90+ | end 5
# Total cap ISSUE38_TOTAL_S (default 400 s; with --kill-after the worst case stays under 7 minutes). Parts never stop the script: set -u, not -e.
# PYTHON (default python3: the lab image's PyTorch venv). ISSUE38_DRY_RUN=1: a CPU rehearsal
# (both Python scripts with --dry-run, calibrate --cpu-only): formats real, numbers not.
set -uo pipefail

bundle=${1:-}
if [ -z "$bundle" ] || [ "$bundle" = -h ] || [ "$bundle" = --help ]; then
  sed -n '2,26p' "$0"
  exit 2
fi
root=$(pwd)
if [ ! -f "$root/scripts/lab/torch_kernels.py" ]; then
  echo "issue38.sh: run from the repository root (scripts/lab/torch_kernels.py not found in $root)" >&2
  exit 2
fi
OUT=${OUT:-$root/lab-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OUT
PY=${PYTHON:-python3}
TOTAL=${ISSUE38_TOTAL_S:-400}
start=$SECONDS
log="$OUT/log.txt"
: >"$log"
clustersim=""
if [ -x "$bundle/clustersim" ]; then clustersim=$(cd "$bundle" && pwd)/clustersim; fi

# ISSUE38_DRY_RUN=1: a CPU rehearsal (Python parts with --dry-run, calibrate --cpu-only).
dry=${ISSUE38_DRY_RUN:-0}
dry_flag=()
[ "$dry" = 1 ] && dry_flag=(--dry-run)
export PYTHONUNBUFFERED=1
# NCCL inside a VM without InfiniBand (calibrate's one-GPU collectives), as scripts/gpu-check.sh does.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_CUMEM_ENABLE=${NCCL_CUMEM_ENABLE:-0}

elapsed() { echo $((SECONDS - start)); }
left() { echo $((TOTAL - (SECONDS - start))); }
progress() { printf '[%4ss] %s\n' "$(elapsed)" "$*" | tee -a "$log"; }
record_error() { # record_error PART TEXT
  printf '== issue38.sh: %s (after %s s, %s)\n%s\n\n' "$1" "$(elapsed)" "$(date -u +%FT%TZ)" "$2" >>"$OUT/errors.txt"
}
summary=()
# run_part NAME CAP_S COMMAND...: runs COMMAND under timeout CAP_S (never past the total), output to log.txt.
run_part() {
  local name=$1 cap=$2
  shift 2
  local room
  room=$(left)
  [ "$cap" -gt "$room" ] && cap=$room
  if [ "$cap" -lt 5 ]; then
    progress "$name: skipped (only ${room}s left of ${TOTAL}s)"
    record_error "$name" "skipped: only ${room}s left of the ${TOTAL}s budget"
    summary+=("$(printf '%-16s skipped (budget)' "$name")")
    return 99
  fi
  local t0=$SECONDS
  progress "$name: start (cap ${cap}s, ${room}s left)"
  local cmdline="$*"
  echo "===== $name: ${cmdline:0:160} (cap ${cap}s)" >>"$log"
  timeout --kill-after=5 "$cap" "$@" >>"$log" 2>&1
  local rc=$?
  local took=$((SECONDS - t0))
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    record_error "$name" "timed out after ${cap}s (rc=$rc): what it wrote before is kept; see log.txt"
    progress "$name: TIMED OUT after ${took}s (cap ${cap}s)"
  elif [ "$rc" -ne 0 ]; then
    record_error "$name" "exit code $rc after ${took}s; last lines of its output:
$(sed -n "/^===== $name:/,\$p" "$log" | tail -n 15)"
    progress "$name: FAILED rc=$rc in ${took}s"
  else
    progress "$name: ok in ${took}s"
  fi
  summary+=("$(printf '%-16s rc=%-4s %4ss (cap %ss)' "$name" "$rc" "$took" "$cap")")
  return "$rc"
}

# highlights NAME REGEX: the part's lines of log.txt that match, on stdout (the device tool returns
# only the last 12,000 characters of stdout: keep it short; log.txt has everything).
highlights() {
  sed -n "/^===== $1:/,/^===== /p" "$log" | grep -E "$2" | cut -c1-220 | tail -n 40
}

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu_name" in
  *H200*) tag=h200 ;;
  *H100*) tag=h100 ;;
  *) tag=h200 ;;
esac
progress "issue38: GPU '${gpu_name:-none found}' (files tagged $tag), python $PY, clustersim ${clustersim:-MISSING}, OUT=$OUT, total cap ${TOTAL}s"

# ---- 0. machine state and versions
state() {
  echo "== date"; date -u +%FT%TZ
  echo "== uname"; uname -a
  echo "== git"; git -C "$root" log -1 --format='%H %s' 2>/dev/null
  echo "== nvidia-smi"; nvidia-smi
  echo "== nvidia-smi --query-gpu"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv
  echo "== nvidia-smi -q"; nvidia-smi -q
  echo "== python, torch, CUDA, cuDNN, cuBLAS, NCCL"
  "$PY" -c 'import json, sys; sys.path.insert(0, "scripts/lab"); import torch, lab_common as lc; print(json.dumps(lc.versions(torch), indent=1, default=str))'
  echo "== clustersim"
  if [ -n "$clustersim" ]; then "$clustersim" --version; "$clustersim" cuda-libs; else echo "no $bundle/clustersim"; fi
  return 0
}
# `timeout` runs programs, not functions: the function travels as text, its variables exported.
export root PY clustersim bundle
run_part state 20 bash -c "$(declare -f state); state"

# ---- 1. clustersim calibrate: the full grid (the H100's full run took 20 s before the FP8 and
# 20 s sustained stages existed: gpu-check-summary.txt), the FP8 stage and the sustained stage.
profile="$OUT/profile-$tag.json"
if [ -n "$clustersim" ]; then
  if [ "$dry" = 1 ]; then
    run_part calibrate 105 "$clustersim" calibrate --cpu-only --out "$profile"
  else
    run_part calibrate 105 "$clustersim" calibrate --model gpt2-1b --out "$profile"
  fi
  cal_rc=$?
  highlights calibrate 'remark:|error|Error|sustained|wrote|profile' | tail -n 12
  # A quick run (5 s sustained) only if the full one failed and the later parts keep their share.
  if [ "$cal_rc" -ne 0 ] && [ ! -s "$profile" ] && [ "$(left)" -ge $((185 + 90 + 5 + 40)) ]; then
    run_part calibrate-quick 40 "$clustersim" calibrate --quick --out "$profile"
  fi
else
  record_error calibrate "no clustersim in '$bundle' (build it with scripts/build-gpu-bundle.sh and carry it)"
  progress "calibrate: skipped (no clustersim binary in '$bundle')"
  summary+=("$(printf '%-16s skipped (no binary)' calibrate)")
fi

# ---- 2. PyTorch kernels: GEMM bursts, FP8, the lab grid, attention, sustained
kcap=185
run_part torch_kernels "$kcap" "$PY" scripts/lab/torch_kernels.py --out "$OUT" --budget-s $((kcap - 20)) "${dry_flag[@]}"

highlights torch_kernels 'part [a-z_]+: (ok|failed)|gap:|sustained (bf16|fp8)|grid:|mid:|ERROR|sdpa checks|Traceback'

# ---- 3. PyTorch training steps: whatever time is left (at least its 90 s share, at most 150 s)
scap=$(($(left) - 8))
[ "$scap" -gt 150 ] && scap=150
run_part torch_step "$scap" "$PY" scripts/lab/torch_step.py --out "$OUT" --budget-s $((scap > 25 ? scap - 15 : 10)) "${dry_flag[@]}"

highlights torch_step 'step .*(ms|start)|ERROR|done|Traceback' | grep -v ': start' 

# ---- 4. end: GPU state after, what came out, pack to 8 files
{
  echo "===== end: GPU state after"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv 2>&1
  echo "===== files"
  ls -l "$OUT"
} >>"$log" 2>&1
rm -f "$OUT"/*.tmp
progress "parts:"
printf '  %s\n' "${summary[@]}" | tee -a "$log"
files=$(find "$OUT" -type f | wc -l)
if [ -s "$OUT/errors.txt" ]; then
  echo "----- errors.txt"
  tail -c 4000 "$OUT/errors.txt"
fi
if [ "$files" -gt 8 ]; then
  echo "[$(elapsed)s] $files files: packing log.txt and errors.txt into logs.tar.gz (the tool brings back 8)" | tee -a "$log"
  (cd "$OUT" && tar czf logs.tar.gz log.txt $([ -f errors.txt ] && echo errors.txt) && rm -f log.txt errors.txt)
fi
# From here on nothing is written under $OUT (a new log.txt would be a ninth file).
echo "[$(elapsed)s] issue38: done; $OUT holds:"
ls -l "$OUT"
exit 0
