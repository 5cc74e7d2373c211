# Where the eager GPT-2 step's time goes: the host's cost per op from Python, then kernel time against wall time.
import json, os, sys, time, torch
from torch.profiler import profile, ProfilerActivity
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_eager_step import GPT, configs
out = {"device": torch.cuda.get_device_name(0)}
x = torch.ones(1, device="cuda"); torch.cuda.synchronize()
for n in (2000, 20000):
    t0 = time.perf_counter()
    for _ in range(n): x.add_(1.0)
    t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    out[f"python_add_{n}"] = {"issue_per_op_s": (t1 - t0) / n, "with_sync_per_op_s": (t2 - t0) / n}
print("host", out, flush=True)
with torch.autocast("cuda", dtype=torch.bfloat16):
    a = torch.ones(64, 64, device="cuda"); lin = torch.nn.Linear(64, 64).cuda(); torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5000): lin(a)
    out["autocast_linear_issue_per_call_s"] = (time.perf_counter() - t0) / 5000
print("autocast linear", out["autocast_linear_issue_per_call_s"], flush=True)
for variant in ("autocast", "bf16-params"):
  for name, B in (("gpt2", 1), ("gpt2", 8)):
    L, h, a_ = configs[name]
    m = GPT(L, h, a_, 1024).cuda()
    if variant == "bf16-params": m = m.to(torch.bfloat16)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.1)
    idx = torch.randint(0, 50257, (B, 1024), device="cuda"); tgt = idx.roll(1)
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=(variant == "autocast")):
            loss = m(idx, tgt)
        loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); opt.zero_grad(); loss.item()
    for _ in range(5): step()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(10): step()
    wall = (time.perf_counter() - t0) / 10
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3): step()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    evs = evs or list(prof.events())
    busy = sum(e.time_range.elapsed_us() for e in evs) * 1e-6 / 3
    agg = {}
    for e in evs:
        k = agg.setdefault(e.name[:90], [0, 0.0]); k[0] += 1; k[1] += e.time_range.elapsed_us() * 1e-6 / 3
    top = sorted(agg.items(), key=lambda kv: -kv[1][1])[:30]
    c = {"variant": variant, "model": name, "batch": B, "wall_per_iteration_s": wall, "kernel_time_per_iteration_s": busy,
         "kernels_per_iteration": len(evs) / 3, "top": [[k, v[0] / 3, v[1]] for k, v in top]}
    out.setdefault("cases", []).append(c)
    print(variant, name, B, "wall %.2f ms, kernels %.2f ms, %d kernels" % (wall * 1e3, busy * 1e3, len(evs) / 3), flush=True)
    for k, v in top[:12]: print("   %8.3f ms %6.0f  %s" % (v[1] * 1e3, v[0] / 3, k[:80]))
    del m, opt; torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
