# GPT-2 training steps in eager PyTorch as a torch.nn model is usually written (nanoGPT's layout without its flash
# path): Linear layers with bias, explicit attention (matmul, scale, causal mask, softmax, dropout, matmul), tanh GELU,
# dropout 0.1, tied LM head, F.cross_entropy, fp32 parameters under torch.autocast(bf16), clip_grad_norm_(1.0),
# torch.optim.AdamW (foreach). Per-phase GPU times with CUDA events; the iteration also reads the loss with .item().
import json, math, sys, time, torch, torch.nn as nn, torch.nn.functional as F
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
class Block(nn.Module):
    def __init__(s, h, a, T, p):
        super().__init__(); s.a = a
        s.ln1 = nn.LayerNorm(h); s.qkv = nn.Linear(h, 3 * h); s.proj = nn.Linear(h, h)
        s.ln2 = nn.LayerNorm(h); s.fc = nn.Linear(h, 4 * h); s.fc2 = nn.Linear(4 * h, h)
        s.drop = nn.Dropout(p); s.adrop = nn.Dropout(p)
        s.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)), persistent=False)
    def forward(s, x):
        B, T, H = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(H, dim=2)
        q, k, v = (t.view(B, T, s.a, H // s.a).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(H // s.a))
        att = att.masked_fill(~s.mask[:T, :T], float("-inf"))
        att = s.adrop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, H)
        x = x + s.drop(s.proj(y))
        return x + s.drop(s.fc2(F.gelu(s.fc(s.ln2(x)), approximate="tanh")))
class GPT(nn.Module):
    def __init__(s, L, h, a, T, V=50257, p=0.1):
        super().__init__()
        s.wte = nn.Embedding(V, h); s.wpe = nn.Embedding(T, h); s.drop = nn.Dropout(p)
        s.blocks = nn.ModuleList(Block(h, a, T, p) for _ in range(L)); s.lnf = nn.LayerNorm(h)
    def forward(s, idx, tgt):
        x = s.drop(s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=idx.device)))
        for b in s.blocks: x = b(x)
        logits = F.linear(s.lnf(x), s.wte.weight)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), tgt.view(-1))
configs = {"gpt2": (12, 768, 12), "gpt2-medium": (24, 1024, 16), "gpt2-xl": (48, 1600, 25)}
if __name__ == "__main__":
    runs = [("gpt2", 1), ("gpt2", 8), ("gpt2-medium", 4), ("gpt2-xl", 2)]
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda, "cases": []}
    for name, B in runs:
        L, h, a = configs[name]; T = 1024
        torch.manual_seed(0)
        m = GPT(L, h, a, T).to(dev); m.train()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.1)  # foreach is the CUDA default
        idx = torch.randint(0, 50257, (B, T), device=dev); tgt = torch.randint(0, 50257, (B, T), device=dev)
        ev = lambda: torch.cuda.Event(enable_timing=True)
        phases = {"forward": [], "backward": [], "clip": [], "optimizer": [], "iteration_wall": []}
        for it in range(25):
            e = [ev() for _ in range(5)]
            t0 = time.perf_counter(); e[0].record()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = m(idx, tgt)
            e[1].record(); loss.backward(); e[2].record()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); e[3].record()
            opt.step(); opt.zero_grad(set_to_none=True); e[4].record()
            loss.item(); wall = time.perf_counter() - t0
            if it >= 5:
                for i, k in enumerate(("forward", "backward", "clip", "optimizer")): phases[k].append(e[i].elapsed_time(e[i + 1]) * 1e-3)
                phases["iteration_wall"].append(wall)
        med = {k: sorted(v)[len(v) // 2] for k, v in phases.items()}
        params = sum(p.numel() for p in m.parameters())
        c = {"model": name, "layers": L, "hidden": h, "heads": a, "seq": T, "batch": B, "parameters": params,
             "median_s": med, "runs": len(phases["forward"]), "peak_memory_bytes": torch.cuda.max_memory_allocated()}
        out["cases"].append(c)
        print(name, B, params, {k: round(v * 1e3, 3) for k, v in med.items()}, "ms", flush=True)
        del m, opt; torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    json.dump(out, open(sys.argv[1], "w"), indent=1)
