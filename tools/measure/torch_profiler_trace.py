# A PyTorch profiler (Kineto) trace of eager GPT-2 training steps, as a user would record their own job with
# torch.profiler and export_chrome_trace: CPU ops with input shapes, CUDA kernels, memcpy and memset on their streams,
# the flow links from launch to kernel. Usage: python3 torch_profiler_trace.py OUT_PREFIX (writes OUT_PREFIX-gpt2-b4.json)
import sys, torch
from torch.profiler import profile, ProfilerActivity, schedule
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from gpt2_eager_step import GPT, configs
torch.manual_seed(0)
L, h, a = configs["gpt2"]; m = GPT(L, h, a, 1024).cuda(); opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
idx = torch.randint(0, 50257, (4, 1024), device="cuda"); tgt = idx.roll(1)
def step():
    with torch.autocast("cuda", dtype=torch.bfloat16): loss = m(idx, tgt)
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
             schedule=schedule(wait=0, warmup=3, active=1, repeat=1)) as prof:
    for _ in range(4): step(); prof.step()
prof.export_chrome_trace(sys.argv[1] + "-gpt2-b4.json")
print("parameters", sum(p.numel() for p in m.parameters()))
