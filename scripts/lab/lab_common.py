"""What torch_kernels.py and torch_step.py share: the output folder, the
error file, versions and GPU state, a clock/power sampler, deadlines, the
GPU timer (events behind a gate kernel) and the names the simulator uses
for a GPU.

Nothing here may raise out of a caller's part: every helper that reads the
machine returns what it could read and a reason for what it could not.
"""

import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
import traceback

T0 = time.monotonic()


def now_s():
    """Seconds since this process imported lab_common (host monotonic clock)."""
    return time.monotonic() - T0


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def out_dir(path=None):
    path = path or os.environ.get("OUT") or "lab-out"
    os.makedirs(path, exist_ok=True)
    return path


def log(message):
    print(f"[{now_s():7.1f}s] {message}", flush=True)


class Errors:
    """Appends each failure to OUT/errors.txt (created only when one happens)."""

    def __init__(self, out, script):
        self.path = os.path.join(out, "errors.txt")
        self.script = script
        self.items = []

    def add(self, part, error=None, text=None):
        if text is None:
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        entry = {"script": self.script, "part": part, "at_s": round(now_s(), 1), "error": text.strip()}
        self.items.append(entry)
        with open(self.path, "a") as f:
            f.write(f"== {self.script}: {part} (after {entry['at_s']} s, {utc_now()})\n{entry['error']}\n\n")
        log(f"ERROR in {part}: {text.strip().splitlines()[-1] if text.strip() else '?'}")


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=1, default=str)
        f.write("\n")
    os.replace(tmp, path)


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Deadline:
    """A budget in seconds from now; parts ask how much is left."""

    def __init__(self, seconds):
        self.end = now_s() + seconds

    def left(self):
        return self.end - now_s()

    def sub(self, seconds):
        """A deadline that ends after `seconds` or with this one, whichever is first."""
        d = Deadline(0)
        d.end = min(self.end, now_s() + seconds)
        return d


# ---------------------------------------------------------------- GPU names


def gpu_ids(device_name):
    """(short tag, datasheet id for '# clustersim-gpu:', topology preset) for
    the driver's device name, as topologies/src/datasheets.rs matches it."""
    name = (device_name or "").upper()
    if "H200" in name:
        return "h200", "h200-sxm", "h200"
    if "H100" in name and "PCIE" in name:
        return "h100", "h100-pcie", "h100-pcie-cluster"
    if "H100" in name:  # "NVIDIA H100 80GB HBM3", the lab's SXM part
        return "h100", "h100-sxm", "h100"
    # Unknown (the CPU dry run too): the lab H200's ids, said in the outputs.
    return "h200", "h200-sxm", "h200"


# ---------------------------------------------------------------- machine state


def run_quiet(args, timeout=10):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except Exception as e:  # not installed, hung
        return None, "", f"{type(e).__name__}: {e}"


SMI_FIELDS = [
    "name",
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks_event_reasons.active",
]


def gpu_state():
    """nvidia-smi's reading of GPU 0 now, or why there is none."""
    if not shutil.which("nvidia-smi"):
        return {"read_at": utc_now(), "unavailable": "nvidia-smi not on PATH"}
    for fields in (SMI_FIELDS, [f for f in SMI_FIELDS if f != "clocks_event_reasons.active"]):
        rc, out, err = run_quiet(
            ["nvidia-smi", "-i", "0", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
        )
        if rc == 0 and out.strip():
            values = [v.strip() for v in out.strip().splitlines()[0].split(",")]
            return {"read_at": utc_now(), **dict(zip(fields, values))}
    return {"read_at": utc_now(), "unavailable": f"nvidia-smi rc={rc}: {err.strip()[:300]}"}


def versions(torch=None):
    v = {
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "host_cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import importlib.metadata as md

        wheels = {}
        for name in (
            "nvidia-cublas",
            "nvidia-cublas-cu13",
            "nvidia-cublas-cu12",
            "nvidia-cudnn-cu13",
            "nvidia-cudnn-cu12",
            "nvidia-nccl-cu13",
            "nvidia-nccl-cu12",
            "nvidia-cuda-runtime",
            "nvidia-cuda-runtime-cu12",
            "nvidia-ml-py",
            "triton",
            "numpy",
        ):
            try:
                wheels[name] = md.version(name)
            except Exception:
                pass
        v["wheels"] = wheels
    except Exception as e:
        v["wheels"] = f"unavailable: {e}"
    if torch is not None:
        v["torch"] = torch.__version__
        v["torch_cuda"] = getattr(torch.version, "cuda", None)
        try:
            v["cudnn"] = torch.backends.cudnn.version()
        except Exception as e:
            v["cudnn"] = f"unavailable: {e}"
        if torch.cuda.is_available():
            try:
                v["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
            except Exception as e:
                v["nccl"] = f"unavailable: {e}"
            p = torch.cuda.get_device_properties(0)
            v["device"] = {
                "name": p.name,
                "capability": f"{p.major}.{p.minor}",
                "sm_count": p.multi_processor_count,
                "memory_bytes": p.total_memory,
                "l2_cache_bytes": getattr(p, "L2_cache_size", None),
            }
            try:
                v["cublas_loaded"] = loaded_libraries(("libcublas", "libcublasLt", "libcudnn", "libnccl"))
            except Exception as e:
                v["cublas_loaded"] = f"unavailable: {e}"
    rc, out, _ = run_quiet(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if rc == 0:
        v["driver"] = out.strip()
    return v


def loaded_libraries(prefixes):
    """The shared libraries of this process whose file name starts with one of
    `prefixes` (their paths carry the wheel's version folder)."""
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if "/" in line else ""
            base = os.path.basename(path)
            if any(base.startswith(p) for p in prefixes):
                found.add(path)
    return sorted(found)


# ---------------------------------------------------------------- sampler

REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_reasons(mask):
    try:
        mask = int(mask, 16) if isinstance(mask, str) else int(mask)
    except Exception:
        return None
    return [name for bit, name in REASONS.items() if mask & bit]


class Sampler:
    """Samples GPU 0's SM and memory clocks, power, temperature and clock
    event reasons every `period_s` on a thread: through pynvml when it
    imports, else `nvidia-smi -lms`. Each sample is [t_s, sm_mhz, mem_mhz,
    power_w, temp_c, reasons_hex] with t_s on this process's clock (now_s)."""

    def __init__(self, period_s=0.2):
        self.period_s = period_s
        self.samples = []
        self.source = None
        self.unavailable = None
        self._stop = threading.Event()
        self._thread = None
        self._proc = None

    def start(self):
        try:
            import pynvml

            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
                pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
            )

            def read():
                r = None
                if reasons:
                    try:
                        r = hex(reasons(h))
                    except Exception:
                        r = None
                return [
                    round(now_s(), 3),
                    pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                    pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                    round(pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0, 2),
                    pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                    r,
                ]

            read()
            self.source = "pynvml"

            def loop():
                while not self._stop.is_set():
                    try:
                        self.samples.append(read())
                    except Exception as e:
                        self.unavailable = f"pynvml stopped: {e}"
                        return
                    self._stop.wait(self.period_s)

            self._thread = threading.Thread(target=loop, daemon=True)
            self._thread.start()
            return self
        except Exception as e:
            pynvml_error = f"{type(e).__name__}: {e}"
        if not shutil.which("nvidia-smi"):
            self.unavailable = f"no pynvml ({pynvml_error}) and no nvidia-smi"
            return self
        fields = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"
        rc, _, _ = run_quiet(["nvidia-smi", "-i", "0", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
        if rc != 0:
            fields = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
        try:
            self._proc = subprocess.Popen(
                ["nvidia-smi", "-i", "0", f"--query-gpu={fields}", "--format=csv,noheader,nounits",
                 "-lms", str(int(self.period_s * 1000))],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )
        except Exception as e:
            self.unavailable = f"no pynvml ({pynvml_error}); nvidia-smi failed: {e}"
            return self
        self.source = f"nvidia-smi -lms {int(self.period_s * 1000)} ({fields}); pynvml: {pynvml_error}"

        def parse(x):
            try:
                return float(x)
            except ValueError:
                return None

        def reader():
            for line in self._proc.stdout:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) >= 5:
                    self.samples.append([round(now_s(), 3)] + [parse(p) for p in parts[:4]] + [parts[4]])
                if self._stop.is_set():
                    break

        self._thread = threading.Thread(target=reader, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._proc is not None:
            try:
                self._proc.terminate()
                self._proc.wait(timeout=2)
            except Exception:
                pass
        if self._thread is not None:
            self._thread.join(timeout=2)

    def between(self, t0, t1):
        return [s for s in self.samples if t0 <= s[0] <= t1]

    def summary(self, t0, t1):
        """Median SM clock, power and temperature over [t0, t1] (the nearest
        sample when none falls inside), and every reason seen."""
        inside = self.between(t0, t1)
        if not inside and self.samples:
            mid = 0.5 * (t0 + t1)
            inside = [min(self.samples, key=lambda s: abs(s[0] - mid))]
        if not inside:
            return None

        def med(i):
            values = [s[i] for s in inside if isinstance(s[i], (int, float))]
            return statistics.median(values) if values else None

        reasons = sorted({r for s in inside for r in (decode_reasons(s[5]) or [])})
        return {"samples": len(inside), "sm_mhz": med(1), "mem_mhz": med(2), "power_w": med(3),
                "temp_c": med(4), "reasons": reasons}


# ---------------------------------------------------------------- timing


def quartiles(values):
    v = sorted(values)
    if not v:
        return None, None, None
    if len(v) == 1:
        return v[0], v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], statistics.median(v), q[2]


class GpuTimer:
    """Times an operation as the GPU runs it back to back (shared/GPU.md item 5).

    `launch(i)` enqueues one operation (i counts launches, for rotating
    buffer sets). After `warmup` launches, a spin kernel (torch.cuda._sleep)
    holds the GPU while the host enqueues `repeats` groups of `inner`
    launches, each group between two CUDA events created beforehand; a
    group's time over `inner` is one repeat. The gate is sized from the
    host's measured issue time, and checked: when the host took longer to
    enqueue everything than the gate held the GPU, the host outran the
    gate, and the measurement is redone once with a gate four times as long,
    then recorded with gate_held false. Each time includes the GPU's own
    launch-to-launch gap (what `# clustersim-timing: back-to-back NS`
    means). Nothing is subtracted.

    On the CPU (the dry run) the same code runs with host clocks."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def time(self, launch, repeats=20, warmup=5, target_group_s=200e-6, max_inner=64,
             max_launches=640, kernels_per_launch=1):
        torch = self.torch
        i = 0
        for _ in range(warmup):
            launch(i)
            i += 1
        self.sync()
        # A rough GPU time per launch and the host's issue time per launch.
        h0 = time.perf_counter()
        if self.cuda:
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
        for _ in range(3):
            launch(i)
            i += 1
        host_per_launch = (time.perf_counter() - h0) / 3
        if self.cuda:
            e1.record()
            torch.cuda.synchronize()
            rough = e0.elapsed_time(e1) / 1e3 / 3
        else:
            rough = (time.perf_counter() - h0) / 3
        limit = max(1, min(max_inner, max_launches // max(1, repeats * kernels_per_launch)))
        inner = max(1, min(limit, math.ceil(target_group_s / max(rough, 1e-7))))
        if not self.cuda:
            inner = 1
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                launch(i)
                i += 1
                times.append(time.perf_counter() - t)
            q1, med, q3 = quartiles(times)
            return {"median_s": med, "q1_s": q1, "q3_s": q3, "repeats": repeats, "inner": inner,
                    "gate": "none (CPU dry run: host clock)", "gate_held": None}
        gate_s = min(0.5, max(1e-3, 3.0 * repeats * inner * host_per_launch + 1e-3))
        for attempt in range(2):
            events = [torch.cuda.Event(enable_timing=True) for _ in range(repeats + 2)]
            h0 = time.perf_counter()
            events[0].record()
            # Cycles at up to 2.0 GHz: at any lower clock the gate lasts longer.
            torch.cuda._sleep(int(gate_s * 2.0e9))
            for r in range(repeats):
                events[r + 1].record()
                for _ in range(inner):
                    launch(i)
                    i += 1
            events[repeats + 1].record()
            host_s = time.perf_counter() - h0
            torch.cuda.synchronize()
            held_s = events[0].elapsed_time(events[1]) / 1e3
            held = host_s < held_s
            if held or attempt == 1:
                break
            gate_s = min(2.0, gate_s * 4)
        times = [events[r + 1].elapsed_time(events[r + 2]) / 1e3 / inner for r in range(repeats)]
        q1, med, q3 = quartiles(times)
        return {"median_s": med, "q1_s": q1, "q3_s": q3, "repeats": repeats, "inner": inner,
                "gate_s": round(held_s, 6), "host_enqueue_s": round(host_s, 6), "gate_held": held,
                "host_issue_s_per_launch": host_per_launch}


def poison_check(torch, out, fn, reference):
    """Fills `out` with NaN, runs `fn()` (which writes `out`), and returns the
    relative error ‖out − ref‖/‖ref‖ against `reference()` (float64 on the
    rows it returns) and whether every element was written."""
    out.fill_(float("nan"))
    fn()
    written = bool(torch.isfinite(out).all().item())
    ref, got = reference()
    ref = ref.double()
    got = got.double()
    err = float((got - ref).norm() / ref.norm().clamp_min(1e-30))
    return {"relative_error": err, "all_written": written}
