#!/usr/bin/python3
"""gpt_ddp.py - data-parallel training of plexus-train's GPT on Moby-Dick with PyTorch DDP.

The same model, init, batches, optimizer and schedule as

    build/bin/plexus-run -n 4 -- build/bin/plexus-train --placement D4 --data data/moby_dick.txt

written in PyTorch and trained with torch.nn.parallel.DistributedDataParallel over the
torch.distributed backend "plexus" (Plexus's collectives, from the plexus_torch package that
CMake builds into build/python/) or "gloo". Every rank holds a full replica of the model and
runs its share of each global batch (global batch / world size rows, split into --microbatches
microbatches); DDP averages the gradients over the ranks, so every replica takes the same step.
Rank 0 prints a line every 10 steps and the validation loss every 100.

Run (Debian's /usr/bin/python3 has torch; fetch the data first with scripts/fetch-data.sh):

    /usr/bin/python3 python/examples/gpt_ddp.py --backend gloo          # 4 ranks, spawned here
    /usr/bin/python3 python/examples/gpt_ddp.py                         # --backend plexus: needs
                                     # build/python/plexus_torch (or $PLEXUS_BUILD_DIR/python)
    build/bin/plexus-torchrun --nproc_per_node 4 python/examples/gpt_ddp.py [--backend gloo]

Run directly, it starts --nproc ranks itself (torch.multiprocessing.spawn, rendezvous on
127.0.0.1). Started by a torchrun-style launcher (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
MASTER_PORT in the environment), it runs just that rank and ignores --nproc.
"""
import argparse
import contextlib
import math
import os
import socket
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

from gpt_model import Gpt, GptConfig
from text_data import TextDataset

REPO_ROOT = Path(__file__).resolve().parents[2]


def add_plexus_torch_to_path():
    """Puts the build's python/ folder (where plexus_torch lives) on sys.path:
    $PLEXUS_BUILD_DIR/python first, then <repo>/build/python."""
    candidates = []
    if os.environ.get("PLEXUS_BUILD_DIR"):
        candidates.append(Path(os.environ["PLEXUS_BUILD_DIR"]) / "python")
    candidates.append(REPO_ROOT / "build" / "python")
    for folder in reversed(candidates):  # inserted at the front: the first candidate wins
        if folder.is_dir() and str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


def import_backend(backend):
    """`import plexus_torch` registers the torch.distributed backend "plexus"."""
    if backend != "plexus":
        return
    add_plexus_torch_to_path()
    try:
        import plexus_torch  # noqa: F401  (imported for its registration)
    except ImportError as e:
        raise SystemExit(f"gpt_ddp: --backend plexus needs the plexus_torch package ({e}); build "
                         f"it (CMake puts it in build/python/, or set PLEXUS_BUILD_DIR) or use "
                         f"--backend gloo") from e


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--backend", choices=["plexus", "gloo"], default="plexus",
                   help="torch.distributed backend")
    p.add_argument("--nproc", type=int, default=4,
                   help="ranks to start when not under a launcher (the world size)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch threads per rank; 0: the cores shared by the ranks on this host")
    p.add_argument("--data", default=str(REPO_ROOT / "data" / "moby_dick.txt"),
                   help="text file; byte-level tokens, last 10%% validation")
    # Defaults below are plexus-train's (engine/config/options.h), except --steps (1000 there).
    p.add_argument("--n-layer", type=int, default=4, help="transformer blocks")
    p.add_argument("--n-head", type=int, default=4, help="attention heads")
    p.add_argument("--n-embd", type=int, default=128, help="embedding width")
    p.add_argument("--seq-len", type=int, default=64, help="context length in bytes")
    p.add_argument("--batch-size", type=int, default=32,
                   help="global batch in sequences, split over the ranks")
    p.add_argument("--microbatches", type=int, default=1,
                   help="microbatches per step and rank (gradient accumulation)")
    p.add_argument("--steps", type=int, default=200, help="optimizer steps")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    p.add_argument("--min-lr-ratio", type=float, default=0.1,
                   help="cosine decay ends at lr * this")
    p.add_argument("--warmup-steps", type=int, default=50, help="linear warm-up steps")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decoupled weight decay")
    p.add_argument("--grad-clip", type=float, default=1.0,
                   help="global gradient-norm clip (0: off)")
    p.add_argument("--seed", type=int, default=1234, help="seed for initialisation and batches")
    p.add_argument("--val-every", type=int, default=100,
                   help="steps between validation passes (0: off)")
    p.add_argument("--val-batches", type=int, default=8, help="batches per validation pass")
    p.add_argument("--log-every", type=int, default=10, help="steps between log lines")
    return p.parse_args(argv)


def learning_rate(args, step):
    """Linear warm-up, then cosine decay to lr * min_lr_ratio at the last step, as
    plexus-train's learning_rate (engine/optim/lr_schedule.h). step counts from 0."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    span = max(1, args.steps - args.warmup_steps)
    progress = min(1.0, (step - args.warmup_steps) / span)
    min_lr = args.lr * args.min_lr_ratio
    return min_lr + 0.5 * (args.lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def replica_mean(value, world_size):
    """The mean of a float over the ranks (a SUM allreduce: gloo has no AVG)."""
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.item() / world_size


@torch.no_grad()
def validation_loss(model, data, args, rank, world_size):
    """Mean loss over the fixed validation windows, each rank taking its rows of each batch
    (trainer.cpp:209), averaged over the ranks."""
    local_rows = args.batch_size // world_size
    total = 0.0
    for i in range(args.val_batches):
        tokens, targets = data.validation_batch(i, args.val_batches, args.batch_size,
                                                rank * local_rows, local_rows)
        total += model(tokens, targets)[1].item()
    return replica_mean(total / args.val_batches, world_size)


def train(args, rank, world_size):
    """The training loop of one rank (train_loop and train_step in engine/train/training_loop.cpp,
    D-only placement)."""
    if args.batch_size % world_size != 0:
        raise SystemExit(f"gpt_ddp: --batch-size {args.batch_size} does not split over "
                         f"world size {world_size}")
    local_rows = args.batch_size // world_size  # this rank's share of each global batch
    if local_rows % args.microbatches != 0:
        raise SystemExit(f"gpt_ddp: {local_rows} rows per rank do not split into "
                         f"{args.microbatches} equal microbatches")
    microbatch_rows = local_rows // args.microbatches
    leader = rank == 0

    data = TextDataset(args.data, args.seq_len)
    config = GptConfig(vocab_size=256, max_seq_len=args.seq_len, n_layer=args.n_layer,
                       n_head=args.n_head, n_embd=args.n_embd)
    torch.manual_seed(args.seed)  # nothing below draws from it; set for any later addition
    model = Gpt(config)
    model.init_parameters(args.seed)  # the engine's init, identical on every rank
    # DDP broadcasts rank 0's parameters at construction and averages gradients in buckets
    # (25 MiB by default, as the engine's D plugin); the model has no buffers to keep in sync.
    ddp = DDP(model, broadcast_buffers=False)
    # torch.optim.AdamW is the engine's update (engine/optim/adamw.h:1-7); decay only where
    # the engine's decay mask is 1.
    optimizer = torch.optim.AdamW(model.optimizer_groups(args.weight_decay), lr=args.lr,
                                  betas=(0.9, 0.95), eps=1e-8)

    tokens_per_step = args.batch_size * args.seq_len
    if leader:
        n_params = sum(p.numel() for p in model.parameters())
        print(f"gpt_ddp: {world_size} ranks, backend {args.backend}, model {config.n_layer} "
              f"layers x {config.n_embd} dims x {config.n_head} heads ({n_params} parameters), "
              f"context {config.max_seq_len}, global batch {args.batch_size} ({local_rows} per "
              f"rank, {args.microbatches} microbatches), {torch.get_num_threads()} threads per "
              f"rank", flush=True)
        print(f"gpt_ddp: data {args.data}: {data.train_size()} training and "
              f"{data.validation_size()} validation bytes", flush=True)

    start = time.perf_counter()
    last_val = float("nan")
    for step in range(args.steps):
        t0 = time.perf_counter()
        tokens, targets = data.train_batch(args.seed, step, rank * local_rows, local_rows)
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for m in range(args.microbatches):
            rows = slice(m * microbatch_rows, (m + 1) * microbatch_rows)
            last = m == args.microbatches - 1
            # Only the last microbatch's backward allreduces; the others just accumulate.
            with ddp.no_sync() if not last else contextlib.nullcontext():
                _, loss = ddp(tokens[rows], targets[rows])
                (loss / args.microbatches).backward()
            loss_sum += loss.item()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            model.parameters(), args.grad_clip if args.grad_clip > 0 else float("inf")).item()
        lr = learning_rate(args, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        loss = replica_mean(loss_sum / args.microbatches, world_size)
        step_s = time.perf_counter() - t0
        elapsed = time.perf_counter() - start

        validate = args.val_every > 0 and ((step + 1) % args.val_every == 0
                                           or step + 1 == args.steps)
        if validate:
            last_val = validation_loss(model, data, args, rank, world_size)
        if leader:
            # Numbered from 1 as in plexus-train; "step N" shows the loss measured before update N.
            if (step + 1) % args.log_every == 0 or step == 0 or validate or step + 1 == args.steps:
                print(f"step {step + 1:5d}/{args.steps} | loss {loss:.4f} | lr {lr:.2e} | "
                      f"grad norm {grad_norm:.3f} | {tokens_per_step / step_s:7.0f} tok/s | "
                      f"{step_s:.3f} s | elapsed {elapsed:.1f} s", flush=True)
            if validate:
                print(f"step {step + 1:5d} | validation loss {last_val:.4f}", flush=True)
    if leader:
        print(f"gpt_ddp: {args.steps} steps in {time.perf_counter() - start:.1f} s, "
              f"validation loss {last_val:.4f}", flush=True)


def threads_per_rank(args, local_world_size):
    """The host's cores shared by the ranks on it (as plexus-train's BLAS threads), at least 1."""
    if args.threads > 0:
        return args.threads
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // max(1, local_world_size))


def run_rank(args, rank, world_size, local_world_size):
    """One rank: threads, backend, process group (env:// rendezvous), training, teardown."""
    threads = threads_per_rank(args, local_world_size)
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or parallel work already ran: harmless
        pass
    import_backend(args.backend)
    dist.init_process_group(args.backend, rank=rank, world_size=world_size)
    try:
        train(args, rank, world_size)
    finally:
        dist.destroy_process_group()


def spawned_rank(local_rank, args, master_port):
    """Entry point of a rank started by torch.multiprocessing.spawn: the environment a
    torchrun-style launcher would have set, then run_rank."""
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master_port),
                       "RANK": str(local_rank), "LOCAL_RANK": str(local_rank),
                       "WORLD_SIZE": str(args.nproc), "LOCAL_WORLD_SIZE": str(args.nproc)})
    run_rank(args, local_rank, args.nproc, args.nproc)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    args = parse_args()
    if not os.path.isfile(args.data):
        raise SystemExit(f"gpt_ddp: no data file {args.data} (scripts/fetch-data.sh fetches it)")
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun / plexus-torchrun
        world_size = int(os.environ["WORLD_SIZE"])
        local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
        run_rank(args, int(os.environ["RANK"]), world_size, local_world_size)
        return
    if args.nproc < 1:
        raise SystemExit(f"gpt_ddp: --nproc {args.nproc} < 1")
    import_backend(args.backend)  # fail here, once, rather than in every rank
    port = int(os.environ.get("MASTER_PORT", 0)) or free_port()
    mp.spawn(spawned_rank, args=(args, port), nprocs=args.nproc, join=True)


if __name__ == "__main__":
    main()
