#!/usr/bin/env bash
# Checks clustersim's GPU code on a GPU machine that has prebuilt binaries and
# no Rust: finds the CUDA libraries, runs `calibrate`, the GPU-gated tests and
# the executor examples (execute, simulate with the measured profile, compare),
# and writes everything to one folder. Run it from the repository root of the
# same commit the binaries were built from (the examples are read from there).
#
#   scripts/gpu-check.sh [--bin-dir DIR] [--out DIR] [--full] [--cuda-lib-dir DIR]...
#
#   --bin-dir DIR       folder made by scripts/build-gpu-bundle.sh (default: gpu-bundle/,
#                       else target/release/ for clustersim alone)
#   --out DIR           where logs, the profile and the timelines go (default: gpu-check-out/)
#   --full              a full calibration as well as the quick one (adds minutes)
#   --model NAME        the full calibration also times this model's GEMM shapes (default: gpt2-1b,
#                       the model of examples/gpt-layers-p1-real.json)
#   --gpu h100|h200     which GPU's topologies the examples run on (default: from nvidia-smi's
#                       name): the real example on the preset, the pipeline examples on
#                       examples/<gpu>-x4-virtual.json, so the measured profile matches them
#   --cuda-lib-dir DIR  passed on to clustersim (repeatable); see `clustersim cuda-libs`
#
# Every step runs even when an earlier one failed; the last lines are a table
# of steps with their exit codes, and the script exits 1 if any step failed.
set -uo pipefail

root=$(pwd)
bin_dir=""
out="$root/gpu-check-out"
full=0
model=gpt2-1b
gpu=""
lib_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --full) full=1; shift ;;
    --model) model=$2; shift 2 ;;
    --gpu) gpu=$2; shift 2 ;;
    --cuda-lib-dir) lib_args+=(--cuda-lib-dir "$2"); shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$bin_dir" ]; then
  if [ -x "$root/gpu-bundle/clustersim" ]; then bin_dir="$root/gpu-bundle"; else bin_dir="$root/target/release"; fi
fi
bin_dir=$(cd "$bin_dir" && pwd) || { echo "gpu-check: --bin-dir $bin_dir: no such folder" >&2; exit 2; }
clustersim="$bin_dir/clustersim"
[ -x "$clustersim" ] || { echo "gpu-check: $clustersim not found (build it with scripts/build-gpu-bundle.sh)" >&2; exit 2; }
[ -d "$root/examples" ] || { echo "gpu-check: run this from the repository root (examples/ not found in $root)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

export CLUSTERSIM_BIN="$clustersim" CLUSTERSIM_REPO="$root"
# Before any CUDA call: one hardware queue per stream for the executor.
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}
# NCCL inside a VM or container without InfiniBand.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_CUMEM_ENABLE=${NCCL_CUMEM_ENABLE:-0}

results=()
step() { # step NAME COMMAND...: runs it, logs to $out/NAME.log, records the exit code
  local name=$1; shift
  echo "== $name: $*" | tee "$out/$name.log"
  local started=$SECONDS
  "$@" >>"$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  results+=("$(printf '%-34s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - started))")")
}

step machine bash -c 'nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv; uname -a'
step cuda-libs "$clustersim" cuda-libs "${lib_args[@]}"
# The test binaries load CUDA themselves: give them the same libraries.
eval "$("$clustersim" cuda-libs --export "${lib_args[@]}")"
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >>"$out/cuda-libs.log"

step calibrate-quick "$clustersim" calibrate --quick "${lib_args[@]}" --out "$out/profile-quick.json"
profile="$out/profile-quick.json"
if [ "$full" = 1 ]; then
  step calibrate-full "$clustersim" calibrate --model "$model" "${lib_args[@]}" --out "$out/profile.json"
  [ -s "$out/profile.json" ] && profile="$out/profile.json"
fi

for test_binary in "$bin_dir"/*-test; do
  [ -x "$test_binary" ] || continue
  step "$(basename "$test_binary")" "$test_binary" --test-threads=1 --nocapture
done

if [ -z "$gpu" ]; then
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
    *H100*) gpu=h100 ;;
    *) gpu=h200 ;;
  esac
fi
for example in pipeline-1f1b-p4-synthetic pipeline-interleaved-p4-synthetic pipeline-1f1b-p2-d2-distributed-optimizer-synthetic gpt-layers-p1-real gpt-layers-p1-real-gpu-bound; do
  mode=synthetic; case "$example" in *real*) mode=real ;; esac
  scenario="examples/$example.json"
  profile_args=(); [ -s "$profile" ] && profile_args=(--profile "$profile")
  # The examples run on this GPU's own datasheet (memory-bound times use it).
  if [ "$mode" = real ]; then profile_args+=(--topology "$gpu"); else profile_args+=(--topology "examples/$gpu-x4-virtual.json"); fi
  step "execute-$example" "$clustersim" execute "$scenario" --mode "$mode" "${profile_args[@]}" "${lib_args[@]}" --out "$out/$example.measured.json"
  step "simulate-$example" "$clustersim" simulate "$scenario" "${profile_args[@]}" --timeline "$out/$example.simulated.json"
  step "compare-$example" "$clustersim" compare "$out/$example.simulated.json" "$out/$example.measured.json"
done

{
  echo
  echo "gpu-check summary ($(date -u +%FT%TZ), binaries from $bin_dir, output in $out)"
  printf '%s\n' "${results[@]}"
} | tee "$out/summary.txt"
! grep -qv 'rc=0 ' <(printf '%s\n' "${results[@]}")
