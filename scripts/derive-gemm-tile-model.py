#!/usr/bin/env python3
"""Derive the GEMM tile model's constants from the lab H100 grid.

The constants of `gemm.tile_model` in profile/profiles/h100-sxm.json (and
calibrate/profiles/h100-sxm.json) come from here: the bf16 and fp16 GEMMs that
`clustersim calibrate` timed on the lab H100 (calibrate/profiles/h100-sxm.json,
2026-11-22) are fitted by least squares in log time with the same model as
sim/src/cost/gemm_tiles.rs (tiles and waves, split-K, smooth compute/memory
overlap, a latency per kernel and per wave). Kernels of 2 ms or more are left
out of the burst fit: 20 repeats of them keep the GPU at its power limit, and
the six 16384^3 ones (about 12 ms each) give the sustained-over-burst ratio
instead. Prints the constants, the in-sample and 5-fold cross-validated
errors, the sustained ratio, and the error on XLA's H100 table
(validation/kernels/xla-h100-matmul.csv), which sets no constant. Last, the
A100's main-loop efficiency: the burst model with the H100's latencies on the
A100's datasheet (108 SMs, 312 TFLOP/s, 2039 GB/s) solved to stas00/ml-engineering's
maximum achievable matmul FLOPS (MAMF) for the A100 SXM, 271.2 TFLOP/s at
1024x10240x5120, after the same table's H100 SXM figure (794.5 at
2048x2048x13312) is brought to what the lab H100 model gives at that shape
(compute/accelerator/README.md at 744d01e): the table's best-of-sweep runs
above the lab's medians by that ratio on the GPU both measured.

Needs numpy and scipy (not a dependency of the project):
    pip install numpy scipy && python3 scripts/derive-gemm-tile-model.py
"""
import json
import math
import os

import numpy as np
from scipy.optimize import differential_evolution

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PEAK_FLOPS = 989e12  # H100 SXM dense bf16/fp16 datasheet peak
SMS = 132
HBM_BYTES_PER_S = 3350e9
TILES = [(256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64)]
SPLITS = [1, 2, 3, 4, 6, 8]
BURST_MAX_NS = 2.0e6
SUSTAINED_MIN_NS = 10.0e6


def grid():
    with open(os.path.join(ROOT, "calibrate/profiles/h100-sxm.json")) as f:
        profile = json.load(f)
    overhead_s = profile["gemm"]["kernel_overhead_ns"]["value"] * 1e-9
    rows = [
        (e["batch"], e["m"], e["n"], e["k"], e["time_ns"] * 1e-9)
        for e in profile["gemm"]["measured"]
        if e["dtype"] in ("bf16", "fp16")
    ]
    return rows, overhead_s


def xla_rows():
    rows = []
    with open(os.path.join(ROOT, "validation/kernels/xla-h100-matmul.csv")) as f:
        for line in f:
            if line.startswith("#") or line.startswith("b,"):
                continue
            b, m, n, k, dtype, flops = line.strip().split(",")
            if dtype == "bf16xbf16->bf16":
                b, m, n, k = map(int, (b, m, n, k))
                rows.append((b, m, n, k, 2 * b * m * n * k / float(flops)))
    return rows


def seconds(shape, c, overhead_s, sustained=1.0):
    """Model time of one GEMM (as gemm_tiles.rs), launch gap included."""
    b, m, n, k = shape
    mainloop, kernel_ns, wave_ns, memory_eff, p = c
    sm_flops = PEAK_FLOPS / SMS * mainloop * sustained
    bandwidth = HBM_BYTES_PER_S * memory_eff
    memory_s = b * (m * k + k * n + m * n) * 2 / bandwidth
    best = None
    for tm, tn in TILES:
        tiles = b * math.ceil(m / tm) * math.ceil(n / tn)
        for s in SPLITS:
            if s > 1 and (tiles * s > SMS or k // s < 128):
                continue
            depth = -(-k // (s * 64)) * 64
            waves = -(-(tiles * s) // SMS)
            compute_s = waves * (wave_ns * 1e-9 + 2 * tm * tn * depth / sm_flops)
            partial_s = 2 * s * b * m * n * 4 / bandwidth if s > 1 else 0.0
            mem = memory_s + partial_s
            big = max(compute_s, mem)
            t = big * ((compute_s / big) ** p + (mem / big) ** p) ** (1 / p) + kernel_ns * 1e-9
            if best is None or t < best:
                best = t
    return best + overhead_s


BOUNDS = [(0.6, 1.0), (0.0, 5000.0), (0.0, 3000.0), (0.6, 1.0), (1.0, 8.0)]


def fit(rows, overhead_s):
    def loss(c):
        e = np.log([seconds(r[:4], c, overhead_s) / r[4] for r in rows])
        return float(np.mean(e**2))

    return differential_evolution(loss, BOUNDS, seed=1, tol=1e-7, maxiter=300, polish=True).x


def errors(rows, c, overhead_s, sustained=1.0):
    return np.array([seconds(r[:4], c, overhead_s, sustained) / r[4] - 1 for r in rows])


def main():
    rows, overhead_s = grid()
    burst = [r for r in rows if r[4] * 1e9 < BURST_MAX_NS]
    long = [r for r in rows if r[4] * 1e9 >= SUSTAINED_MIN_NS]
    c = fit(burst, overhead_s)
    names = ["mainloop_efficiency", "kernel_latency_ns", "wave_latency_ns", "memory_efficiency", "overlap_exponent"]
    for name, value in zip(names, c):
        print(f"{name} = {value:.6g}")
    e = errors(burst, c, overhead_s)
    print(f"lab grid, {len(burst)} GEMMs under 2 ms: in-sample mean |error| {np.mean(abs(e)):.2%}, max {abs(e).max():.1%}")
    idx = np.arange(len(burst))
    np.random.default_rng(0).shuffle(idx)
    held = []
    for fold in range(5):
        test = set(idx[fold::5].tolist())
        cf = fit([burst[i] for i in idx if i not in test], overhead_s)
        held += list(errors([burst[i] for i in sorted(test)], cf, overhead_s))
    held = np.array(held)
    print(f"lab grid 5-fold cross-validated: mean |error| {np.mean(abs(held)):.2%}, max {abs(held).max():.1%}")
    # Sustained: the burst model's main loop slowed until it matches the long kernels.
    ratios = []
    for r in long:
        lo, hi = 0.5, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if seconds(r[:4], c, overhead_s, mid) > r[4]:
                lo = mid
            else:
                hi = mid
        ratios.append((lo + hi) / 2)
    print(f"sustained_ratio = {np.mean(ratios):.4f} (mean of {len(ratios)} kernels of >= 10 ms: "
          + ", ".join(f"{x:.3f}" for x in ratios) + ")")
    x = xla_rows()
    # XLA's times are a kernel tracer's durations: no launch gap.
    ex = errors(x, c, 0.0)
    print(f"XLA H100 bf16 table, {len(x)} GEMMs (sets no constant), as kernel durations: mean |error| "
          f"{np.mean(abs(ex)):.2%}, mean {np.mean(ex):+.2%}, max {abs(ex).max():.1%}")
    eg = errors(x, c, overhead_s)
    print(f"  (with the lab's launch gap added: mean |error| {np.mean(abs(eg)):.2%}, mean {np.mean(eg):+.2%})")

    # A100 main loop from MAMF, anchored by the table's own H100 figure.
    global PEAK_FLOPS, SMS, HBM_BYTES_PER_S
    h100_mamf = (1, 2048, 2048, 13312)
    model_h100 = 2 * 2048 * 2048 * 13312 / seconds(h100_mamf, c, 0.0)
    anchor = model_h100 / 794.5e12
    PEAK_FLOPS, SMS, HBM_BYTES_PER_S = 312e12, 108, 2039e9
    a100 = (1, 1024, 10240, 5120)
    target = 271.2e12 * anchor
    lo, hi = 0.5, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        ca = (mid,) + tuple(c[1:])
        if 2 * 1024 * 10240 * 5120 / seconds(a100, ca, 0.0) < target:
            lo = mid
        else:
            hi = mid
    print(f"H100 model at MAMF's shape {model_h100 / 1e12:.1f} TFLOP/s vs MAMF 794.5: anchor {anchor:.4f}")
    print(f"A100 mainloop_efficiency = {(lo + hi) / 2:.4f} (MAMF 271.2 TFLOP/s x {anchor:.4f})")


if __name__ == "__main__":
    main()
