#!/usr/bin/env python3
"""Ground truth for issue 38: a real single-GPU training step in plain PyTorch.

  python3 scripts/lab/torch_step.py [--out DIR] [--budget-s 80] [--dry-run]

A GPT-style decoder (the simulator's default block: pre-LayerNorm, fused QKV
Linear with bias, causal attention through scaled_dot_product_attention,
output projection, GELU (tanh) MLP of 4h, residual adds; learned position
embeddings, word embedding tied to the output layer, final LayerNorm, fp32
cross-entropy; no dropout) with bf16 parameters, gradients and activations,
and fp32 master weights stepped by torch.optim.AdamW(fused=True), the
optimizer step laid out as Megatron's unfused one: copy the bf16 gradients
to fp32 main gradients, zero the bf16 gradients, clip the gradient norm at
1.0 (norm, then scale), fused AdamW on the masters, copy the masters back to
the bf16 parameters. One GPU, no parallelism, no activation recompute.

Per configuration (about 6, hidden 2048/4096, head dims 64/128, s 2048/4096,
microbatch 1-4, 4-8 layers, smallest first while the budget lasts): 3
warm-up steps, then at least 10 timed steps with CUDA events around forward
(including the loss), backward and optimizer; the median of each; then one
step under torch.profiler, its GPU kernels classed as `clustersim
import-trace` classes them (attention, GEMM, else memory-bound; DtoD copies
and memsets memory-bound) and by phase (each kernel's launch falls in the
forward, backward or optimizer range).

Writes OUT/torch-steps.json (everything: models, layout, precision, phase
and class times, top kernels, versions, GPU state, clocks) and
OUT/torch-steps-cases.json (validation/dev-set.json's format, one
`scenario` case per configuration: `clustersim validate` predicts
iteration_time_s, gemm_s, attention_s and memory_bound_s for each).

--dry-run runs every code path on the CPU at tiny sizes (the profiler then
sees CPU operators, not kernels, and says so): formats real, numbers not.
"""

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_common as lc  # noqa: E402

VOCAB = 32768
# Smallest first: (layers, hidden, heads, seq_len, microbatch)
CONFIGS = [
    (8, 2048, 32, 2048, 4),   # d = 64
    (8, 2048, 16, 2048, 4),   # d = 128
    (8, 2048, 16, 4096, 2),   # d = 128, long sequence
    (4, 4096, 32, 2048, 2),   # d = 128
    (4, 4096, 64, 4096, 1),   # d = 64, long sequence
    (6, 4096, 32, 4096, 2),   # d = 128, long sequence, the largest
]
EXTRA = [
    (4, 2048, 32, 2048, 1),   # a small step: where host issue shows
    (8, 4096, 32, 2048, 4),
]
DRY_CONFIGS = [(2, 64, 4, 32, 2), (2, 64, 2, 64, 1)]


def class_of(name):
    """`clustersim import-trace`'s rule (studies/src/kineto.rs class_of)."""
    n = name.lower()
    if any(p in n for p in ("flash", "fmha", "sdpa", "attn", "attention")):
        return "attention"
    if "nccl" in n:
        return "communication"
    if any(p in n for p in ("gemm", "xmma", "cutlass", "nvjet", "cublas", "wgmma", "matmul")):
        return "gemm"
    return "memory_bound"


def build(torch, cfg, device, attention_ctx):
    nn = torch.nn
    F = torch.nn.functional
    layers, hidden, heads, seq_len, _ = cfg
    d = hidden // heads
    ffn = 4 * hidden

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc1 = nn.Linear(hidden, ffn)
            self.fc2 = nn.Linear(ffn, hidden)

        def forward(self, x):
            b, s, h = x.shape
            qkv = self.qkv(self.ln1(x)).view(b, s, 3, heads, d)
            q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))  # [b, heads, s, d] views
            with attention_ctx():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(o.transpose(1, 2).reshape(b, s, h))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, hidden)
            self.wpe = nn.Embedding(seq_len, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(hidden)

        def forward(self, idx, targets):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.blocks:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # tied output layer
            return F.cross_entropy(logits.view(-1, VOCAB).float(), targets.view(-1))

    with torch.device(device):  # initialised where it runs (a CPU init of 1.4 B parameters takes seconds)
        model = GPT()
    with torch.no_grad():  # GPT-2's initialisation: N(0, 0.02) weights, zero biases, unit norms
        for mod in model.modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                mod.weight.normal_(0.0, 0.02)
            if isinstance(mod, nn.Linear) and mod.bias is not None:
                mod.bias.zero_()
    return model.to(dtype=torch.bfloat16)


class Optimizer:
    """Megatron's unfused mixed-precision step on bf16 parameters with fp32 masters."""

    def __init__(self, torch, params, dry):
        self.torch = torch
        self.params = [p for p in params if p.requires_grad]
        self.masters = [p.detach().float().clone() for p in self.params]
        self.main_grads = [torch.zeros_like(m) for m in self.masters]
        for m, g in zip(self.masters, self.main_grads):
            m.grad = g
        try:
            self.adam = torch.optim.AdamW(self.masters, lr=1e-4, weight_decay=0.1, fused=True)
            self.kind = "torch.optim.AdamW(fused=True)"
        except Exception as e:  # a torch without the fused AdamW on this device
            self.adam = torch.optim.AdamW(self.masters, lr=1e-4, weight_decay=0.1, foreach=True)
            self.kind = f"torch.optim.AdamW(foreach=True) (fused unavailable: {e})"

    def step(self):
        torch = self.torch
        grads = [p.grad for p in self.params]
        torch._foreach_copy_(self.main_grads, grads)        # optimizer.copy (bf16 -> fp32)
        torch._foreach_zero_(grads)                         # optimizer.zero_grad
        torch.nn.utils.clip_grad_norm_(self.masters, 1.0, foreach=True)  # l2norm + scale
        self.adam.step()                                    # optimizer.adam
        torch._foreach_copy_([p.data for p in self.params], self.masters)  # optimizer.copy_params


def parse_trace(path, dry):
    """Per class and per phase GPU ms of one profiled step, and the top kernels."""
    with open(path) as f:
        trace = json.load(f)
    events = trace.get("traceEvents", [])
    phases = {}
    for e in events:
        if e.get("cat") == "user_annotation" and e.get("name") in ("forward", "backward", "optimizer"):
            phases[e["name"]] = (e["ts"], e["ts"] + e.get("dur", 0))
    launch_ts = {}
    for e in events:
        if e.get("cat") == "cuda_runtime" or e.get("cat") == "cuda_driver":
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launch_ts[corr] = e["ts"]

    def phase_at(ts):
        for name, (a, b) in phases.items():
            if a <= ts <= b:
                return name
        return "other"

    if dry:
        # CPU: no kernels; leaf-ish aten operators stand in so the code path runs.
        kernels = [e for e in events if e.get("cat") == "cpu_op" and str(e.get("name", "")).startswith("aten::")
                   and e.get("name") in ("aten::mm", "aten::addmm", "aten::bmm", "aten::native_layer_norm",
                                         "aten::gelu", "aten::add", "aten::_foreach_copy_",
                                         "aten::_fused_adamw_", "aten::_scaled_dot_product_flash_attention_for_cpu")]
    else:
        kernels = [e for e in events if e.get("cat") == "kernel"
                   or (e.get("cat") == "gpu_memcpy" and "DtoD" in str(e.get("name", "")))
                   or e.get("cat") == "gpu_memset"]
    by_class = {"gemm": 0.0, "attention": 0.0, "memory_bound": 0.0, "communication": 0.0}
    by_phase_class = {}
    names = {}
    unplaced = 0
    for e in kernels:
        name = str(e.get("name", ""))
        if dry and name in ("aten::mm", "aten::addmm", "aten::bmm"):
            name = f"gemm (dry-run stand-in: {name})"
        cls = "memory_bound" if e.get("cat") in ("gpu_memcpy", "gpu_memset") else class_of(name)
        ms = e.get("dur", 0) / 1e3
        by_class[cls] += ms
        corr = (e.get("args") or {}).get("correlation")
        ts = launch_ts.get(corr, e["ts"] if dry else None)
        phase = phase_at(ts) if ts is not None else "other"
        if phase == "other":
            unplaced += 1
        by_phase_class.setdefault(phase, {}).setdefault(cls, 0.0)
        by_phase_class[phase][cls] += ms
        n = names.setdefault(name, {"name": name, "class": cls, "launches": 0, "ms": 0.0, "phases": set()})
        n["launches"] += 1
        n["ms"] += ms
        n["phases"].add(phase)
    top = sorted(names.values(), key=lambda x: -x["ms"])[:30]
    for t in top:
        t["phases"] = sorted(t["phases"])
        t["ms"] = round(t["ms"], 4)
    fb = [p for p in ("forward", "backward") if p in by_phase_class]
    kernel_classes = {
        "gemm_ms": by_class["gemm"],
        "attention_ms": by_class["attention"],
        "elementwise_norm_ms": sum(by_phase_class[p].get("memory_bound", 0.0) for p in fb),
        "optimizer_ms": sum(by_phase_class.get("optimizer", {}).values()),
        "memory_bound_ms": by_class["memory_bound"],
        "communication_ms": by_class["communication"],
        "kernels": len(kernels),
        "kernels_not_in_a_phase": unplaced,
    }
    return {"kernel_classes": kernel_classes, "by_phase_class_ms": by_phase_class, "top_kernels": top,
            "phases_found": sorted(phases)}


def run_config(torch, cfg, args, device, sampler, attention):
    layers, hidden, heads, seq_len, mb = cfg
    dry = args.dry_run
    ctx, attention_name = attention
    model = build(torch, cfg, device, ctx)
    params = sum(p.numel() for p in model.parameters())
    opt = Optimizer(torch, model.parameters(), dry)
    g = torch.Generator(device="cpu").manual_seed(0)
    idx = torch.randint(0, VOCAB, (mb, seq_len), generator=g).to(device)
    targets = torch.randint(0, VOCAB, (mb, seq_len), generator=g).to(device)
    rf = torch.profiler.record_function

    def step(events=None):
        if events:
            events[0].record()
        with rf("forward"):
            loss = model(idx, targets)
        if events:
            events[1].record()
        with rf("backward"):
            loss.backward()
        if events:
            events[2].record()
        with rf("optimizer"):
            opt.step()
        if events:
            events[3].record()
        return loss

    losses = []
    for _ in range(args.warmup):
        losses.append(step())
    sync = torch.cuda.synchronize if not dry else (lambda: None)
    sync()
    steps = args.steps
    timed = []
    t0 = lc.now_s()
    host0 = time.perf_counter()
    if not dry:
        evs = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(steps)]
        for e in evs:
            losses.append(step(e))
        host_s = (time.perf_counter() - host0) / steps
        sync()
        for e in evs:
            timed.append([e[0].elapsed_time(e[1]), e[1].elapsed_time(e[2]), e[2].elapsed_time(e[3]),
                          e[0].elapsed_time(e[3])])
    else:
        for _ in range(steps):
            a = time.perf_counter()
            loss = model(idx, targets)
            b = time.perf_counter()
            loss.backward()
            c = time.perf_counter()
            opt.step()
            d = time.perf_counter()
            losses.append(loss)
            timed.append([(b - a) * 1e3, (c - b) * 1e3, (d - c) * 1e3, (d - a) * 1e3])
        host_s = (time.perf_counter() - host0) / steps
    t1 = lc.now_s()
    med = lambda i: statistics.median(r[i] for r in timed)
    q = lambda i: lc.quartiles([r[i] for r in timed])
    loss_values = [float(x.item()) for x in losses]
    # One step under the profiler.
    prof_result = None
    try:
        acts = [torch.profiler.ProfilerActivity.CPU]
        if not dry:
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=acts) as prof:
            step()
            sync()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            prof_result = parse_trace(path, dry)
            prof_result["trace_bytes"] = os.path.getsize(path)
    except Exception as e:
        prof_result = {"error": f"{type(e).__name__}: {e}"}
    seen = [t["name"] for t in (prof_result or {}).get("top_kernels", []) if t.get("class") == "attention"]
    if any("cudnn" in n.lower() for n in seen):
        attention_seen = "cuDNN (kernel names)"
    elif any("flash" in n.lower() for n in seen):
        attention_seen = "FlashAttention (kernel names)"
    else:
        attention_seen = "not identified from kernel names"
    flops_per_token = 6 * (params - VOCAB * hidden - seq_len * hidden) + 6 * VOCAB * hidden \
        + 12 * layers * seq_len * hidden * 0.5  # causal attention, half the s x s products
    tokens = mb * seq_len
    result = {
        "id": config_id(cfg),
        "model": {"layers": layers, "hidden": hidden, "heads": heads, "head_dim": hidden // heads,
                  "seq_len": seq_len, "vocab": VOCAB, "ffn_hidden": 4 * hidden, "parameters": params,
                  "block": "GPT: pre-LayerNorm, fused QKV Linear (bias), causal SDPA, output projection, GELU "
                           "(tanh) MLP 4h, residuals; learned positions, tied embeddings, final LayerNorm, fp32 "
                           "cross-entropy; no dropout",
                  "vocab_note": f"a small vocabulary ({VOCAB}): the embedding and tied output layer are real, "
                                "sized for a step that fits the lab budget"},
        "layout": {"tp": 1, "pp": 1, "dp": 1, "cp": 1, "microbatch_size": mb, "global_batch": mb,
                   "recompute": "none", "gradient_accumulation_steps": 1},
        "precision": "bf16 parameters, gradients and activations; fp32 master weights, fp32 main gradients, "
                     "AdamW states in fp32; gradient clipping at 1.0",
        "optimizer": opt.kind,
        "attention": attention_name,
        "attention_kernels_seen": attention_seen,
        "attention_kernel_names": seen[:6],
        "steps_timed": steps,
        "warmup_steps": args.warmup,
        "step_ms": med(3), "step_ms_quartiles": q(3),
        "forward_ms": med(0), "backward_ms": med(1), "optimizer_ms": med(2),
        "host_enqueue_ms_per_step": host_s * 1e3,
        "tokens_per_s": tokens / (med(3) / 1e3),
        "model_tflops_per_s": flops_per_token * tokens / (med(3) / 1e3) / 1e12,
        "model_flops_note": "6 x (non-embedding parameters) + 6 x V x h per token, plus causal attention "
                            "12 x layers x s x h x 0.5; no recompute",
        "steps_ms": [[round(x, 4) for x in r] for r in timed],
        "loss_first_last": [loss_values[0], loss_values[-1]] if loss_values else None,
        "loss_finite": all(math.isfinite(x) for x in loss_values),
        "profiled_step": prof_result,
        "clocks_during_timed_steps": sampler.summary(t0, t1),
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if not dry else None,
    }
    del model, opt
    return result


def config_id(cfg):
    layers, hidden, heads, seq_len, mb = cfg
    return f"h{hidden}-d{hidden // heads}-s{seq_len}-b{mb}-l{layers}"


def attention_choice(torch, wanted, dry):
    """(context factory, description): SDPA restricted to `wanted` first (cuDNN by default, the kernel
    the simulator's fused-attention rates are), falling back to FLASH."""
    import contextlib

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:
        return contextlib.nullcontext, f"SDPA default selection (torch.nn.attention unavailable: {e})"
    if wanted == "auto":
        return contextlib.nullcontext, "SDPA default selection"
    order = {"cudnn": ["CUDNN_ATTENTION", "FLASH_ATTENTION"], "flash": ["FLASH_ATTENTION"]}[wanted]
    members = [getattr(SDPBackend, n) for n in order if hasattr(SDPBackend, n)]

    def ctx():
        try:
            return sdpa_kernel(members, set_priority=True)
        except TypeError:  # a torch before set_priority
            return sdpa_kernel(members)

    return ctx, f"SDPA restricted to {[m.name for m in members]} in that order (the kernel names in " \
                "profiled_step.top_kernels say which ran)"


def cases_file(results, gpu_name, topology, versions, started):
    cases = []
    for r in results:
        if "step_ms" not in r:
            continue
        m = r["model"]
        kc = (r.get("profiled_step") or {}).get("kernel_classes") or {}
        measured = {"iteration_time_s": r["step_ms"] / 1e3}
        for key, src in (("gemm_s", "gemm_ms"), ("attention_s", "attention_ms"),
                         ("memory_bound_s", "memory_bound_ms")):
            if kc.get(src):
                measured[key] = kc[src] / 1e3
        cases.append({
            "id": f"torch-{topology}-{r['id']}",
            "source": f"scripts/lab/torch_step.py on {gpu_name} ({started}), torch {versions.get('torch')} "
                      f"(CUDA {versions.get('torch_cuda')}, cuDNN {versions.get('cudnn')}): median of "
                      f"{r['steps_timed']} steps (CUDA events) after {r['warmup_steps']} warm-ups; kernel-class "
                      "times from one step under torch.profiler, classed as clustersim import-trace classes them",
            "scenario": {
                "model": {"name": r["id"], "layers": m["layers"], "hidden": m["hidden"], "heads": m["heads"],
                          "seq_len": m["seq_len"], "vocab": m["vocab"], "attention_dropout": 0.0,
                          "hidden_dropout": 0.0},
                "topology": topology,
                "stack": "megatron-core-2024",
                "tp": 1, "pp": 1, "dp": 1, "chunks": 1,
                "microbatch_size": r["layout"]["microbatch_size"],
                "global_batch": r["layout"]["global_batch"],
                "recompute": "none",
                "precision": "bf16",
                "gradient_accumulation_fusion": False,
            },
            "measured": measured,
            "measured_phases_ms": {"forward": r["forward_ms"], "backward": r["backward_ms"],
                                   "optimizer": r["optimizer_ms"]},
            "note": (
                "Plain PyTorch, not Megatron: the megatron-core-2024 stack is the closest built-in (fused "
                "attention, bf16), with gradient_accumulation_fusion off because the script copies bf16 gradients "
                "to fp32 main gradients in the optimizer as Megatron's unfused step does. Not modeled: the "
                "stack's host cost (54.5 us per kernel, eager Megatron on vTrain's A100 host) is not this host's "
                f"(measured enqueue {r['host_enqueue_ms_per_step']:.1f} ms per step of {r['step_ms']:.1f} ms); "
                f"attention ran as {r.get('attention_kernels_seen')} (the profile's fused-attention rates are "
                "cuDNN's); PyTorch's own GELU, LayerNorm, "
                "embedding and cross-entropy kernels (not Megatron's fused ones); the optimizer's clip "
                "(norm + scale) and foreach copies; the loss cast to fp32; the profiled step's kernel times "
                "include no launch gaps while the simulator's class times include each kernel's launch overhead."),
        })
    return {
        "about": "Single-GPU training steps of a GPT-style model in plain PyTorch (scripts/lab/torch_step.py), each "
                 "a whole scenario for `clustersim validate`: iteration time, and the GPU seconds per step in "
                 "GEMMs, fused attention and memory-bound kernels. Measured on the lab GPU; dev set, not held out.",
        "hardware": f"{gpu_name}, one GPU: the {topology} topology preset",
        "cases": cases,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="output folder (default: $OUT, else ./lab-out)")
    ap.add_argument("--budget-s", type=float, default=80.0, help="seconds for all configurations (default 80)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per configuration (default 10)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up steps (default 3)")
    ap.add_argument("--attention", choices=["cudnn", "flash", "auto"], default="cudnn",
                    help="SDPA backend preference (default cudnn, falling back to flash)")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes: exercise every code path")
    args = ap.parse_args()
    import torch

    out = lc.out_dir(args.out)
    errors = lc.Errors(out, "torch_step.py")
    deadline = lc.Deadline(args.budget_s)
    dry = args.dry_run
    if not dry and not torch.cuda.is_available():
        raise SystemExit("torch_step.py: no CUDA device (use --dry-run on a CPU)")
    device = torch.device("cpu" if dry else "cuda")
    gpu_name = "CPU (dry run)" if dry else torch.cuda.get_device_name(0)
    tag, datasheet, topology = lc.gpu_ids(gpu_name)
    sampler = lc.Sampler(0.2).start()
    versions = lc.versions(torch)
    started = lc.utc_now()
    doc = {"about": "Single-GPU PyTorch training steps (scripts/lab/torch_step.py); times in ms; see each "
                    "configuration's fields", "dry_run": dry, "started": started, "device_name": gpu_name,
           "topology": topology, "versions": versions, "gpu_state_before": lc.gpu_state(),
           "configurations": [], "skipped": []}
    if dry:
        doc["dry_run_note"] = "CPU dry run: tiny models, host clocks; the profiler sees CPU operators, not kernels"
    attention = attention_choice(torch, args.attention, dry)
    configs = DRY_CONFIGS if dry else CONFIGS + EXTRA
    estimate = None
    for cfg in configs:
        cid = config_id(cfg)
        need = 8.0 if estimate is None else estimate
        if deadline.left() < need:
            doc["skipped"].append({"id": cid, "why": f"budget ({deadline.left():.0f} s left, ~{need:.0f} s needed)"})
            continue
        if cfg in EXTRA and deadline.left() < 2 * need:
            doc["skipped"].append({"id": cid, "why": "budget (extra configuration)"})
            continue
        started_cfg = lc.now_s()
        lc.log(f"step {cid}: start ({deadline.left():.0f} s left)")
        try:
            state = lc.gpu_state()
            r = run_config(torch, cfg, args, device, sampler, attention)
            r["gpu_state_before"] = state
            r["gpu_state_after"] = lc.gpu_state()
            r["seconds"] = round(lc.now_s() - started_cfg, 1)
            doc["configurations"].append(r)
            kc = (r.get("profiled_step") or {}).get("kernel_classes") or {}
            lc.log(f"step {cid}: {r['step_ms']:.2f} ms (fwd {r['forward_ms']:.2f}, bwd {r['backward_ms']:.2f}, opt "
                   f"{r['optimizer_ms']:.2f}); gemm {kc.get('gemm_ms', 0):.2f}, attention "
                   f"{kc.get('attention_ms', 0):.2f}, memory-bound {kc.get('memory_bound_ms', 0):.2f} ms; "
                   f"{r['model_tflops_per_s']:.0f} model TFLOP/s; {r['seconds']} s")
        except Exception as e:
            errors.add(f"step {cid}", e)
            doc["configurations"].append({"id": cid, "error": f"{type(e).__name__}: {e}"})
        finally:
            if not dry:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
        took = lc.now_s() - started_cfg
        estimate = max(took * 1.5, 4.0)
        doc["gpu_state_after"] = lc.gpu_state()
        doc["samples_source"] = sampler.source or sampler.unavailable
        doc["samples_fields"] = ["t_s", "sm_mhz", "mem_mhz", "power_w", "temp_c", "clock_event_reasons"]
        doc["samples"] = sampler.samples
        doc["errors"] = errors.items
        lc.write_json(os.path.join(out, "torch-steps.json"), doc)
        lc.write_json(os.path.join(out, "torch-steps-cases.json"),
                      cases_file(doc["configurations"], gpu_name, topology, versions, started))
    sampler.stop()
    doc["finished"] = lc.utc_now()
    lc.write_json(os.path.join(out, "torch-steps.json"), doc)
    lc.write_json(os.path.join(out, "torch-steps-cases.json"),
                  cases_file(doc["configurations"], gpu_name, topology, versions, started))
    lc.log(f"torch_step: done, {len(doc['configurations'])} configuration(s), {len(errors.items)} error(s)")


if __name__ == "__main__":
    main()
