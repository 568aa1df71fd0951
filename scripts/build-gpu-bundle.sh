#!/usr/bin/env bash
# Builds clustersim and its GPU-gated test binaries (release), strips them and
# copies them into one folder with stable names, ready to carry to a GPU
# machine that has no Rust. Run from anywhere inside the repository.
#
#   scripts/build-gpu-bundle.sh [BUNDLE_DIR]      (default: gpu-bundle/)
#
# Then, on the GPU machine, from a checkout of the same commit:
#   scripts/gpu-check.sh --bin-dir BUNDLE_DIR --out gpu-check-out
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-$root/gpu-bundle}
cd "$root"
cargo build --release -p cli
mkdir -p "$bundle"
cp target/release/clustersim "$bundle/clustersim"
# "Executable unittests src/lib.rs (target/release/deps/gpu-85a9…)" → gpu-unit-test,
# "Executable tests/memory_classes.rs (…)" → memory_classes-test
{
  cargo test --release -p gpu -p calibrate -p executor --lib --tests --no-run 2>&1
  cargo test --release -p cli --test execute --no-run 2>&1
} |
  sed -n 's/^ *Executable \(unittests \)\{0,1\}\([^ ]*\) (\(.*\))$/\2 \3/p' |
  while read -r source binary; do
    crate=$(basename "$binary" | sed 's/-[0-9a-f]*$//')
    case "$source" in
      src/lib.rs) name="$crate-unit-test" ;;
      *) name="$(basename "$source" .rs)-test" ;;
    esac
    [ "$name" = execute-test ] && name=cli-execute-test
    cp "$binary" "$bundle/$name"
  done
strip --strip-debug "$bundle"/*
ls -l "$bundle"
