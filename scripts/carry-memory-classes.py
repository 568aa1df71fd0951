#!/usr/bin/env python3
"""Carry the lab H100's measured memory-bound kernel classes to every GPU.

`clustersim calibrate` timed each memory-bound kernel class (layernorm,
softmax, dropout, bias_dropout_add, gelu, swiglu, their backwards, the
optimizer's phases and device-to-device copies) at several sizes on the lab
H100 (calibrate/profiles/h100-sxm.json, 2026-11-22). The embedded profiles
take those curves instead of one HBM efficiency for every kernel:

  * h100-sxm and h800-sxm (the same 3.35 TB/s HBM3): the measured times as
    they are;
  * every other GPU: each time split into a fixed part t0 and a part that
    moves bytes, the latter scaled by the datasheet HBM bandwidths,
        t' = t0 + (t - t0) * 3350 GB/s / bandwidth,
    where t0 is the class's time at zero bytes on the straight line through
    its two smallest measured sizes (clamped to [0, smallest time]): the
    launch and latency that no bandwidth shortens.

Rewrites `memory.measured` of profile/profiles/*.json in place (idempotent:
it starts from the lab profile every time) and prints each GPU's achieved
bandwidth for the largest layernorm. Standard library only.
"""
import collections
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LAB = "calibrate/profiles/h100-sxm.json"
H100_HBM = 3350e9
# Datasheet HBM bandwidths (topologies/src/datasheets.rs).
PROFILES = {
    "h100-sxm": 3350e9,
    "h800-sxm": 3350e9,
    "h100-pcie": 2000e9,
    "h200": 4800e9,
    "a100-40gb": 1555e9,
    "a100-80gb": 2039e9,
    "v100-32gb": 900e9,
    "b200": 8000e9,
    "gb200": 8000e9,
}


def fixed_ns(points):
    """Zero-byte intercept of the line through the two smallest sizes."""
    (b0, t0), (b1, t1) = points[0], points[1]
    intercept = t0 - (t1 - t0) / (b1 - b0) * b0
    return min(max(intercept, 0.0), t0)


def main():
    with open(os.path.join(ROOT, LAB)) as f:
        lab = json.load(f)
    classes = collections.OrderedDict()
    for entry in lab["memory"]["measured"]:
        classes.setdefault(entry["kernel"], []).append((entry["bytes"], entry["time_ns"]))
    for name, bandwidth in PROFILES.items():
        path = os.path.join(ROOT, "profile/profiles", name + ".json")
        with open(path) as f:
            profile = json.load(f, object_pairs_hook=collections.OrderedDict)
        same = bandwidth == H100_HBM
        measured = []
        for kernel, points in classes.items():
            points = sorted(points)
            t_fixed = fixed_ns(points)
            for bytes_, time_ns in points:
                scaled = time_ns if same else t_fixed + (time_ns - t_fixed) * H100_HBM / bandwidth
                measured.append(collections.OrderedDict([
                    ("kernel", kernel),
                    ("bytes", bytes_),
                    ("time_ns", int(round(scaled))),
                    ("source", "measured" if name == "h100-sxm" else "model"),
                ]))
        profile["memory"]["measured"] = measured
        how = (" memory.measured: the lab H100's kernel classes and copies (calibrate/profiles/h100-sxm.json, 2026-11-22)"
               + (", as measured." if same else ", their byte-moving part scaled by the HBM bandwidth (scripts/carry-memory-classes.py)."))
        method = profile["provenance"]["method"].split(" memory.measured:")[0]
        profile["provenance"]["method"] = method + how
        with open(path, "w") as f:
            f.write(json.dumps(profile, indent=2, ensure_ascii=False) + "\n")
        biggest = max((e for e in measured if e["kernel"] == "layernorm"), key=lambda e: e["bytes"])
        rate = biggest["bytes"] / biggest["time_ns"]
        print(f"{name}: {len(measured)} entries; layernorm {biggest['bytes'] >> 20} MiB at {rate:.0f} GB/s")


if __name__ == "__main__":
    main()
