# GEMMs at the shapes training runs and attention forward and backward, each timed twice: in a burst (a cool GPU
# after an idle pause, kernels queued behind a gate so they run back to back at the boost clock) and sustained (the
# GPU held at its power limit by back-to-back work for minutes, each shape replayed from a CUDA graph for several
# seconds), with the SM clock, power, temperature and clock-event reasons sampled through NVML all the while.
# What dtsim's clock model needs: the throughput of the same kernel at both ends of the clock range.
#
# Usage: python3 training_shapes.py SHAPES.json OUT.json [--sustain S] [--soak S]
# SHAPES.json: {"gemms": [{"label", "m", "n", "k", "batch"?, "fp8"?}], "attention": [{"seq", "heads", "head_dim"}]}
# The output is rewritten after every entry, so a run cut short keeps what it measured.
import argparse, ctypes, json, os, statistics, threading, time
import torch, torch.nn.functional as F, pynvml as nv

ap = argparse.ArgumentParser()
ap.add_argument("shapes"); ap.add_argument("out")
ap.add_argument("--sustain", type=float, default=4.0, help="seconds each shape is held at the power limit")
ap.add_argument("--soak", type=float, default=20.0, help="seconds of 8192^3 bf16 GEMMs before the sustained part")
ap.add_argument("--burst-ms", type=float, default=25.0, help="GPU time each burst covers")
args = ap.parse_args()
plan = json.load(open(args.shapes))
dev = torch.device("cuda")
nv.nvmlInit(); h = nv.nvmlDeviceGetHandleByIndex(0)


def cublas_version():
  for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
    try:
      return ctypes.CDLL(name).cublasLtGetVersion()
    except OSError:
      continue
  return None


torch.matmul(torch.randn(64, 64, device=dev), torch.randn(64, 64, device=dev))  # loads cuBLAS
out = {"device": nv.nvmlDeviceGetName(h), "driver": nv.nvmlSystemGetDriverVersion(),
       "cuda_driver_version": nv.nvmlSystemGetCudaDriverVersion(), "cuda_runtime": torch.version.cuda,
       "cublaslt": cublas_version(), "cudnn": torch.backends.cudnn.version(), "torch": torch.__version__,
       "sms": torch.cuda.get_device_properties(0).multi_processor_count,
       "enforced_power_limit_w": nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3,
       "max_sm_clock_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
       "max_mem_clock_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM),
       "date": time.strftime("%Y-%m-%d"), "method": {"sustain_s": args.sustain, "soak_s": args.soak,
                                                      "burst_ms": args.burst_ms},
       "soak": None, "gemms": [], "attention": [], "copy": [], "errors": []}


def save():
  tmp = args.out + ".tmp"
  json.dump(out, open(tmp, "w"), indent=1); os.replace(tmp, args.out)


# NVML every 20 ms: (host time, SM MHz, memory MHz, W, C, clock-event reasons bitmask).
samples, stop = [], threading.Event()
def clock_reasons():
  try:
    return nv.nvmlDeviceGetCurrentClocksEventReasons(h)
  except Exception:
    return nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)
def sampler():
  while not stop.is_set():
    samples.append((time.perf_counter(), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                    nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM), nv.nvmlDeviceGetPowerUsage(h) / 1e3,
                    nv.nvmlDeviceGetTemperature(h, 0), clock_reasons()))
    time.sleep(0.02)
threading.Thread(target=sampler, daemon=True).start()


def telemetry(t0, t1):
  s = [x for x in samples if t0 <= x[0] <= t1]
  if not s: return None
  reasons = 0
  for x in s: reasons |= x[5]
  return {"samples": len(s), "sm_clock_median_mhz": statistics.median(x[1] for x in s),
          "sm_clock_min_mhz": min(x[1] for x in s), "mem_clock_median_mhz": statistics.median(x[2] for x in s),
          "power_median_w": statistics.median(x[3] for x in s), "power_max_w": max(x[3] for x in s),
          "temperature_max_c": max(x[4] for x in s), "clock_event_reasons_or": reasons}


def events(n):
  return [torch.cuda.Event(enable_timing=True) for _ in range(n)]


# A burst: the GPU idles `pause` s (clocks back up, power down), a gate kernel holds the stream while the host queues
# n kernels with an event after each, so they run back to back; each kernel's time is the gap between its events.
def burst(fn, est, pause=0.7):
  n = max(3, min(60, round(args.burst_ms * 1e-3 / est)))
  ev = events(n + 1)
  torch.cuda.synchronize(); time.sleep(pause)
  t0 = time.perf_counter()
  torch.cuda._sleep(int(2e6))  # about 1-2 ms of one SM spinning while the queue fills
  ev[0].record()
  for i in range(n):
    fn(); ev[i + 1].record()
  ev[-1].synchronize(); t1 = time.perf_counter()
  ts = [ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(n)]
  return {"kernels": n, "median_s": statistics.median(ts[1:]), "first_s": ts[0], "last_s": ts[-1],
          "total_s": sum(ts), "telemetry": telemetry(t0 - 0.1, t1)}


def estimate(fn, warm=3, runs=3):
  for _ in range(warm): fn()
  a, b = events(2); a.record()
  for _ in range(runs): fn()
  b.record(); b.synchronize()
  return a.elapsed_time(b) * 1e-3 / runs


# Sustained: a CUDA graph of `reps` kernels (about 10 ms) replayed for `seconds`, two batches of replays in flight so
# the GPU never waits for the host; the rate is taken over the batches after the first second.
def make_graph(fn, est):
  reps = max(1, round(10e-3 / est))
  s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
  with torch.cuda.stream(s):
    for _ in range(2): fn()
  torch.cuda.current_stream().wait_stream(s)
  g = torch.cuda.CUDAGraph()
  with torch.cuda.graph(g):
    for _ in range(reps): fn()
  return g.replay, reps


# Attention's backward goes through autograd: replayed eagerly, its kernels being milliseconds long (so is the copy).
def make_eager(fn, est):
  reps = max(1, round(10e-3 / est))
  def run():
    for _ in range(reps): fn()
  return run, reps


def sustain(g, reps, seconds, settle=1.0):
  per_batch = 5  # replays between events: about 50 ms
  batches, t0 = [], time.perf_counter()
  pending = None
  while True:
    a, b = events(2); a.record()
    for _ in range(per_batch): g()
    b.record()
    if pending: pending[1].synchronize(); batches.append((pending[2], pending[0].elapsed_time(pending[1]) * 1e-3))
    pending = (a, b, time.perf_counter())
    if time.perf_counter() - t0 >= seconds: break
  pending[1].synchronize(); batches.append((pending[2], pending[0].elapsed_time(pending[1]) * 1e-3))
  t1 = time.perf_counter()
  kept = [dt for (t, dt) in batches if t - t0 >= settle] or [dt for (_, dt) in batches]
  first = [dt for (t, dt) in batches if t - t0 < settle]
  return {"seconds": t1 - t0, "kernels": len(batches) * per_batch * reps,
          "median_s": statistics.median(kept) / (per_batch * reps),
          "first_second_median_s": statistics.median(first) / (per_batch * reps) if first else None,
          "telemetry": telemetry(t0 + settle, t1), "telemetry_first_second": telemetry(t0, t0 + settle)}


# The GEMMs a training step runs, as torch.nn.Linear does: forward x w^T, input gradient g w, weight gradient g^T x;
# an entry's m x n x k is the product it computes, `orient` which of the three layouts. fp8 (e4m3, tensor-wise
# scales, bf16 out) through torch._scaled_mm, which takes A row-major and B column-major only (as Transformer Engine
# feeds Hopper's fp8 GEMMs, after transposing where it must).
def gemm_fn(e, dtype):
  m, n, k, batch = e["m"], e["n"], e["k"], e.get("batch", 1)
  if dtype == "fp8":
    a = (torch.randn(m, k, device=dev) * 0.5).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device=dev) * 0.5).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=dev)
    return lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)
  t = torch.bfloat16
  if batch > 1:  # attention's batched products (scores, context) in an unfused layer
    a = torch.randn(batch, m, k, device=dev, dtype=t); b = torch.randn(batch, k, n, device=dev, dtype=t)
    c = torch.empty(batch, m, n, device=dev, dtype=t)
    return lambda: torch.bmm(a, b, out=c)
  orient = e.get("orient", "forward")
  if orient == "forward":
    x = torch.randn(m, k, device=dev, dtype=t); w = torch.randn(n, k, device=dev, dtype=t)
    c = torch.empty(m, n, device=dev, dtype=t); return lambda: torch.matmul(x, w.t(), out=c)
  if orient == "input_grad":
    g = torch.randn(m, k, device=dev, dtype=t); w = torch.randn(k, n, device=dev, dtype=t)
    c = torch.empty(m, n, device=dev, dtype=t); return lambda: torch.matmul(g, w, out=c)
  g = torch.randn(k, m, device=dev, dtype=t); x = torch.randn(k, n, device=dev, dtype=t)  # weight_grad
  c = torch.empty(m, n, device=dev, dtype=t); return lambda: torch.matmul(g.t(), x, out=c)


# PyTorch SDPA, causal, bf16: forward alone, and forward plus backward (the backward's time is their difference).
def attention_fns(e, backend):
  from torch.nn.attention import sdpa_kernel
  s, heads, d = e["seq"], e["heads"], e["head_dim"]
  batch = max(1, e.get("tokens", 16384) // s)
  q, k, v = (torch.randn(batch, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
  g = torch.randn(batch, heads, s, d, device=dev, dtype=torch.bfloat16)
  def fwd():
    with sdpa_kernel(backend): return F.scaled_dot_product_attention(q, k, v, is_causal=True)
  def fwd_bwd():
    with sdpa_kernel(backend): y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y.backward(g)
  fwd(); fwd_bwd()  # fails here if the backend cannot run this shape
  return batch, fwd, fwd_bwd


cases = []  # (record, fn, est) in the order they will be sustained
def prepare(record, fn):
  est = estimate(fn)
  record["burst"] = burst(fn, est)
  cases.append((record, fn, record["burst"]["median_s"]))


t_start = time.perf_counter()
samples_idle = time.perf_counter(); time.sleep(2.0)
out["idle"] = telemetry(samples_idle + 0.2, time.perf_counter())

# 1. Bursts (cool GPU), GEMMs first.
for e in plan["gemms"]:
  for dtype in (["bf16", "fp8"] if e.get("fp8") else ["bf16"]):
    rec = {k: e[k] for k in e if k != "fp8"}; rec["dtype"] = dtype
    rec["flops"] = 2 * e["m"] * e["n"] * e["k"] * e.get("batch", 1)
    try:
      prepare(rec, gemm_fn(e, dtype))
      b = rec["burst"]
      print(f"burst {dtype} {e['label']:28s} {e['m']}x{e['n']}x{e['k']} {b['median_s']*1e6:9.1f} us "
            f"{rec['flops']/b['median_s']/1e12:6.0f} TFLOP/s", flush=True)
    except Exception as x:
      out["errors"].append({"case": rec, "error": str(x)[:300]}); print("error", rec, x, flush=True); continue
    out["gemms"].append(rec); save()

from torch.nn.attention import SDPBackend
for e in plan.get("attention", []):
  for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
    try:
      batch, fwd, fwd_bwd = attention_fns(e, backend)
    except Exception as x:
      out["errors"].append({"case": dict(e, backend=backend.name), "error": str(x)[:300]}); continue
    flops = 2 * batch * e["heads"] * e["seq"] * e["seq"] * e["head_dim"]  # causal: half of 4 b a s^2 d
    for part, fn, fl in (("forward", fwd, flops), ("forward_backward", fwd_bwd, 3.5 * flops)):
      rec = dict(e, batch=batch, backend=backend.name, causal=True, part=part, flops=fl)
      try:
        prepare(rec, fn)
      except Exception as x:
        out["errors"].append({"case": rec, "error": str(x)[:300]}); continue
      print(f"burst {backend.name} s={e['seq']} {part} {rec['burst']['median_s']*1e3:.3f} ms", flush=True)
      out["attention"].append(rec); save()

# A memory-bound kernel: a 4 GiB device-to-device copy (its time should not change with the power limit).
x = torch.empty(2**31, device=dev, dtype=torch.int16); y = torch.empty_like(x)
# Replayed eagerly: a graph would capture the copy as a memcpy node, which the copy engines run, not the SMs.
rec = {"label": "copy_d2d_4gib", "bytes_read_plus_written": 2 * 2**32, "eager": True}
prepare(rec, lambda: y.copy_(x)); out["copy"].append(rec); save()
print(f"bursts done at {time.perf_counter() - t_start:.0f} s", flush=True)

# 2. Sustained: soak at the power limit, then every case held in turn with no idle between.
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16); b = torch.randn_like(a); c = torch.empty_like(a)
soak_fn = lambda: torch.matmul(a, b, out=c)
g, reps = make_graph(soak_fn, estimate(soak_fn))
out["soak"] = sustain(g, reps, args.soak, settle=args.soak / 2)
out["soak"]["flops"] = 2 * 8192**3
print(f"soak: {out['soak']['flops'] / out['soak']['median_s'] / 1e12:.0f} TFLOP/s "
      f"{out['soak']['telemetry']}", flush=True)
save()
for rec, fn, est in cases:
  try:
    g, reps = (make_eager if "part" in rec or rec.get("eager") else make_graph)(fn, est)
    g(); torch.cuda.synchronize()
    rec["sustained"] = sustain(g, reps, args.sustain)
    del g
  except Exception as x:
    out["errors"].append({"case": rec.get("label", rec.get("backend")), "sustained_error": str(x)[:300]})
    continue
  s = rec["sustained"]; t = s["telemetry"] or {}
  print(f"sustained {rec.get('dtype', rec.get('backend'))} {rec.get('label', rec.get('part'))}: "
        f"{s['median_s']*1e6:9.1f} us (burst {rec['burst']['median_s']*1e6:9.1f}) "
        f"{t.get('sm_clock_median_mhz')} MHz {t.get('power_median_w')} W", flush=True)
  save()
time.sleep(3.0); out["idle_after"] = telemetry(time.perf_counter() - 2.5, time.perf_counter())
stop.set(); out["wall_s"] = time.perf_counter() - t_start; save()
print(f"done in {out['wall_s']:.0f} s", flush=True)
