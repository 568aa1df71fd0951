#!/usr/bin/env bash
# Prints the argument list a Megatron-LM launch script passes to torchrun,
# one shell-quoted argument per line: what `clustersim simulate
# --megatron-args FILE` reads. The script runs in an empty temporary folder
# with `torchrun` replaced by a function that prints its arguments and an
# empty pretrain_gpt.py beside it, so nothing trains, nothing is downloaded
# and only that folder is written; its own arguments (checkpoint paths, …)
# follow the script's name.
#
#   scripts/megatron-args-of.sh examples/llama/train_llama3_8b_h100_fp8.sh > llama3-8b.args
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 LAUNCH_SCRIPT [ITS ARGUMENTS…]" >&2
    exit 2
fi
script=$(realpath "$1")
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
touch pretrain_gpt.py
torchrun() {
    local argument
    for argument in "$@"; do
        printf '%q\n' "$argument"
    done
}
export -f torchrun
bash "$script" "$@" </dev/null
