# GEMMs whose dimension is not a multiple of 8 elements (16 bytes of bf16): GPT-2's 50,257-token LM head, against
# the same GEMM padded to 50,304 (nanoGPT's padding), in the three orientations of a training step (forward, input
# gradient, weight gradient), as torch.matmul runs them in bf16. Median of 20 timed runs after 5 (CUDA events).
import json, sys, torch
def timed(fn, runs=20, warm=5):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(runs):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1e-3)
    ts.sort(); return ts[runs // 2]
out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cases": []}
T, H = 8192, 768
for dtype in (torch.bfloat16, torch.float16):
    for V in (50257, 50304, 50256, 50264):
        x = torch.randn(T, H, device="cuda", dtype=dtype); w = torch.randn(V, H, device="cuda", dtype=dtype)
        g = torch.randn(T, V, device="cuda", dtype=dtype)
        for name, fn, m, n, k in (("forward x w^T", lambda: x @ w.t(), T, V, H),
                                  ("input grad g w", lambda: g @ w, T, H, V),
                                  ("weight grad g^T x", lambda: g.t() @ x, V, H, T)):
            t = timed(fn); fl = 2 * m * n * k
            out["cases"].append({"dtype": str(dtype), "vocab": V, "op": name, "m": m, "n": n, "k": k, "median_s": t,
                                 "tflops": fl / t / 1e12})
            print(f"{dtype} V={V} {name:18s} {m}x{n}x{k} {t*1e3:.3f} ms {fl/t/1e12:.0f} TFLOP/s", flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
