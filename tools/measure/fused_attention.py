# Fused attention (PyTorch SDPA, flash and cuDNN backends) at dtsim-probe's attention grid: op-level times, bf16.
import json, sys, torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
dev = torch.device("cuda")
out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
       "cudnn": torch.backends.cudnn.version(), "entries": []}
def timed(fn, runs=20, warm=5):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1e-3)
    ts.sort(); return {"runs": runs, "median": ts[runs // 2], "min": ts[0], "max": ts[-1]}
heads, d = 16, 128
for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
    for s in (512, 1024, 2048, 4096, 8192):
        b = 8192 // s
        for causal in (False, True):
            q, k, v = (torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
            flops = 4 * b * heads * s * s * d / (2 if causal else 1)
            try:
                with sdpa_kernel(backend):
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    g = torch.randn_like(o)
                    fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                    def fb():
                        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal); y.backward(g)
                    both = timed(fb)
            except Exception as e:
                out["entries"].append({"backend": backend.name, "seq": s, "causal": causal, "error": str(e)[:200]}); continue
            e = {"backend": backend.name, "batch": b, "heads": heads, "head_dim": d, "seq": s, "causal": causal,
                 "flops_forward": flops, "forward": fwd, "forward_backward": both}
            out["entries"].append(e)
            print(f"{backend.name} s={s} causal={causal} fwd {fwd['median']*1e3:.3f} ms {flops/fwd['median']/1e12:.0f} TFLOP/s "
                  f"fwd+bwd {both['median']*1e3:.3f} ms {3.5*flops/both['median']/1e12:.0f} TFLOP/s", flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
