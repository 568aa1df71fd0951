#!/usr/bin/env bash
# Regenerates the README gallery from the simulator itself.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p cli
bin=target/release/clustersim
out=docs/gallery
common=(--model gpt3-175b --tp 8 --pp 4 --dp 1 --global-batch 8 --recompute full)
"$bin" simulate "${common[@]}" --schedule 1f1b --plot "$out/1f1b.png"
"$bin" simulate "${common[@]}" --schedule interleaved --chunks 2 --plot "$out/interleaved.png"
"$bin" simulate "${common[@]}" --schedule zb-h1 --plot "$out/zb-h1.png"
"$bin" simulate "${common[@]}" --schedule zb-v --chunks 2 --plot "$out/zb-v.png"
"$bin" simulate "${common[@]}" --schedule dualpipev --chunks 2 --plot "$out/dualpipev.png"
"$bin" simulate "${common[@]}" --schedule dualpipe --chunks 2 --plot "$out/dualpipe.png"
# Llama 2 70B: untied embeddings, so ZB-H2 runs with optimizer post-validation (GPT-3 175B ties them).
"$bin" plot bubble --model llama2-70b --tp 8 --pp 4 --dp 1 --global-batch 8 --recompute full --microbatches 4,8,16,32,64 --out "$out/bubble.png"
