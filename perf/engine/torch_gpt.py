#!/usr/bin/python3
"""torch_gpt.py - plexus-train's GPT trained in one PyTorch process, timed per step (perf/engine).

    /usr/bin/python3 perf/engine/torch_gpt.py --data data/moby_dick.txt --n-layer 4 \\
        --n-embd 128 --n-head 4 --seq-len 64 --batch-size 16 --steps 60 [--threads 1]

The model, its initialization, the training windows and the learning-rate schedule are
python/examples' (gpt_model.py, text_data.py, gpt_ddp.learning_rate: the engine's, value for
value), with torch.optim.AdamW (betas 0.9, 0.95, eps 1e-8, decay where the engine decays) and
global gradient clipping, as plexus-train runs one process. So in fp32 the losses agree with
plexus-train's to float rounding (2e-7 after 30 steps), and a difference in speed is the
implementation's. Timed per step: the batch's forward, backward, clipping and AdamW step.

Prints one JSON object per step on stdout: {"step", "loss", "step_s", "tokens_per_s"}.
--threads sets torch's intra-op threads (torch.set_num_threads); OpenBLAS's own threads follow
OPENBLAS_NUM_THREADS as usual.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python", "examples"))


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
    if min(a.n_layer, a.n_head, a.n_embd, a.seq_len, a.batch_size, a.steps, a.threads) < 1:
        ap.error("--n-layer, --n-head, --n-embd, --seq-len, --batch-size, --steps and --threads "
                 "must be at least 1")
    if a.n_embd % a.n_head != 0:
        ap.error("--n-embd %d is not a multiple of --n-head %d" % (a.n_embd, a.n_head))
    a.min_lr_ratio = 0.1  # plexus-train's (engine/optim/lr_schedule.h)

    import torch
    from gpt_ddp import learning_rate
    from gpt_model import Gpt, GptConfig
    from text_data import TextDataset
    torch.set_num_threads(a.threads)

    data = TextDataset(a.data, a.seq_len)
    model = Gpt(GptConfig(vocab_size=256, max_seq_len=a.seq_len, n_layer=a.n_layer,
                          n_head=a.n_head, n_embd=a.n_embd))
    model.init_parameters(a.seed)
    optimizer = torch.optim.AdamW(model.optimizer_groups(a.weight_decay), lr=a.lr,
                                  betas=(0.9, 0.95), eps=1e-8)
    for step in range(a.steps):
        tokens, targets = data.train_batch(a.seed, step, 0, a.batch_size)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(a, step)
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        _, loss = model(tokens, targets)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        optimizer.step()
        step_s = time.perf_counter() - start
        print(json.dumps({"step": step + 1, "loss": loss.item(), "step_s": step_s,
                          "tokens_per_s": a.batch_size * a.seq_len / step_s}), flush=True)


if __name__ == "__main__":
    main()
