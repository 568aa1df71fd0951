#!/usr/bin/env bash
# Issue 18's whole-command targets, measured as a user runs them: wall time,
# user+sys CPU time and peak RSS from `/usr/bin/time -v`, the median of
# RUNS runs each (default 5). Simulations are pinned to one core
# (`taskset -c 0`, the issue's "on one core"); the sweep gets both cores.
#
#   scripts/bench-scale.sh            # every case
#   RUNS=3 scripts/bench-scale.sh 3072 sweep   # some cases
#   BIN=/tmp/old/clustersim scripts/bench-scale.sh    # another binary
#
# Cases: 3072 (the 1T model on 3,072 GPUs), 3072-contention, 3072-full
# (--no-symmetry), 100k (t8 p64 d196, m = 512: 100,352 GPUs on Selene's
# nodes at 12,544 nodes, written by topologies' preset_json example since
# the selene preset has 560), 100k-timeline (the same with a few ranks'
# timeline), 3072-straggler, 3072-straggler-full and 100k-straggler (one GPU
# 10 % slow: symmetry with exceptions, and 3,072 GPUs in full for
# comparison), 100k-full (--no-symmetry: every replica, kept as one
# replica's graph), 100k-straggler-full (the same with rank 50000 10 %
# slow), 100k-spread (every rank's speed drawn, lognormal:0.05: every
# replica), 100k-nic-full (--no-symmetry with rank 50000's NIC at half
# rate), 100k-contention (--contention on selene:12544, the preset grown to
# 12,544 nodes with the fat-tree levels its NICs need: the synthetic file's
# three levels cannot hold them), sweep (GPT-3 175B on 1,024 GPUs, every valid layout,
# --ignore-memory), sweep-prune (the same with --prune: the top 10 only). The engine's events per CPU-second come from criterion:
# `cargo bench -p sim --bench engine -- engine_cpu/3072`.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
# BIN and PRESET_JSON: binaries to measure instead of building them here.
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p cli
  cargo build --release -q -p topologies --example preset_json
fi
BIN=${BIN:-target/release/clustersim}
PRESET_JSON=${PRESET_JSON:-target/release/examples/preset_json}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PRESET_JSON" selene 12544 > "$WORK/selene-12544.json"

ONE_T=(--model gpt-1t --tp 8 --pp 64 --recompute full)
case_command() {
  case "$1" in
    3072) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 6 --global-batch 3072 ;;
    3072-contention) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 6 --global-batch 3072 --contention ;;
    3072-full) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 6 --global-batch 3072 --no-symmetry ;;
    100k) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology "$WORK/selene-12544.json" ;;
    100k-timeline) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology "$WORK/selene-12544.json" --timeline "$WORK/ranks.timeline.jsonl" --timeline-ranks 0,5,100-107,100351 ;;
    3072-straggler) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 6 --global-batch 3072 --slow-rank 1000:1.1 ;;
    3072-straggler-full) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 6 --global-batch 3072 --slow-rank 1000:1.1 --no-symmetry ;;
    100k-full) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology "$WORK/selene-12544.json" --no-symmetry ;;
    100k-straggler-full) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology "$WORK/selene-12544.json" --slow-rank 50000:1.1 --no-symmetry ;;
    100k-spread) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology "$WORK/selene-12544.json" --rank-spread lognormal:0.05 ;;
    100k-nic-full) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology "$WORK/selene-12544.json" --slow-nic 50000:2 --no-symmetry ;;
    100k-contention) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology selene:12544 --contention ;;
    100k-straggler) echo taskset -c 0 "$BIN" simulate "${ONE_T[@]}" --dp 196 --global-batch 100352 --topology "$WORK/selene-12544.json" --slow-rank 50000:1.1 ;;
    sweep) echo "$BIN" sweep --model gpt3-175b --gpus 1024 --global-batch 1536 --ignore-memory --csv "$WORK/sweep.csv" ;;
    sweep-prune) echo "$BIN" sweep --model gpt3-175b --gpus 1024 --global-batch 1536 --ignore-memory --prune --csv "$WORK/sweep.csv" ;;
    *) echo "unknown case $1" >&2; exit 2 ;;
  esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(3072 3072-contention 3072-full 100k 100k-timeline sweep)
printf '%-18s %5s %10s %10s %10s\n' case runs wall_s cpu_s rss_MiB
for name in "${CASES[@]}"; do
  command=$(case_command "$name")
  : > "$WORK/$name.wall"; : > "$WORK/$name.cpu"; : > "$WORK/$name.rss"
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -v -o "$WORK/time.txt" $command > "$WORK/$name.out"
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$WORK/time.txt" >> "$WORK/$name.wall"
    awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$WORK/time.txt" >> "$WORK/$name.cpu"
    awk -F': ' '/Maximum resident set size/ { print $2 / 1024 }' "$WORK/time.txt" >> "$WORK/$name.rss"
  done
  printf '%-18s %5s %10.3f %10.3f %10.1f\n' "$name" "$RUNS" \
    "$(median < "$WORK/$name.wall")" "$(median < "$WORK/$name.cpu")" "$(median < "$WORK/$name.rss")"
  if [ "$name" = sweep ] || [ "$name" = sweep-prune ]; then
    echo "  sweep layouts: $(($(wc -l < "$WORK/sweep.csv") - 1))"
  fi
  [ -n "${VERBOSE:-}" ] && cat "$WORK/$name.out"
done
