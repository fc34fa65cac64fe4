"""gpt_model.py - the engine's GPT (engine/model/gpt.h, gpt.cpp, gpt_params.cpp) in PyTorch.

A GPT-2 style decoder-only transformer after karpathy/llm.c, byte-level (vocabulary 256):

    x = wte[tokens] + wpe[0:T]
    for each block: x = x + attn(ln1(x)); x = x + mlp(ln2(x))     mlp = proj(gelu_tanh(fc(.)))
    logits = ln_f(x) wte^T                                         (tied LM head, no bias)
    loss = mean over positions of -log softmax(logits)[target]

Parameter names, shapes and order follow the engine's parameter table (gpt_params.cpp:56-80),
and init_parameters(seed) reproduces Gpt::init_parameters (gpt_params.cpp:94) value for value:
weights and embeddings N(0, 0.02), the residual projections (attn.proj, mlp.proj)
N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm gains 1, each tensor from its own
splitmix64 + Box-Muller stream seeded by (seed, tensor index).
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from splitmix import MASK64, mix, normal_stream

INIT_STD = 0.02  # gpt_params.cpp:13
LAYERNORM_EPS = 1e-5  # engine/model/layers/layernorm.h:9


@dataclass
class GptConfig:
    vocab_size: int = 256
    max_seq_len: int = 64  # size of the position embedding; T may not exceed it
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128  # must be a multiple of n_head


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, GPT-2 layout (layers/attention.h): one qkv projection
    (3C, C) whose output holds q, k, v side by side, head h owning columns h*hs..(h+1)*hs-1."""

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.n_head = config.n_head
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        T = config.max_seq_len
        # 0 on and below the diagonal, -inf above: added to the scores, it hides future positions.
        # A float buffer, not a bool one: DDP's initial broadcast (gloo) refuses bool tensors.
        mask = torch.full((T, T), float("-inf")).triu(diagonal=1)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, NH, T, T)
        att = (att + self.causal_mask[:T, :T]).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # the heads side by side
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.fc = nn.Linear(C, 4 * C)
        self.proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))  # layers/gelu.cpp


class Block(nn.Module):
    """A pre-LN transformer block (gpt.cpp:94-108)."""

    def __init__(self, config):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd, eps=LAYERNORM_EPS)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.n_embd, eps=LAYERNORM_EPS)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.n_embd % config.n_head != 0:
            raise ValueError(f"n_embd {config.n_embd} is not a multiple of n_head {config.n_head}")
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.max_seq_len, config.n_embd)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, eps=LAYERNORM_EPS)

    def forward(self, tokens, targets=None):
        """tokens, targets (B, T) int64. Returns (logits (B, T, V), mean cross-entropy or None)."""
        T = tokens.shape[1]
        if T > self.config.max_seq_len:
            raise ValueError(f"T {T} exceeds max_seq_len {self.config.max_seq_len}")
        x = self.wte(tokens) + self.wpe.weight[:T]
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head (gpt.cpp:110)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return logits, loss

    def param_table(self):
        """(engine name, parameter, init kind, weight decay) in the engine's buffer order
        (gpt_params.cpp:60-80). Kinds: normal, residual, zeros, ones. Decay applies to matmul
        weights and the two embeddings, not to biases or LayerNorm gains and biases."""
        table = [("wte", self.wte.weight, "normal", True),
                 ("wpe", self.wpe.weight, "normal", True)]
        for l, b in enumerate(self.blocks):
            p = f"blocks.{l}."
            table += [
                (p + "ln1.weight", b.ln1.weight, "ones", False),
                (p + "ln1.bias", b.ln1.bias, "zeros", False),
                (p + "attn.qkv.weight", b.attn.qkv.weight, "normal", True),
                (p + "attn.qkv.bias", b.attn.qkv.bias, "zeros", False),
                (p + "attn.proj.weight", b.attn.proj.weight, "residual", True),
                (p + "attn.proj.bias", b.attn.proj.bias, "zeros", False),
                (p + "ln2.weight", b.ln2.weight, "ones", False),
                (p + "ln2.bias", b.ln2.bias, "zeros", False),
                (p + "mlp.fc.weight", b.mlp.fc.weight, "normal", True),
                (p + "mlp.fc.bias", b.mlp.fc.bias, "zeros", False),
                (p + "mlp.proj.weight", b.mlp.proj.weight, "residual", True),
                (p + "mlp.proj.bias", b.mlp.proj.bias, "zeros", False),
            ]
        table += [("ln_f.weight", self.ln_f.weight, "ones", False),
                  ("ln_f.bias", self.ln_f.bias, "zeros", False)]
        assert len(table) == len(list(self.parameters())), "param_table misses a parameter"
        return table

    @torch.no_grad()
    def init_parameters(self, seed):
        """Gpt::init_parameters(seed): the same values on every rank and as plexus-train."""
        residual_std = INIT_STD / math.sqrt(2.0 * self.config.n_layer)
        for i, (_, param, kind, _) in enumerate(self.param_table()):
            if kind == "zeros":
                param.zero_()
            elif kind == "ones":
                param.fill_(1.0)
            else:
                std = INIT_STD if kind == "normal" else residual_std
                # one stream per tensor: (seed, index) mixed through one splitmix64 step
                stream_seed = mix(seed ^ ((0xD1B54A32D192ED03 * (i + 1)) & MASK64))
                values = (std * normal_stream(stream_seed, param.numel())).astype("float32")
                param.copy_(torch.from_numpy(values).view_as(param))

    def optimizer_groups(self, weight_decay):
        """AdamW parameter groups: decay where the engine's decay_mask is 1 (gpt.h:46)."""
        table = self.param_table()
        return [{"params": [p for _, p, _, d in table if d], "weight_decay": weight_decay},
                {"params": [p for _, p, _, d in table if not d], "weight_decay": 0.0}]
