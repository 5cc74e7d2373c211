# Whole training steps of a few Llama blocks on one GPU, at the shapes of the shipped Llama scenarios, to set beside
# dtsim's prediction of the same step (tools/measure/llama_blocks_step.json with `dtsim run --ops`) and beside its
# replay of the trace this writes. What lies between the kernels shows here: every kernel's time summed by class
# (GEMMs, attention, the memory-bound rest, copies) against the step's GPU span, the difference being the gaps.
#
# Cases. "eager": PyTorch as a user writes Llama (Meta's reference layout): fp32 parameters under bf16 autocast,
# RMSNorm in fp32, rotary embeddings, grouped-query attention through scaled_dot_product_attention pinned to
# FlashAttention-2, SwiGLU, untied embedding and LM head, F.cross_entropy, torch.optim.AdamW(fused=True), no clipping.
# "te-bf16" and "te-fp8", where Transformer Engine is installed: the same blocks as its TransformerLayer (bf16
# parameters, its fused attention backend), the second under fp8_autocast with delayed scaling (HYBRID: E4M3 forward,
# E5M2 backward; amax history 1024, max), as NeMo's recipes run it. A case that fails records its error and the
# others go on. Each case: --warmup steps, then --steps steps timed per phase with CUDA events (medians), the wall time
# of a step with its loss.item(), then one step under torch.profiler exported as a Chrome trace (gzip).
#
# Usage:
#   python3 llama_blocks_step.py OUT_PREFIX [--blocks 4] [--seq 4096] [--steps 30] [--warmup 5]
#       writes OUT_PREFIX.json and OUT_PREFIX-<case>.trace.json.gz
#   python3 llama_blocks_step.py --plan [--blocks 4] [--seq 4096]
#       no GPU, no torch: the cases, the model's parameters and tokens, as JSON on stdout
import argparse
import gzip
import json
import os
import statistics
import sys
import time

LLAMA3_8B = {"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "vocab": 128256, "rope_theta": 500000.0}
CASES = ("eager", "te-bf16", "te-fp8")


def parameters(c, blocks):
    """Weights of `blocks` Llama blocks with the embedding, the final norm and an untied LM head."""
    h = c["hidden"]
    kv = h // c["heads"] * c["kv_heads"]
    block = h * (h + 2 * kv) + h * h + 3 * h * c["ffn"] + 2 * h  # q, k, v; o; gate, up, down; two norms
    return blocks * block + 2 * c["vocab"] * h + h


def kernel_class(name):
    """What bounds a CUDA kernel, read off its name as cuBLAS, CUTLASS, FlashAttention, cuDNN and PyTorch name them."""
    n = name.lower()
    if n.startswith(("memcpy", "memset")):
        return "copy"
    if any(k in n for k in ("flash", "fmha", "sdpa", "attention")):
        return "attention"
    if any(k in n for k in ("gemm", "nvjet", "xmma", "cutlass", "cublas", "s16816", "wgmma")):
        return "gemm"
    return "memory"  # elementwise, reductions, norms, the optimizer's multi-tensor kernels, casts


def summarize(events):
    """One profiled step's GPU kernels from a Chrome trace's events (times in microseconds): seconds and launches by
    class, the span from the first kernel's start to the last one's end, the time some kernel ran (the union over
    streams) and the gaps, the span less that."""
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    out = {"classes": {}, "kernels": len(kernels), "span_s": 0.0, "busy_s": 0.0, "gaps_s": 0.0}
    if not kernels:
        return out
    for e in kernels:
        row = out["classes"].setdefault(kernel_class(e["name"]), {"launches": 0, "seconds": 0.0})
        row["launches"] += 1
        row["seconds"] += e["dur"] * 1e-6
    intervals = sorted((e["ts"], e["ts"] + e["dur"]) for e in kernels)
    busy, (start, end) = 0.0, intervals[0]
    for s, e in intervals[1:]:
        if s > end:
            busy += end - start
            start, end = s, e
        else:
            end = max(end, e)
    busy += end - start
    span = max(e for _, e in intervals) - intervals[0][0]
    out.update(span_s=span * 1e-6, busy_s=busy * 1e-6, gaps_s=(span - busy) * 1e-6)
    return out


def median(values):
    return statistics.median(values) if values else None


def eager_model(torch, c, blocks, seq):
    nn, F = torch.nn, torch.nn.functional
    h, heads, kvh = c["hidden"], c["heads"], c["kv_heads"]
    d = h // heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x):
            x32 = x.float()
            return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * self.weight

    def rope(x, cos, sin):
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.wq, self.wk, self.wv = (nn.Linear(h, n * d, bias=False) for n in (heads, kvh, kvh))
            self.wo = nn.Linear(h, h, bias=False)
            self.w1, self.w3 = nn.Linear(h, c["ffn"], bias=False), nn.Linear(h, c["ffn"], bias=False)
            self.w2 = nn.Linear(c["ffn"], h, bias=False)

        def forward(self, x, cos, sin):
            B, T, _ = x.shape
            y = self.n1(x)
            q = rope(self.wq(y).view(B, T, heads, d).transpose(1, 2), cos, sin)
            k = rope(self.wk(y).view(B, T, kvh, d).transpose(1, 2), cos, sin)
            v = self.wv(y).view(B, T, kvh, d).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + self.wo(o.transpose(1, 2).reshape(B, T, h))
            y = self.n2(x)
            return x + self.w2(F.silu(self.w1(y)) * self.w3(y))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(c["vocab"], h)
            self.blocks = nn.ModuleList(Block() for _ in range(blocks))
            self.norm, self.head = RMSNorm(), nn.Linear(h, c["vocab"], bias=False)
            inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2).float() / d))
            angles = torch.outer(torch.arange(seq).float(), inv)
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)

        def forward(self, idx, tgt):
            x = self.embed(idx)
            for b in self.blocks:
                x = b(x, self.cos, self.sin)
            logits = self.head(self.norm(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), tgt.view(-1))

    return Llama()


def te_model(torch, te, c, blocks, seq):
    nn, F = torch.nn, torch.nn.functional
    h = c["hidden"]

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(c["vocab"], h, dtype=torch.bfloat16)
            self.blocks = nn.ModuleList(
                te.TransformerLayer(h, c["ffn"], c["heads"], num_gqa_groups=c["kv_heads"], layernorm_epsilon=1e-5,
                                    hidden_dropout=0.0, attention_dropout=0.0, normalization="RMSNorm",
                                    activation="swiglu", bias=False, self_attn_mask_type="causal",
                                    attn_input_format="bshd", params_dtype=torch.bfloat16) for _ in range(blocks))
            self.norm = te.RMSNorm(h, eps=1e-5, params_dtype=torch.bfloat16)
            self.head = te.Linear(h, c["vocab"], bias=False, params_dtype=torch.bfloat16)
            self.rope = te.attention.RotaryPositionEmbedding(h // c["heads"], rotary_base=c["rope_theta"])

        def forward(self, idx, tgt):
            x = self.embed(idx)
            freqs = self.rope(seq)
            for b in self.blocks:
                x = b(x, rotary_pos_emb=freqs)
            logits = self.head(self.norm(x))
            return F.cross_entropy(logits.float().view(-1, logits.size(-1)), tgt.view(-1))

    return Llama()


def run_case(torch, name, args, prefix):
    c = LLAMA3_8B
    torch.manual_seed(0)
    if name == "eager":
        model = eager_model(torch, c, args.blocks, args.seq).cuda()
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def context():
            return sdpa_kernel(SDPBackend.FLASH_ATTENTION)

        def forward(idx, tgt):
            with torch.autocast("cuda", dtype=torch.bfloat16), context():
                return model(idx, tgt)

    else:
        import transformer_engine.pytorch as te
        from transformer_engine.common.recipe import DelayedScaling, Format

        model = te_model(torch, te, c, args.blocks, args.seq).cuda()
        recipe = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=1024, amax_compute_algo="max")

        def forward(idx, tgt):
            with te.fp8_autocast(enabled=name == "te-fp8", fp8_recipe=recipe):
                return model(idx, tgt)

    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
    idx = torch.randint(0, c["vocab"], (1, args.seq), device="cuda")
    tgt = torch.randint(0, c["vocab"], (1, args.seq), device="cuda")

    def step(events=None):
        mark = (lambda i: events[i].record()) if events else (lambda i: None)
        mark(0)
        loss = forward(idx, tgt)
        mark(1)
        loss.backward()
        mark(2)
        opt.step()
        opt.zero_grad(set_to_none=True)
        mark(3)
        return loss

    phases = {"forward": [], "backward": [], "optimizer": [], "step_wall": []}
    for i in range(args.warmup + args.steps):
        events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        t0 = time.perf_counter()
        step(events).item()
        wall = time.perf_counter() - t0
        if i >= args.warmup:
            for k, key in enumerate(("forward", "backward", "optimizer")):
                phases[key].append(events[k].elapsed_time(events[k + 1]) * 1e-3)
            phases["step_wall"].append(wall)
    from torch.profiler import ProfilerActivity, profile, schedule

    # One warm-up step, then the recorded one (ProfilerStep#1), as dtsim's pytorch-profiler reader takes a step.
    trace = f"{prefix}-{name}.trace.json.gz"
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=1, repeat=1)) as prof:
        for _ in range(2):
            step().item()
            prof.step()
    prof.export_chrome_trace(trace)
    with gzip.open(trace, "rt") as f:
        profiled = summarize(json.load(f).get("traceEvents", []))
    return {
        "case": name,
        "parameters": sum(p.numel() for p in model.parameters()),
        "median_s": {k: median(v) for k, v in phases.items()},
        "steps": args.steps,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
        "profiled_step": profiled,
        "trace": os.path.basename(trace),
    }


def main(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("prefix", nargs="?")
    p.add_argument("--plan", action="store_true")
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args(argv)
    plan = {"model": "llama3-8b", "blocks": args.blocks, "sequence": args.seq, "micro_batch": 1,
            "tokens_per_step": args.seq, "parameters": parameters(LLAMA3_8B, args.blocks), "cases": list(CASES)}
    if args.plan:
        print(json.dumps(plan, indent=1))
        return 0
    if not args.prefix:
        p.error("OUT_PREFIX is required unless --plan")
    import torch

    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "plan": plan, "cases": [], "errors": {}}
    try:
        import transformer_engine

        out["transformer_engine"] = transformer_engine.__version__
    except ImportError:
        out["transformer_engine"] = None
    for name in CASES:
        if name != "eager" and out["transformer_engine"] is None:
            out["errors"][name] = "skipped: transformer_engine is not installed"
            continue
        try:
            out["cases"].append(run_case(torch, name, args, args.prefix))
        except Exception as e:  # a case that fails is recorded, the others still run
            out["errors"][name] = f"{type(e).__name__}: {e}"
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    with open(args.prefix + ".json.tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(args.prefix + ".json.tmp", args.prefix + ".json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
