# A GPU's electrical draw at idle and under the loads a training step is made of, read from NVML's energy counter
# (nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded: the mean power of a phase is its energy
# over its time, free of nvidia-smi's one-second averaging) and sampled every 50 ms for the spread. Phases: idle before
# any work, a bf16 8192^3 GEMM loop (compute bound), a 4 GiB device-to-device copy loop (HBM bound), eager GPT-2 training
# steps (a real step's mix), then idle again after load (the clocks and fans settle back). The power limit and clocks
# come with it. Usage: python3 power_draw.py OUT.json
import json, sys, threading, time, statistics, torch, pynvml as nv
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from gpt2_eager_step import GPT, configs
nv.nvmlInit(); h = nv.nvmlDeviceGetHandleByIndex(0)
out = {"device": nv.nvmlDeviceGetName(h), "driver": nv.nvmlSystemGetDriverVersion(), "torch": torch.__version__,
       "enforced_power_limit_w": nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3,
       "default_power_limit_w": nv.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1e3,
       "date": time.strftime("%Y-%m-%d"), "phases": []}
samples = []; stop = threading.Event()
def sampler():
    while not stop.is_set():
        samples.append((time.perf_counter(), nv.nvmlDeviceGetPowerUsage(h) / 1e3,
                        nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM), nv.nvmlDeviceGetTemperature(h, 0)))
        time.sleep(0.05)
threading.Thread(target=sampler, daemon=True).start()
def phase(name, seconds, work=None):
    torch.cuda.synchronize(); e0 = nv.nvmlDeviceGetTotalEnergyConsumption(h); t0 = time.perf_counter(); n = 0
    while time.perf_counter() - t0 < seconds:
        if work: work(); n += 1
        else: time.sleep(0.1)
        if work and n % 20 == 0: torch.cuda.synchronize()
    torch.cuda.synchronize(); t1 = time.perf_counter(); e1 = nv.nvmlDeviceGetTotalEnergyConsumption(h)
    s = [x for x in samples if t0 + 1.0 <= x[0] <= t1]  # the first second is the ramp
    p = {"name": name, "seconds": t1 - t0, "calls": n, "mean_power_w": (e1 - e0) / 1e3 / (t1 - t0),
         "sampled_median_w": statistics.median(x[1] for x in s), "sampled_max_w": max(x[1] for x in s),
         "sm_clock_median_mhz": statistics.median(x[2] for x in s), "temperature_max_c": max(x[3] for x in s)}
    out["phases"].append(p); print(p, flush=True); return p
phase("idle", 10)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a); c = torch.empty_like(a)
p = phase("gemm_bf16_8192", 25, lambda: torch.matmul(a, b, out=c))
p["tflops"] = 2 * 8192**3 * p["calls"] / p["seconds"] / 1e12
del a, b, c
x = torch.empty(2**31, device="cuda", dtype=torch.int16); y = torch.empty_like(x)
p = phase("copy_d2d_4gib", 20, lambda: y.copy_(x)); p["gb_per_s_read_plus_write"] = 2 * 2**32 * p["calls"] / p["seconds"] / 1e9
del x, y; torch.cuda.empty_cache()
L, hd, heads = configs["gpt2-medium"]; m = GPT(L, hd, heads, 1024).cuda()
opt = torch.optim.AdamW(m.parameters(), lr=1e-4); idx = torch.randint(0, 50257, (8, 1024), device="cuda"); tgt = idx.roll(1)
def step():
    with torch.autocast("cuda", dtype=torch.bfloat16): loss = m(idx, tgt)
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
p = phase("gpt2_medium_b8_train_step", 25, step)
del m, opt; torch.cuda.empty_cache()
phase("idle_after_load", 15)
stop.set(); json.dump(out, open(sys.argv[1], "w"), indent=1)
