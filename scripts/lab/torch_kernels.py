#!/usr/bin/env python3
"""Issue 38's kernel measurements through PyTorch on one GPU (the lab H200/H100).

  python3 scripts/lab/torch_kernels.py [--out DIR] [--budget-s 165] [--dry-run]

Parts, in this order, each in its own try/except (a failure goes to
OUT/errors.txt and the next part runs), each with a share of the budget:

  gap        back-to-back empty kernels: the GPU's launch-to-launch gap
  gemm       bf16 and FP8 bursts (torch.mm, torch._scaled_mm) at 4096^3,
             8192^3, 16384x8192x8192, 1 s idle before each
  grid       the same, bf16 and FP8, on every m,n,k of
             validation/kernels/lab-h100-gemm.csv (FP8:BF16 per shape)
  mid        bf16, then FP8, on the b = 1 shapes of XLA's table
             (validation/kernels/xla-h100-matmul.csv: m, n, k 256..4096),
             where the tile model picks 64x64 and 128x64 tiles that the lab
             grid never tested (docs/dev/kernel-model.md)
  attn_gemm  unfused attention's six batched GEMMs (scores, its two
             gradients, values, its two gradients) in the layouts Megatron
             calls them, head dims 32..256, s 1k..8k, bf16 then fp16
  attn_core  PyTorch's eager core (baddbmm, softmax, bmm) forward and
             backward, and the softmax alone, at the same sizes
  sdpa       scaled_dot_product_attention forward and backward, FLASH and
             cuDNN backends forced, causal and not, same sizes
  sustained  bf16 GEMMs back to back for 20 s each (4096^3, 8192^3,
             16384x8192x8192) and FP8 8192^3 when time is left, per
             100-launch window, with SM clock, power, temperature and clock
             event reasons sampled every 200 ms

Timing (shared/GPU.md item 5): CUDA events created beforehand, a spin kernel
holding the GPU while the host enqueues every launch, many launches between
one event pair for short kernels; nothing subtracted (lab_common.GpuTimer).
Inputs are random (never zeros); buffers rotate over more than 4x the L2.

Writes OUT/torch-kernels.json (everything, with clocks and versions) and the
tables `clustersim validate` reads: OUT/torch-gemm-<gpu>.csv (linear-layer
GEMMs, bf16 and fp8), OUT/torch-attn-gemm-<gpu>.csv (attention's batched
GEMMs), OUT/torch-attention-<gpu>.csv (eager core and FLASH rows, no mask).
Outputs are rewritten after every part, so a kill keeps what was measured.

--dry-run runs every code path on the CPU at tiny sizes (CUDA-only calls are
skipped, saying so): the numbers mean nothing, the formats are real.
"""

import argparse
import csv
import math
import os
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_common as lc  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

MAIN_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 8192)]
HEAD_DIMS = [32, 64, 80, 96, 128, 256]
SEQ_LENS = [1024, 2048, 4096, 8192]
# Shares of --budget-s per part (the rest of the budget is start-up and writing).
BUDGET = {"gap": 3, "gemm": 14, "grid": 24, "mid": 12, "attn_gemm": 18, "attn_core": 8, "sdpa": 22}
SUSTAINED = [("bf16", (4096, 4096, 4096), 20.0), ("bf16", (8192, 8192, 8192), 20.0),
             ("bf16", (16384, 8192, 8192), 20.0), ("fp8", (8192, 8192, 8192), 12.0)]


def table_shapes(relative_path, batch_one_only):
    """The distinct (m, n, k) of a GEMM table (relative to the repository root),
    smallest first; with batch_one_only, of its b = 1 rows only."""
    with open(os.path.join(REPO, relative_path)) as f:
        lines = [l for l in f if l.strip() and not l.lstrip().startswith("#")]
    shapes = []
    for row in csv.DictReader(lines):
        s = (int(row["m"]), int(row["n"]), int(row["k"]))
        if (not batch_one_only or int(row["b"]) == 1) and s not in shapes:
            shapes.append(s)
    shapes.sort(key=lambda s: (s[0] * s[1] * s[2], s))
    return shapes


class Lab:
    def __init__(self, args):
        import torch

        self.torch = torch
        self.args = args
        self.dry = args.dry_run
        self.out = lc.out_dir(args.out)
        self.errors = lc.Errors(self.out, "torch_kernels.py")
        self.deadline = lc.Deadline(args.budget_s)
        if not self.dry and not torch.cuda.is_available():
            raise SystemExit("torch_kernels.py: no CUDA device (use --dry-run on a CPU)")
        self.device = torch.device("cpu" if self.dry else "cuda")
        self.timer = lc.GpuTimer(torch, self.device)
        name = torch.cuda.get_device_name(0) if not self.dry else "CPU (dry run)"
        self.tag, self.datasheet, self.topology = lc.gpu_ids(name)
        self.device_name = name
        if self.dry:
            self.l2_bytes = 4 << 20
            self.free_bytes = 2 << 30
        else:
            props = torch.cuda.get_device_properties(0)
            self.l2_bytes = getattr(props, "L2_cache_size", 0) or (60 << 20)
            self.free_bytes = torch.cuda.mem_get_info()[0]
        self.sampler = lc.Sampler(0.2)
        self.result = {
            "about": "Issue 38 kernel measurements through PyTorch (scripts/lab/torch_kernels.py). Times are medians "
                     "of back-to-back launches behind a gate kernel, each including the GPU's launch-to-launch gap "
                     "(see launch_gap); t0_s/t1_s are seconds on the script's clock, the clock of `samples`.",
            "dry_run": self.dry,
            "started": lc.utc_now(),
            "device_name": name,
            "datasheet_id": self.datasheet,
            "versions": lc.versions(torch),
            "gpu_state_before": lc.gpu_state(),
            "budget_s": args.budget_s,
            "parts": {},
            "launch_gap": None,
            "gemm": [],
            "attention_gemm": [],
            "attention_core": [],
            "softmax": [],
            "sdpa": [],
            "sdpa_skipped": [],
            "sustained": [],
            "skipped": [],
        }
        if self.dry:
            self.result["dry_run_note"] = ("CPU dry run: tiny sizes, host clocks, no gate kernel, no sampler; "
                                           "the numbers mean nothing, the formats are real")

    # ------------------------------------------------------------ helpers
    def note_skip(self, part, what, why):
        self.result["skipped"].append({"part": part, "what": what, "why": why})

    def sets_for(self, set_bytes, cap=16):
        """Buffer sets so that their bytes exceed 4x the L2, within a quarter of free memory."""
        want = max(1, math.ceil(4 * self.l2_bytes / max(1, set_bytes)))
        fit = max(1, int(self.free_bytes // 4 // max(1, set_bytes)))
        return max(1, min(want, fit, cap))

    def idle(self, seconds):
        if not self.dry:
            self.timer.sync()
            time.sleep(seconds)

    def clocks(self, t0, t1):
        return self.sampler.summary(t0, t1)

    # ------------------------------------------------------------ outputs
    def write(self):
        r = self.result
        r["errors"] = self.errors.items
        r["samples_source"] = self.sampler.source
        r["samples_unavailable"] = self.sampler.unavailable
        r["samples_fields"] = ["t_s", "sm_mhz", "mem_mhz", "power_w", "temp_c", "clock_event_reasons"]
        r["samples"] = self.sampler.samples
        lc.write_json(os.path.join(self.out, "torch-kernels.json"), r)
        self.write_gemm_csv("torch-gemm", [g for g in r["gemm"] if g.get("median_s")],
                            "linear-layer GEMMs C[m,n] = A[m,k] B[k,n] in the forward layout (tn: "
                            "torch.mm(A, W.t()), W stored [n,k]); bf16 through cuBLAS, fp8 through "
                            "torch._scaled_mm (cuBLASLt: e4m3 x e4m3, per-tensor scales 1.0, bf16 out, fast "
                            "accumulation unless the section says otherwise); part 'gemm': 1 s idle before "
                            "each, part 'grid': 1 s before shapes of 2 TFLOP or more, 50 ms before the others, part "
                            "'mid': 20 ms before each")
        self.write_gemm_csv("torch-attn-gemm", [g for g in r["attention_gemm"] if g.get("median_s")],
                            "unfused attention's batched GEMMs, b = batch x heads, in the simulator's shapes "
                            "(models/src/unfused_attention.rs): scores (m=s,n=s,k=d, tn), scores.dgrad_q "
                            "(s,d,s, nn), scores.dgrad_k (d,s,s, nt), values (s,d,s, nn), values.dgrad_probs "
                            "(s,s,d, tn), values.dgrad_values (s,d,s, nt), one role after another as the "
                            "comments say; torch.bmm on transposed views")
        self.write_attention_csv()

    def header_lines(self, what):
        v = self.result["versions"]
        gap = self.result.get("launch_gap") or {}
        gap_ns = gap.get("gap_ns")
        lines = [
            f"# {what}.",
            f"# Measured by scripts/lab/torch_kernels.py on {self.device_name} ({self.result['started']}), torch "
            f"{v.get('torch')} (CUDA {v.get('torch_cuda')}), cuDNN {v.get('cudnn')}, driver {v.get('driver', '?')}, "
            f"wheels {v.get('wheels')}.",
            "# Each time: the median of 20 repeats of back-to-back launches behind a gate kernel (events made "
            "beforehand), buffers rotating over > 4x the L2, random inputs; it includes the GPU's "
            "launch-to-launch gap measured in the same run (the timing line below); torch-kernels.json has each "
            "row's spread, idle before, SM clock and power.",
            "# This project's own measurement (licence: the repository's).",
        ]
        if self.dry:
            lines.insert(0, "# DRY RUN on the CPU: the numbers mean nothing; only the format is real.")
        lines.append(f"# clustersim-gpu: {self.datasheet}")
        if gap_ns is None:
            lines.append("# The launch gap was not measured (the gap part failed): the line below says 0, "
                         "though each time includes one.")
        lines.append(f"# clustersim-timing: back-to-back {gap_ns or 0:.0f}")
        return lines

    def write_gemm_csv(self, stem, rows, what):
        lines = self.header_lines(what)
        lines.append("b,m,n,k,dtype,flops_per_s")
        section = None
        for g in sorted(rows, key=lambda g: (g["part"], g.get("role", ""))):  # stable: time order within
            label = f"{g['part']} {g.get('role', '')} layout {g.get('layout', '')}".strip()
            if label != section:
                lines.append(f"# {label}")
                section = label
            if g.get("gate_held") is False:
                lines.append(f"# (host outran the gate: {g['b']},{g['m']},{g['n']},{g['k']},{g['dtype']} left out)")
                continue
            rate = g["flops"] / g["median_s"]
            lines.append(f"{g['b']},{g['m']},{g['n']},{g['k']},{g['dtype']},{rate:.0f}")
        lc.write_text(os.path.join(self.out, f"{stem}-{self.tag}.csv"), "\n".join(lines) + "\n")

    def write_attention_csv(self):
        lines = self.header_lines(
            "Attention core runtimes in ms (the FlashAttention appendix's table format), no mask, no dropout: "
            "'pytorch' = PyTorch's eager core (baddbmm with alpha 1/sqrt(d), softmax, bmm; backward = autograd "
            "of the three); 'flashattention' = torch.nn.functional.scaled_dot_product_attention with "
            "SDPBackend.FLASH_ATTENTION forced (PyTorch's FlashAttention-2), Q/K/V as [b, s, heads, d] "
            "transposed views. cuDNN and causal rows are in torch-kernels.json (this format has no column for "
            "them)")
        # The attention table has no timing line; drop it (kernel_table ignores it, but keep it clean).
        lines = [l for l in lines if not l.startswith("# clustersim-timing")]
        lines.append("implementation,pass,dropout,batch,heads,seq_len,head_dim,dtype,ms")
        rows = []
        for c in self.result["attention_core"]:
            if c.get("median_s") and c.get("gate_held") is not False:
                rows.append(("pytorch", c))
        for a in self.result["sdpa"]:
            if a.get("median_s") and a["backend"] == "flash" and not a["causal"] and a.get("gate_held") is not False:
                rows.append(("flashattention", a))
        for impl, c in rows:
            lines.append(f"{impl},{c['pass']},0,{c['batch']},{c['heads']},{c['seq_len']},{c['head_dim']},"
                         f"{c['dtype']},{c['median_s'] * 1e3:.4f}")
        if not rows:
            lines.append("# (no rows measured)")
        lc.write_text(os.path.join(self.out, f"torch-attention-{self.tag}.csv"), "\n".join(lines) + "\n")

    # ------------------------------------------------------------ parts
    def run_part(self, name, fn, budget_s):
        started = lc.now_s()
        deadline = self.deadline.sub(budget_s)
        lc.log(f"part {name}: start (budget {budget_s:.0f} s, {self.deadline.left():.0f} s left in all)")
        status = "ok"
        try:
            fn(deadline)
        except Exception as e:  # one part's failure must not end the others
            status = f"failed: {type(e).__name__}: {e}"
            self.errors.add(name, e)
            if not self.dry:
                try:
                    self.torch.cuda.synchronize()
                    self.torch.cuda.empty_cache()
                except Exception:
                    pass
        self.result["parts"][name] = {"status": status, "seconds": round(lc.now_s() - started, 1),
                                      "budget_s": budget_s}
        lc.log(f"part {name}: {status} in {lc.now_s() - started:.1f} s")
        try:
            self.write()
        except Exception as e:
            self.errors.add(f"{name} (writing outputs)", e)

    def part_gap(self, deadline):
        torch = self.torch
        if self.dry:
            x = torch.zeros(1)
            t = self.timer.time(lambda i: x.add_(1.0), repeats=20)
            self.result["launch_gap"] = {"gap_ns": t["median_s"] * 1e9, "kernel": "x.add_(1) on the CPU (dry run)",
                                         **t}
            lc.log("gap: dry run, no empty kernel on the CPU (torch.cuda._sleep skipped)")
            return
        t = self.timer.time(lambda i: torch.cuda._sleep(0), repeats=20, target_group_s=100e-6, max_inner=30)
        x = torch.zeros(1, device=self.device)
        t2 = self.timer.time(lambda i: x.add_(1.0), repeats=20, target_group_s=100e-6, max_inner=30)
        self.result["launch_gap"] = {
            "gap_ns": t["median_s"] * 1e9,
            "kernel": "torch.cuda._sleep(0) back to back (an empty spin kernel): launch-to-launch time as the GPU "
                      "runs them, the quantity `# clustersim-timing: back-to-back NS` names",
            **t,
            "one_element_add_ns": t2["median_s"] * 1e9,
            "one_element_add": t2,
        }
        lc.log(f"gap: empty kernel {t['median_s'] * 1e9:.0f} ns, one-element add {t2['median_s'] * 1e9:.0f} ns "
               f"(gate held: {t['gate_held']}, {t2['gate_held']})")

    # ---- GEMMs
    def fp8_available(self):
        torch = self.torch
        if not hasattr(torch, "_scaled_mm"):
            return f"torch {torch.__version__} has no torch._scaled_mm"
        if not hasattr(torch, "float8_e4m3fn"):
            return f"torch {torch.__version__} has no float8_e4m3fn"
        if not self.dry:
            major, minor = torch.cuda.get_device_capability(0)
            if (major, minor) < (8, 9):
                return f"compute capability {major}.{minor} has no FP8 tensor cores"
        return None

    def gemm_launcher(self, dtype, m, n, k, fast_accum=True):
        """(launch(i), check(), buffer_sets) for C = A @ W.t() in `dtype`."""
        torch = self.torch
        dev = self.device
        if dtype == "fp8":
            in_bytes = 1
        else:
            in_bytes = 2
        set_bytes = (m * k + n * k) * in_bytes + m * n * 2
        sets = self.sets_for(set_bytes, cap=256)
        As, Ws, Cs = [], [], []
        for _ in range(sets):
            if dtype == "fp8":
                As.append((torch.rand(m, k, device=dev) * 2 - 1).to(torch.float8_e4m3fn))
                Ws.append((torch.rand(n, k, device=dev) * 2 - 1).to(torch.float8_e4m3fn))
            else:
                tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
                As.append(torch.randn(m, k, device=dev, dtype=tdt))
                Ws.append(torch.randn(n, k, device=dev, dtype=tdt))
                Cs.append(torch.empty(m, n, device=dev, dtype=tdt))
        if dtype == "fp8":
            one = torch.ones((), device=dev, dtype=torch.float32)

            def mm(i):
                r = torch._scaled_mm(As[i], Ws[i].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                     use_fast_accum=fast_accum)
                return r[0] if isinstance(r, tuple) else r

            def launch(i):
                mm(i % sets)

            def check():
                out = mm(0)
                written = bool(torch.isfinite(out).all().item())
                rows = min(m, 256)
                ref = As[0][:rows].float() @ Ws[0].float().t()
                got = out[:rows].float()
                err = float((got.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-30))
                return {"relative_error": err, "all_written": written}
        else:
            def launch(i):
                j = i % sets
                torch.mm(As[j], Ws[j].t(), out=Cs[j])

            def check():
                rows = min(m, 256)
                return lc.poison_check(
                    torch, Cs[0], lambda: launch(0),
                    lambda: (As[0][:rows].float() @ Ws[0].float().t(), Cs[0][:rows].float()))
        return launch, check, sets

    def time_gemm(self, part, dtype, shape, idle_s, fast_accum=True, check=True):
        m, n, k = shape
        launch, checker, sets = self.gemm_launcher(dtype, m, n, k, fast_accum)
        flops = 2.0 * m * n * k
        chk = None
        if check:
            try:
                chk = checker()
            except Exception as e:
                chk = {"error": f"{type(e).__name__}: {e}"}
        self.idle(idle_s)
        t0 = lc.now_s()
        t = self.timer.time(launch, repeats=20, warmup=5)
        t1 = lc.now_s()
        role = "linear forward" if (dtype != "fp8" or fast_accum) else \
            "linear forward, fp8 without fast accumulation (TE's dgrad/wgrad setting)"
        row = {"part": part, "role": role, "layout": "tn", "b": 1, "m": m, "n": n, "k": k,
               "dtype": dtype, "flops": flops, **t, "tflops": flops / t["median_s"] / 1e12,
               "buffer_sets": sets, "idle_before_s": idle_s, "t0_s": round(t0, 3), "t1_s": round(t1, 3),
               "clocks": self.clocks(t0, t1), "check": chk}
        if dtype == "fp8":
            row["fp8"] = {"a": "e4m3", "b": "e4m3", "scales": "per-tensor 1.0", "out": "bf16",
                          "use_fast_accum": fast_accum, "call": "torch._scaled_mm(A, W.t())"}
        return row

    def part_gemm(self, deadline):
        shapes = [(64, 64, 64), (128, 128, 128), (256, 128, 128)] if self.dry else MAIN_SHAPES
        fp8_why = self.fp8_available()
        for shape in shapes:
            plan = [("bf16", True), ("fp8", True), ("fp8", False)]
            for dtype, fast in plan:
                if deadline.left() < 2:
                    self.note_skip("gemm", f"{dtype} {shape}", "budget")
                    continue
                if dtype == "fp8" and fp8_why:
                    self.note_skip("gemm", f"fp8 {shape}", fp8_why)
                    continue
                try:
                    row = self.time_gemm("gemm", dtype, shape, idle_s=1.0, fast_accum=fast)
                    self.result["gemm"].append(row)
                    lc.log(f"gemm {dtype}{'' if fast else ' (no fast accum)'} {shape}: {row['tflops']:.1f} "
                           f"TFLOP/s, err {row['check']}")
                except Exception as e:
                    self.errors.add(f"gemm {dtype} {shape}", e)
                finally:
                    self.free()
        # FP8:BF16 at the main shapes
        self.result["fp8_over_bf16_main"] = self.ratios([g for g in self.result["gemm"] if g["part"] == "gemm"])

    def ratios(self, rows):
        out = []
        bf = {(g["m"], g["n"], g["k"]): g for g in rows if g["dtype"] == "bf16"}
        for g in rows:
            if g["dtype"] == "fp8" and (g["m"], g["n"], g["k"]) in bf and g.get("fp8", {}).get("use_fast_accum"):
                b = bf[(g["m"], g["n"], g["k"])]
                out.append({"m": g["m"], "n": g["n"], "k": g["k"], "bf16_tflops": b["tflops"],
                            "fp8_tflops": g["tflops"], "fp8_over_bf16": g["tflops"] / b["tflops"]})
        return out

    def part_grid(self, deadline):
        shapes = table_shapes(self.args.lab_grid, batch_one_only=False)
        self.result["grid_shapes_read"] = len(shapes)
        if self.dry:  # the parser runs on the real table; the CPU times its first shapes scaled down
            shapes = [tuple(max(16, x // 8) for x in s) for s in shapes[:3]]
        fp8_why = self.fp8_available()
        for shape in shapes:
            m, n, k = shape
            big = 2.0 * m * n * k >= 2e12
            for dtype in ("bf16", "fp8"):
                if deadline.left() < (3 if big else 1):
                    self.note_skip("grid", f"{dtype} {shape}", "budget")
                    continue
                if dtype == "fp8" and fp8_why:
                    self.note_skip("grid", f"fp8 {shape}", fp8_why)
                    continue
                try:
                    row = self.time_gemm("grid", dtype, shape, idle_s=1.0 if big else 0.05,
                                         check=(dtype == "fp8" or m * n * k <= 1024 ** 3))
                    self.result["gemm"].append(row)
                except Exception as e:
                    self.errors.add(f"grid {dtype} {shape}", e)
                finally:
                    self.free()
        self.result["fp8_over_bf16_grid"] = self.ratios([g for g in self.result["gemm"] if g["part"] == "grid"])
        r = self.result["fp8_over_bf16_grid"]
        if r:
            lc.log(f"grid: {len(r)} shapes with both; FP8:BF16 from {min(x['fp8_over_bf16'] for x in r):.2f} "
                   f"to {max(x['fp8_over_bf16'] for x in r):.2f}")

    def part_mid(self, deadline):
        """bf16 on every shape first (the tile model's blind spot), then FP8 while time is left."""
        shapes = table_shapes(self.args.mid_table, batch_one_only=True)
        self.result["mid_shapes_read"] = len(shapes)
        if self.dry:  # the parser runs on the real table; the CPU times its first shapes scaled down
            shapes = [tuple(max(16, x // 16) for x in s) for s in shapes[:3]]
        fp8_why = self.fp8_available()
        for dtype in ("bf16", "fp8"):
            if dtype == "fp8" and fp8_why:
                self.note_skip("mid", "fp8", fp8_why)
                continue
            for shape in shapes:
                if deadline.left() < 1:
                    self.note_skip("mid", f"{dtype} {shape}", "budget")
                    continue
                try:
                    row = self.time_gemm("mid", dtype, shape, idle_s=0.02, check=(dtype == "fp8"))
                    self.result["gemm"].append(row)
                except Exception as e:
                    self.errors.add(f"mid {dtype} {shape}", e)
                finally:
                    self.free()
        done = [g for g in self.result["gemm"] if g["part"] == "mid"]
        lc.log(f"mid: {sum(g['dtype'] == 'bf16' for g in done)} bf16 and {sum(g['dtype'] == 'fp8' for g in done)} "
               f"fp8 shapes of {len(shapes)}")

    def free(self):
        if not self.dry:
            self.torch.cuda.empty_cache()

    # ---- attention sizes
    def attention_sizes(self):
        if self.dry:
            return [32, 64], [64, 128]
        return HEAD_DIMS, SEQ_LENS

    def bh_for(self, s):
        """batch x heads of the unfused core: 64, fewer where one s x s tensor would pass 2 GiB."""
        if self.dry:
            return 2
        return max(1, min(64, (2 << 30) // (2 * s * s)))

    def part_attn_gemm(self, deadline):
        torch = self.torch
        dev = self.device
        dims, seqs = self.attention_sizes()
        for dtype in ("bf16", "fp16"):
            tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
            for d in dims:
                for s in seqs:
                    if deadline.left() < 2:
                        self.note_skip("attn_gemm", f"{dtype} d={d} s={s}", "budget")
                        continue
                    try:
                        self.attn_gemm_one(tdt, dtype, d, s, check=(d == 64 and s == seqs[0]))
                    except Exception as e:
                        self.errors.add(f"attn_gemm {dtype} d={d} s={s}", e)
                    finally:
                        self.free()

    def attn_gemm_one(self, tdt, dtype, d, s, check):
        torch = self.torch
        dev = self.device
        bh = self.bh_for(s)
        small = bh * s * d
        big = bh * s * s
        set_bytes = 2 * (6 * small + 2 * big)
        sets = self.sets_for(set_bytes, cap=8)
        bufs = []
        for _ in range(sets):
            bufs.append({
                "q": torch.randn(bh, s, d, device=dev, dtype=tdt),
                "k": torch.randn(bh, s, d, device=dev, dtype=tdt),
                "v": torch.randn(bh, s, d, device=dev, dtype=tdt),
                "do": torch.randn(bh, s, d, device=dev, dtype=tdt),
                # scores-sized input (P or dS: softmax-like values) and output
                "p": torch.rand(bh, s, s, device=dev, dtype=tdt) / s,
                "ss": torch.empty(bh, s, s, device=dev, dtype=tdt),
                "sd": torch.empty(bh, s, d, device=dev, dtype=tdt),
                "ds_t": torch.empty(bh, d, s, device=dev, dtype=tdt),
            })
        # role: (m, n, k, layout, fn(buffers) -> (out, a, b) as row-major operands)
        roles = [
            ("scores", s, s, d, "tn", lambda B: (B["ss"], B["q"], B["k"].transpose(1, 2))),
            ("scores.dgrad_q", s, d, s, "nn", lambda B: (B["sd"], B["p"], B["k"])),
            ("scores.dgrad_k", d, s, s, "nt", lambda B: (B["ds_t"], B["q"].transpose(1, 2), B["p"])),
            ("values", s, d, s, "nn", lambda B: (B["sd"], B["p"], B["v"])),
            ("values.dgrad_probs", s, s, d, "tn", lambda B: (B["ss"], B["do"], B["v"].transpose(1, 2))),
            ("values.dgrad_values", s, d, s, "nt", lambda B: (B["sd"], B["p"].transpose(1, 2), B["do"])),
        ]
        for role, m, n, k, layout, pick in roles:
            ops = [pick(B) for B in bufs]

            def launch(i, ops=ops):
                out, a, b = ops[i % len(ops)]
                torch.bmm(a, b, out=out)

            chk = None
            if check:
                out, a, b = ops[0]
                try:
                    chk = lc.poison_check(torch, out, lambda: launch(0),
                                          lambda: (a[0].float() @ b[0].float(), out[0].float()))
                except Exception as e:
                    chk = {"error": f"{type(e).__name__}: {e}"}
            t0 = lc.now_s()
            t = self.timer.time(launch, repeats=20, warmup=3)
            t1 = lc.now_s()
            flops = 2.0 * bh * m * n * k
            self.result["attention_gemm"].append({
                "part": "attn_gemm", "role": role, "layout": layout, "b": bh, "m": m, "n": n, "k": k,
                "dtype": dtype, "head_dim": d, "seq_len": s, "flops": flops, **t,
                "tflops": flops / t["median_s"] / 1e12, "buffer_sets": sets, "t0_s": round(t0, 3),
                "t1_s": round(t1, 3), "clocks": self.clocks(t0, t1), "check": chk})
        rows = self.result["attention_gemm"][-6:]
        lc.log(f"attn_gemm {dtype} d={d} s={s} bh={bh}: " + ", ".join(
            f"{r['role']} {r['tflops']:.0f}" for r in rows) + " TFLOP/s")

    def part_attn_core(self, deadline):
        torch = self.torch
        dev = self.device
        dims, seqs = self.attention_sizes()
        for dtype in ("bf16", "fp16"):
            tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
            for d in dims:
                for s in seqs:
                    if deadline.left() < 2:
                        self.note_skip("attn_core", f"{dtype} d={d} s={s}", "budget")
                        continue
                    try:
                        self.attn_core_one(tdt, dtype, d, s, with_softmax=(d == dims[0]))
                    except Exception as e:
                        self.errors.add(f"attn_core {dtype} d={d} s={s}", e)
                    finally:
                        self.free()

    def attn_core_one(self, tdt, dtype, d, s, with_softmax):
        torch = self.torch
        dev = self.device
        bh = self.bh_for(s)
        heads = min(16, bh)
        batch = bh // heads
        q = torch.randn(bh, s, d, device=dev, dtype=tdt, requires_grad=True)
        k = torch.randn(bh, s, d, device=dev, dtype=tdt, requires_grad=True)
        v = torch.randn(bh, s, d, device=dev, dtype=tdt, requires_grad=True)
        do = torch.randn(bh, s, d, device=dev, dtype=tdt)
        alpha = 1.0 / math.sqrt(d)
        buf = torch.empty(bh, s, s, device=dev, dtype=tdt)

        def core(q, k, v):
            scores = torch.baddbmm(buf, q, k.transpose(1, 2), beta=0.0, alpha=alpha)
            return torch.bmm(torch.softmax(scores, dim=-1), v)

        base = {"batch": batch, "heads": heads, "seq_len": s, "head_dim": d, "dtype": dtype,
                "implementation": "pytorch eager: baddbmm(alpha=1/sqrt(d)), softmax, bmm"}
        with torch.no_grad():
            t0 = lc.now_s()
            t = self.timer.time(lambda i: core(q, k, v), repeats=20, warmup=3, kernels_per_launch=3)
            t1 = lc.now_s()
        self.result["attention_core"].append({**base, "pass": "forward", **t, "t0_s": round(t0, 3),
                                              "t1_s": round(t1, 3), "clocks": self.clocks(t0, t1)})
        out = core(q, k, v)
        t0 = lc.now_s()
        t = self.timer.time(lambda i: torch.autograd.grad(out, (q, k, v), do, retain_graph=True), repeats=20,
                            warmup=3, kernels_per_launch=8)
        t1 = lc.now_s()
        self.result["attention_core"].append({**base, "pass": "backward", **t, "t0_s": round(t0, 3),
                                              "t1_s": round(t1, 3), "clocks": self.clocks(t0, t1)})
        del out
        f, b = self.result["attention_core"][-2:]
        lc.log(f"attn_core {dtype} d={d} s={s} bh={bh}: forward {f['median_s'] * 1e3:.3f} ms, backward "
               f"{b['median_s'] * 1e3:.3f} ms")
        if with_softmax:
            with torch.no_grad():
                x = torch.randn(bh, s, s, device=dev, dtype=tdt)
                p = torch.softmax(x, dim=-1)
                g = torch.randn(bh, s, s, device=dev, dtype=tdt)
                elems = bh * s * s
                t = self.timer.time(lambda i: torch.softmax(x, dim=-1), repeats=20, warmup=3)
                self.result["softmax"].append({"pass": "forward", "bh": bh, "seq_len": s, "dtype": dtype,
                                               "elems": elems, "bytes": 4 * elems, **t,
                                               "gb_per_s": 4 * elems / t["median_s"] / 1e9})
                t = self.timer.time(lambda i: torch._softmax_backward_data(g, p, -1, tdt), repeats=20, warmup=3)
                self.result["softmax"].append({"pass": "backward", "bh": bh, "seq_len": s, "dtype": dtype,
                                               "elems": elems, "bytes": 6 * elems, **t,
                                               "gb_per_s": 6 * elems / t["median_s"] / 1e9})

    # ---- fused attention
    def sdpa_context(self, backend):
        """A context manager forcing one SDPA backend, or (None, why)."""
        torch = self.torch
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
        except Exception as e:
            if backend == "flash" and hasattr(torch.backends.cuda, "sdp_kernel"):
                return (lambda: torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                                               enable_mem_efficient=False)), None
            return None, f"torch.nn.attention.sdpa_kernel unavailable ({e})"
        name = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}[backend]
        member = getattr(SDPBackend, name, None)
        if member is None:
            return None, f"SDPBackend.{name} not in torch {torch.__version__}"
        return (lambda: sdpa_kernel([member])), None

    def part_sdpa(self, deadline):
        torch = self.torch
        dims, seqs = self.attention_sizes()
        backends = ["flash", "cudnn"]
        contexts = {}
        for b in backends:
            ctx, why = self.sdpa_context(b)
            contexts[b] = ctx
            if why:
                self.result["sdpa_skipped"].append({"backend": b, "why": why})
        self.sdpa_checks(contexts)
        # Priority: bf16 no mask, bf16 causal, fp16 no mask, fp16 causal.
        for dtype in ("bf16", "fp16"):
            for causal in (False, True):
                for d in dims:
                    for s in seqs:
                        for b in backends:
                            if contexts[b] is None:
                                continue
                            if deadline.left() < 2:
                                self.note_skip("sdpa", f"{b} {dtype} causal={causal} d={d} s={s}", "budget")
                                continue
                            try:
                                self.sdpa_one(b, contexts[b], dtype, causal, d, s)
                            except Exception as e:
                                self.errors.add(f"sdpa {b} {dtype} causal={causal} d={d} s={s}", e)
                            finally:
                                self.free()
        self.result["profile_attention_entries"] = self.profile_entries()

    def sdpa_tensors(self, tdt, batch, heads, s, d, grad, layout="bshd"):
        torch = self.torch
        if layout == "bshd":  # [b, s, heads, d] as a QKV projection leaves them, viewed as [b, heads, s, d]
            mk = lambda: torch.randn(batch, s, heads, d, device=self.device, dtype=tdt).transpose(1, 2)
        else:  # contiguous [b, heads, s, d]
            mk = lambda: torch.randn(batch, heads, s, d, device=self.device, dtype=tdt)
        q, k, v = mk(), mk(), mk()
        if grad:
            for t in (q, k, v):
                t.requires_grad_(True)
        return q, k, v

    def sdpa_checks(self, contexts):
        """Each backend's output against the float32 math path on one small case."""
        torch = self.torch
        F = torch.nn.functional
        checks = []
        s, d = (128, 64) if self.dry else (1024, 64)
        for b, ctx in contexts.items():
            if ctx is None:
                continue
            for dtype, tdt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
                tried = []
                for layout in ("bshd", "bhsd"):
                    try:
                        q, k, v = self.sdpa_tensors(tdt, 1, 4, s, d, grad=False, layout=layout)
                        with warnings.catch_warnings(record=True) as w:
                            warnings.simplefilter("always")
                            with ctx():
                                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
                        err = float((out.double() - ref.double()).norm() / ref.double().norm())
                        checks.append({"backend": b, "dtype": dtype, "layout": layout, "relative_error": err,
                                       "warnings": [str(x.message)[:300] for x in w], "refused": tried})
                        break
                    except Exception as e:
                        tried.append(f"{layout}: {type(e).__name__}: {str(e)[:400]}")
                else:
                    checks.append({"backend": b, "dtype": dtype, "error": " | ".join(tried)})
        self.result["sdpa_checks"] = checks
        lc.log("sdpa checks: " + "; ".join(
            f"{c['backend']} {c['dtype']} " + (f"err {c['relative_error']:.1e}" if "relative_error" in c
                                               else c["error"][:80]) for c in checks))

    def sdpa_one(self, backend, ctx, dtype, causal, d, s):
        torch = self.torch
        F = torch.nn.functional
        tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
        heads = 2 if self.dry else 16
        # ~32 GFLOP forward (benchmark convention, no mask): long enough to time, small in memory.
        per_batch = 4.0 * heads * s * s * d
        batch = 1 if self.dry else max(1, round(32e9 / per_batch))
        fwd_flops = per_batch * batch * (0.5 if causal else 1.0)
        base = {"backend": backend, "dtype": dtype, "causal": causal, "batch": batch, "heads": heads,
                "seq_len": s, "head_dim": d}
        refused = []
        out = None
        # The layout a model hands SDPA first; a contiguous one if the backend refuses that.
        for layout, text in (("bshd", "q,k,v [b, s, heads, d] viewed as [b, heads, s, d]"),
                             ("bhsd", "q,k,v contiguous [b, heads, s, d]")):
            q, k, v = self.sdpa_tensors(tdt, batch, heads, s, d, grad=True, layout=layout)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    with ctx():
                        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    base["layout"] = text
                    break
                except Exception as e:
                    refused.append({"layout": text, "why": f"{type(e).__name__}: {str(e)[:300]}",
                                    "warnings": [str(x.message)[:300] for x in w]})
        if refused:
            self.result["sdpa_skipped"].append({**base, "refused": refused, "then": base.get("layout")})
        if out is None:
            return
        do = torch.randn_like(out)
        with ctx():
            with torch.no_grad():
                t0 = lc.now_s()
                tf = self.timer.time(lambda i: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                                     repeats=20, warmup=3)
                t1 = lc.now_s()
            self.result["sdpa"].append({**base, "pass": "forward", **tf, "benchmark_flops": fwd_flops,
                                        "tflops": fwd_flops / tf["median_s"] / 1e12, "t0_s": round(t0, 3),
                                        "t1_s": round(t1, 3), "clocks": self.clocks(t0, t1)})
            t0 = lc.now_s()
            tb = self.timer.time(lambda i: torch.autograd.grad(out, (q, k, v), do, retain_graph=True),
                                 repeats=20, warmup=3, kernels_per_launch=4)
            t1 = lc.now_s()
            self.result["sdpa"].append({**base, "pass": "backward", **tb, "benchmark_flops": 2.5 * fwd_flops,
                                        "tflops": 2.5 * fwd_flops / tb["median_s"] / 1e12, "t0_s": round(t0, 3),
                                        "t1_s": round(t1, 3), "clocks": self.clocks(t0, t1)})
        lc.log(f"sdpa {backend} {dtype} causal={int(causal)} d={d} s={s} b={batch}: fwd "
               f"{fwd_flops / tf['median_s'] / 1e12:.0f}, bwd {2.5 * fwd_flops / tb['median_s'] / 1e12:.0f} TFLOP/s")

    def profile_entries(self):
        """cuDNN rows as the profile's `attention.measured` entries (bf16, FlashAttention's FLOP convention)."""
        entries = []
        for a in self.result["sdpa"]:
            if a["backend"] != "cudnn" or a["dtype"] != "bf16" or not a.get("median_s"):
                continue
            entries.append({"direction": a["pass"], "head_dim": a["head_dim"], "seq_len": a["seq_len"],
                            "causal": a["causal"], "flops_per_s": round(a["benchmark_flops"] / a["median_s"], -9),
                            "source": "measured",
                            "note": f"scripts/lab/torch_kernels.py on {self.device_name}: SDPA with "
                                    f"SDPBackend.CUDNN_ATTENTION, bf16, batch {a['batch']} x {a['heads']} heads, "
                                    f"median of 20 back-to-back (burst) runs, {self.result['started']}"})
        return entries

    # ---- sustained
    def part_sustained(self, deadline):
        torch = self.torch
        plan = list(SUSTAINED)
        if self.dry:
            plan = [("bf16", (128, 128, 128), 1.0), ("fp8", (128, 128, 128), 0.5)]
        if self.fp8_available():
            self.note_skip("sustained", "fp8", self.fp8_available())
            plan = [p for p in plan if p[0] != "fp8"]
        if self.args.sustained_s is not None and not self.dry:
            plan = [(dt, sh, min(sec, self.args.sustained_s)) for dt, sh, sec in plan]
        left = deadline.left() - 2.0 - 2.0 * len(plan)
        total = sum(p[2] for p in plan)
        if left < total:
            plan_b = [p for p in plan if p[0] != "fp8"]
            scale = max(0.0, left / max(1e-9, sum(p[2] for p in plan_b)))
            if plan != plan_b:
                self.note_skip("sustained", "fp8 8192^3", f"budget ({left:.0f} s left for {total:.0f} s)")
            plan = [(dt, sh, sec * min(1.0, scale)) for dt, sh, sec in plan_b]
        for dtype, shape, seconds in plan:
            if seconds < 2.0 and not self.dry:
                self.note_skip("sustained", f"{dtype} {shape}", f"budget (only {seconds:.1f} s)")
                continue
            try:
                self.sustained_one(dtype, shape, seconds)
            except Exception as e:
                self.errors.add(f"sustained {dtype} {shape}", e)
            finally:
                self.free()

    def sustained_one(self, dtype, shape, seconds, window=100):
        torch = self.torch
        if self.dry:
            window = 5
        m, n, k = shape
        launch, _, sets = self.gemm_launcher(dtype, m, n, k)
        flops = 2.0 * m * n * k
        for i in range(3):
            launch(i)
        self.timer.sync()
        windows = []  # (end_event, launches)
        if self.dry:
            t_start = lc.now_s()
            i = 0
            marks = [time.perf_counter()]
            while lc.now_s() - t_start < seconds:
                for _ in range(window):
                    launch(i)
                    i += 1
                marks.append(time.perf_counter())
            times = [b - a for a, b in zip(marks, marks[1:])]
            ends = [t_start + (mk - marks[0]) for mk in marks[1:]]
        else:
            start = torch.cuda.Event(enable_timing=True)
            start.record()
            start.synchronize()  # the GPU is idle: it passes the event now
            t_start = lc.now_s()
            i = 0
            while True:
                for _ in range(window):
                    launch(i)
                    i += 1
                e = torch.cuda.Event(enable_timing=True)
                e.record()
                windows.append(e)
                if len(windows) > 3:
                    windows[-4].synchronize()  # keep the host at most 3 windows ahead
                if lc.now_s() - t_start >= seconds:
                    break
            torch.cuda.synchronize()
            marks_ms = [0.0] + [start.elapsed_time(e) for e in windows]
            times = [(b - a) / 1e3 for a, b in zip(marks_ms, marks_ms[1:])]
            ends = [t_start + mk / 1e3 for mk in marks_ms[1:]]
        rows = []
        begin = t_start
        for t, end in zip(times, ends):
            c = self.clocks(begin, end) or {}
            rows.append([round(end - t_start, 4), round(t / window * 1e6, 3), round(flops * window / t / 1e12, 2),
                         c.get("sm_mhz"), c.get("power_w"), c.get("temp_c"), ",".join(c.get("reasons", []))])
            begin = end
        third = max(1, len(rows) // 3)
        last = rows[-third:]
        med = lambda xs: lc.quartiles([x for x in xs if x is not None])[1]
        first_tflops = rows[0][2] if rows else None
        summary = {
            "dtype": dtype, "m": m, "n": n, "k": k, "seconds": round(ends[-1] - t_start, 2) if ends else 0,
            "launches": i, "window_launches": window, "windows": len(rows), "buffer_sets": sets,
            "first_window_tflops": first_tflops,
            "sustained_tflops": med([r[2] for r in last]),
            "sustained_sm_mhz": med([r[3] for r in last]),
            "sustained_power_w": med([r[4] for r in last]),
            "sustained_temp_c": med([r[5] for r in last]),
            "reasons_last_third": sorted({x for r in last for x in (r[6].split(",") if r[6] else [])}),
            "sustained_is": "median TFLOP/s of the last third of the windows",
            "window_fields": ["end_s", "us_per_gemm", "tflops", "sm_mhz", "power_w", "temp_c", "reasons"],
            "window_rows": rows,
            "t0_s": round(t_start, 3),
        }
        burst = [g for g in self.result["gemm"] if (g["m"], g["n"], g["k"]) == shape and g["dtype"] == dtype
                 and g.get("fp8", {}).get("use_fast_accum", True)]
        if burst and summary["sustained_tflops"]:
            summary["burst_tflops"] = burst[0]["tflops"]
            summary["sustained_over_burst"] = summary["sustained_tflops"] / burst[0]["tflops"]
        self.result["sustained"].append(summary)
        lc.log(f"sustained {dtype} {shape} {summary['seconds']} s: first window {first_tflops} TFLOP/s, last third "
               f"{summary['sustained_tflops']} TFLOP/s at {summary['sustained_sm_mhz']} MHz, "
               f"{summary['sustained_power_w']} W, ratio {summary.get('sustained_over_burst')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="output folder (default: $OUT, else ./lab-out)")
    ap.add_argument("--budget-s", type=float, default=165.0, help="seconds for all parts (default 165)")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes: exercise every code path")
    ap.add_argument("--lab-grid", default="validation/kernels/lab-h100-gemm.csv",
                    help="the GEMM table whose m,n,k are timed (relative to the repository root)")
    ap.add_argument("--mid-table", default="validation/kernels/xla-h100-matmul.csv",
                    help="the GEMM table whose b = 1 m,n,k the 'mid' part times (relative to the repository root)")
    ap.add_argument("--sustained-s", type=float, default=None, help="cap each sustained run (default 20 s)")
    ap.add_argument("--parts", default="gap,gemm,grid,mid,attn_gemm,attn_core,sdpa,sustained",
                    help="comma-separated parts to run, in the fixed order")
    args = ap.parse_args()
    lab = Lab(args)
    lab.sampler.start()
    lc.log(f"torch_kernels: {lab.device_name}, torch {lab.torch.__version__}, L2 {lab.l2_bytes >> 20} MiB, "
           f"free {lab.free_bytes / 2**30:.1f} GiB, sampler {lab.sampler.source or lab.sampler.unavailable}")
    wanted = set(args.parts.split(","))
    parts = [("gap", lab.part_gap), ("gemm", lab.part_gemm), ("grid", lab.part_grid),
             ("mid", lab.part_mid),
             ("attn_gemm", lab.part_attn_gemm), ("attn_core", lab.part_attn_core), ("sdpa", lab.part_sdpa),
             ("sustained", lab.part_sustained)]
    scale = args.budget_s / 165.0
    for name, fn in parts:
        if name not in wanted:
            continue
        budget = BUDGET.get(name, 0) * scale if name != "sustained" else lab.deadline.left()
        if lab.dry:
            budget = max(budget, 60)
        lab.run_part(name, fn, budget)
    lab.result["gpu_state_after"] = lc.gpu_state()
    try:  # cuBLAS/cuBLASLt/cuDNN load lazily: which files this process ended up with
        lab.result["loaded_libraries"] = lc.loaded_libraries(("libcublas", "libcublasLt", "libcudnn", "libnccl"))
    except Exception as e:
        lab.result["loaded_libraries"] = f"unavailable: {e}"
    lab.result["finished"] = lc.utc_now()
    lab.sampler.stop()
    lab.write()
    lc.log(f"torch_kernels: done, {len(lab.errors.items)} error(s)")


if __name__ == "__main__":
    main()
