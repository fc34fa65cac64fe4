#!/usr/bin/python3
"""torch_gpt.py - the engine's GPT (engine/model/gpt.cpp) trained in PyTorch, for perf/engine.

    /usr/bin/python3 perf/engine/torch_gpt.py --data data/moby_dick.txt --n-layer 4 \\
        --n-embd 128 --n-head 4 --seq-len 64 --batch-size 16 --steps 60 [--threads 1]

The same model as plexus-train's: byte tokens (vocabulary 256), learned positions, pre-LayerNorm
blocks (attention with a fused qkv projection, GELU with the tanh approximation), a final
LayerNorm and the LM head tied to the token embedding; the same GPT-2 initialization drawn from
the same random streams (engine/model/rng.h: splitmix64 and Box-Muller per tensor), the same
training windows (engine/data/text_dataset.cpp: an offset per (seed, step, row)), the same
learning-rate schedule (linear warm-up, cosine decay to 0.1 lr over --steps), AdamW (betas 0.9,
0.95, eps 1e-8, decay on the weight matrices and embeddings) and global gradient clipping.
So, in fp32, the first steps' losses agree with plexus-train's to about 1e-5, and any
difference in speed is the implementation's.

Prints one JSON object per step on stdout: {"step", "loss", "step_s", "tokens_per_s"}.
--threads sets torch's intra-op threads (torch.set_num_threads); OpenBLAS's own threads follow
OPENBLAS_NUM_THREADS as usual.
"""
import argparse
import json
import math
import sys
import time

import numpy as np

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def splitmix_outputs(state, count):
    """The first `count` outputs of splitmix64 seeded with `state` (numpy, vectorized)."""
    with np.errstate(over="ignore"):
        k = np.arange(1, count + 1, dtype=np.uint64)
        z = np.uint64(state) + k * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def mix(x):
    """engine/data/text_dataset.cpp's mix: the first splitmix64 output seeded with x."""
    z = (x + GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def normal_samples(seed, n):
    """NormalSampler(seed): n standard normals, Box-Muller with both values of each pair."""
    pairs = (n + 1) // 2
    bits = splitmix_outputs(seed, 2 * pairs)
    u = ((bits >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0 ** -53
    r = np.sqrt(-2.0 * np.log(u[0::2]))
    theta = 6.283185307179586 * u[1::2]
    out = np.empty(2 * pairs, dtype=np.float64)
    out[0::2] = r * np.cos(theta)
    out[1::2] = r * np.sin(theta)
    return out[:n]


def parameter_table(L, C, T, V=256):
    """(name, shape, init, decay) in engine/model/gpt_params.cpp's order."""
    table = [("wte", (V, C), "normal", True), ("wpe", (T, C), "normal", True)]
    for l in range(L):
        p = "blocks.%d." % l
        table += [(p + "ln1.weight", (C,), "ones", False), (p + "ln1.bias", (C,), "zeros", False),
                  (p + "attn.qkv.weight", (3 * C, C), "normal", True),
                  (p + "attn.qkv.bias", (3 * C,), "zeros", False),
                  (p + "attn.proj.weight", (C, C), "residual", True),
                  (p + "attn.proj.bias", (C,), "zeros", False),
                  (p + "ln2.weight", (C,), "ones", False), (p + "ln2.bias", (C,), "zeros", False),
                  (p + "mlp.fc.weight", (4 * C, C), "normal", True),
                  (p + "mlp.fc.bias", (4 * C,), "zeros", False),
                  (p + "mlp.proj.weight", (C, 4 * C), "residual", True),
                  (p + "mlp.proj.bias", (C,), "zeros", False)]
    table += [("ln_f.weight", (C,), "ones", False), ("ln_f.bias", (C,), "zeros", False)]
    return table


def initial_values(table, L, seed):
    std = 0.02
    residual_std = std / math.sqrt(2.0 * L)
    values = {}
    for i, (name, shape, init, _) in enumerate(table):
        n = int(np.prod(shape))
        if init == "zeros":
            v = np.zeros(n, dtype=np.float32)
        elif init == "ones":
            v = np.ones(n, dtype=np.float32)
        else:
            stream = mix(seed ^ ((0xD1B54A32D192ED03 * (i + 1)) & MASK64))
            s = std if init == "normal" else residual_std
            v = (s * normal_samples(stream, n)).astype(np.float32)
        values[name] = v.reshape(shape)
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="data/moby_dick.txt")
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--warmup-steps", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    a = ap.parse_args()
    if a.n_embd % a.n_head != 0 or min(a.n_layer, a.n_head, a.seq_len, a.batch_size,
                                       a.steps) < 1:
        ap.error("n_embd must be a multiple of n_head, and every size at least 1")

    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    L, C, T, NH, B = a.n_layer, a.n_embd, a.seq_len, a.n_head, a.batch_size

    with open(a.data, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8)
    train_end = len(data) - len(data) // 10
    span = train_end - T
    if span < 1:
        sys.exit("torch_gpt.py: %s is too short for --seq-len %d" % (a.data, T))

    table = parameter_table(L, C, T)
    init = initial_values(table, L, a.seed)
    params = {name: torch.nn.Parameter(torch.from_numpy(init[name].copy())) for name, *_ in table}
    decay = [params[n] for n, _, _, d in table if d]
    no_decay = [params[n] for n, _, _, d in table if not d]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    causal = torch.ones(T, T, dtype=torch.bool).tril()

    def forward(tokens, targets):
        x = params["wte"][tokens] + params["wpe"][:T]
        for l in range(L):
            p = "blocks.%d." % l
            h = F.layer_norm(x, (C,), params[p + "ln1.weight"], params[p + "ln1.bias"], 1e-5)
            qkv = F.linear(h, params[p + "attn.qkv.weight"], params[p + "attn.qkv.bias"])
            q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in qkv.split(C, dim=2))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // NH))
            att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + F.linear(y, params[p + "attn.proj.weight"], params[p + "attn.proj.bias"])
            h = F.layer_norm(x, (C,), params[p + "ln2.weight"], params[p + "ln2.bias"], 1e-5)
            h = F.gelu(F.linear(h, params[p + "mlp.fc.weight"], params[p + "mlp.fc.bias"]),
                       approximate="tanh")
            x = x + F.linear(h, params[p + "mlp.proj.weight"], params[p + "mlp.proj.bias"])
        x = F.layer_norm(x, (C,), params["ln_f.weight"], params["ln_f.bias"], 1e-5)
        logits = x @ params["wte"].t()
        return F.cross_entropy(logits.view(-1, 256), targets.view(-1))

    seed_mix = mix(a.seed)
    min_lr = a.lr * 0.1
    for step in range(a.steps):
        offsets = [mix(mix(seed_mix ^ step) ^ row) % span for row in range(B)]
        windows = np.stack([data[o:o + T + 1] for o in offsets]).astype(np.int64)
        tokens = torch.from_numpy(windows[:, :T].copy())
        targets = torch.from_numpy(windows[:, 1:].copy())
        if step < a.warmup_steps:
            lr = a.lr * (step + 1) / a.warmup_steps
        else:
            progress = min(1.0, (step - a.warmup_steps) / max(1, a.steps - a.warmup_steps))
            lr = min_lr + 0.5 * (a.lr - min_lr) * (1.0 + math.cos(math.pi * progress))
        for g in opt.param_groups:
            g["lr"] = lr
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = forward(tokens, targets)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params.values(), a.grad_clip)
        opt.step()
        step_s = time.perf_counter() - start
        print(json.dumps({"step": step + 1, "loss": loss.item(), "step_s": step_s,
                          "tokens_per_s": B * T / step_s}), flush=True)


if __name__ == "__main__":
    main()
