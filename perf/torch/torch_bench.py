#!/usr/bin/python3
"""torch_bench.py - torch.distributed collectives on Plexus beside Gloo, nccl-tests style.

    PYTHONPATH=build/python /usr/bin/python3 perf/torch/torch_bench.py [options]

For each rank count (-N, default 2,4) and backend (-B, default plexus,gloo) the script starts a
world of processes with torch.multiprocessing (spawn; MASTER_ADDR=127.0.0.1, a free port) and
times, on float32 CPU tensors with sum:

  all_reduce      dist.all_reduce                     (in place)
  all_gather      dist._all_gather_base               (= all_gather_into_tensor; torch 1.13's Gloo
                                                       lacks it and runs dist.all_gather into
                                                       views of one output tensor instead)
  reduce_scatter  dist._reduce_scatter_base           (= reduce_scatter_tensor; falls back to the
                                                       list dist.reduce_scatter, and prints
                                                       "n/a (gloo: not supported)" when neither
                                                       exists, as in torch 1.13's Gloo)
  all_gather_list dist.all_gather into a list of views (only when named in --ops)

from -b to -e bytes (multiplied by -f each step). Sizes and counts are nccl-tests' (and
plexus-bench's): all_reduce the buffer; all_gather the whole output, with count = elements each
rank sends; reduce_scatter the whole input, with count = elements each rank receives (rounded
down to a whole number of elements per rank).
Per size: -w untimed iterations, a barrier, -n timed iterations; time = the largest over ranks
of the per-iteration average; algbw = size / time; busbw = algbw * 2(n-1)/n (all_reduce) or
(n-1)/n (all_gather, reduce_scatter), as nccl-tests. Large sizes run fewer iterations: at most
--iter-bytes / size of them (at least --min-iters), and warm-ups in proportion. #wrong counts,
over all ranks, the elements of one further call on fresh rank-dependent integer-valued inputs
that differ from the values computed here (the timed all_reduce runs on zeros, since repeated
in-place sums of real data grow to inf). Then, in each world, --lat-iters all_reduce calls of
--lat-bytes (4 KiB) measure the latency alone (average, median and 99th percentile of single
calls, the largest over ranks).

Last, a summary per op, rank count and size: plexus and gloo time and busbw, ratio = plexus
busbw / gloo busbw, flagged where plexus is below --target x gloo from 64 KiB up, or slower than
gloo at the smallest size (4 KiB); --markdown prints it (and the latency table) as Markdown.

Exit status: 0 when every world finished with no wrong element, 1 otherwise, 2 for bad usage.
"""
import argparse
import datetime
import math
import os
import queue as queue_module
import socket
import sys
import time
import traceback
import warnings

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_gather_list")
DEFAULT_OPS = ("all_reduce", "all_gather", "reduce_scatter")
BUS_FACTOR = {  # busbw = algbw * factor(n), nccl-tests' definitions
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_gather_list": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
}


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------

def parse_size(text):
    """'4K', '64M', '1G', '4096' -> bytes (K, M, G = 2^10, 2^20, 2^30, as nccl-tests)."""
    text = text.strip()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    mult = 1
    if text and text[-1].upper() in units:
        mult = units[text[-1].upper()]
        text = text[:-1]
    try:
        value = int(text) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("sizes must be positive")
    return value


def parse_size_or_zero(text):
    return 0 if text.strip() == "0" else parse_size(text)


def human_size(nbytes):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= div and nbytes % div == 0:
            return f"{nbytes // div} {unit}iB"
    return f"{nbytes} B"


def format_number(value, width):
    """plexus-bench's (and nccl-tests') number format: as many decimals as fit, up to 2."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{'N/A':>{width}}"
    digits = 1
    v = 10.0
    while abs(value) >= v and digits < 40:
        digits += 1
        v *= 10
    if value < 0:
        digits += 1
    if digits + 3 <= width:
        return f"{value:>{width}.2f}"
    if digits + 2 <= width:
        return f"{value:>{width}.1f}"
    if digits <= width:
        return f"{value:>{width}.0f}"
    return f"{value:>{width}.1e}" if width >= 7 else f"{value:>{width}.0e}"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sizes_of(cfg):
    sizes = []
    size = cfg.minbytes
    while size <= cfg.maxbytes:
        sizes.append(size)
        size *= cfg.stepfactor
    return sizes


def iterations_for(cfg, size):
    """(warm-up, timed) iterations at this size: -n, but at most iter_bytes / size (>= min)."""
    iters = cfg.iters
    if cfg.iter_bytes > 0:
        iters = min(iters, max(cfg.min_iters, cfg.iter_bytes // size))
    iters = max(1, iters)
    warm = 0
    if cfg.warmup > 0:
        warm = min(cfg.warmup, max(1, math.ceil(iters * cfg.warmup / max(1, cfg.iters))))
    return warm, iters


# ------------------------------------------------------------------------------------------------
# one rank of one world
# ------------------------------------------------------------------------------------------------

def _default_pg(dist):
    try:
        return dist.distributed_c10d._get_default_group()
    except Exception:  # pragma: no cover - torch internals moved
        return None


def _run_op(dist, torch, op, variant, n, out, inp):
    """One call of OP; for all_reduce `out` is the in-place buffer (inp unused)."""
    if op == "all_reduce":
        dist.all_reduce(out)
    elif variant == "base" and op == "all_gather":
        dist._all_gather_base(out, inp)
    elif variant == "base" and op == "reduce_scatter":
        dist._reduce_scatter_base(out, inp)
    elif variant == "list" and op in ("all_gather", "all_gather_list"):
        dist.all_gather(list(out.chunk(n)), inp)
    elif variant == "list" and op == "reduce_scatter":
        dist.reduce_scatter(out, list(inp.chunk(n)))
    else:  # pragma: no cover
        raise ValueError(f"{op}/{variant}")


def _buffers(torch, op, n, size):
    """(count reported, out, inp) for a size in bytes (nccl-tests' meaning of size)."""
    elements = size // 4
    if op != "all_reduce":
        elements -= elements % n  # nccl-tests: a whole number of elements per rank
    if op == "all_reduce":
        return elements, torch.zeros(elements, dtype=torch.float32), None
    if op in ("all_gather", "all_gather_list"):  # size = the whole output
        return elements, torch.empty(elements, dtype=torch.float32), \
            torch.zeros(elements // n, dtype=torch.float32)
    # reduce_scatter: size = the whole input
    return elements, torch.empty(elements // n, dtype=torch.float32), \
        torch.zeros(elements, dtype=torch.float32)


def _fill_and_expect(torch, op, n, rank, out, inp):
    """Fill inputs with rank-dependent integer values; return the expected result on this rank.

    All values are small integers, so float32 sums are exact in any order."""
    if op == "all_reduce":
        base = torch.arange(out.numel(), dtype=torch.int64).remainder_(13).to(torch.float32)
        out.copy_(base).add_(rank + 1)
        return base.mul_(n).add_(n * (n + 1) / 2)
    if op in ("all_gather", "all_gather_list"):
        count = inp.numel()
        base = torch.arange(count, dtype=torch.int64).remainder_(251).to(torch.float32)
        inp.copy_(base).add_(1000 * rank)
        out.fill_(float("nan"))
        return torch.cat([base + 1000 * r for r in range(n)])
    # reduce_scatter: rank r gets the sum over ranks of the r-th chunk of their inputs
    count = out.numel()
    base = torch.arange(inp.numel(), dtype=torch.int64).remainder_(13).to(torch.float32)
    inp.copy_(base).add_(rank + 1)
    out.fill_(float("nan"))
    return base[rank * count:(rank + 1) * count].mul(n).add_(n * (n + 1) / 2)


def _detect_variant(dist, torch, op, n, backend):
    """The call this backend supports for OP: 'base', 'list', or (None, reason)."""
    if op == "all_reduce":
        return "base", None
    candidates = ["list"] if op == "all_gather_list" else ["base", "list"]
    reasons = []
    for variant in candidates:
        _, out, inp = _buffers(torch, op, n, 4 * n * 4)
        try:
            _run_op(dist, torch, op, variant, n, out, inp)
            ok = 1.0
        except RuntimeError as e:
            ok = 0.0
            reasons.append(str(e).splitlines()[0])
        # every rank must agree before the next collective
        flag = torch.tensor([ok], dtype=torch.float64)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if flag.item() == 1.0:
            return variant, None
    return None, "; ".join(reasons) or "not supported"


def worker(rank, n, port, backend, cfg, q):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    warnings.filterwarnings("ignore", message=".*is a private function.*")
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    current = {"op": "init", "size": 0}
    try:
        if backend == "plexus":
            import plexus_torch  # noqa: F401  (registers "plexus")
        t_init = time.perf_counter()
        dist.init_process_group(backend, rank=rank, world_size=n,
                                timeout=datetime.timedelta(seconds=cfg.timeout))
        t_init = time.perf_counter() - t_init
        pg = _default_pg(dist)
        transport = getattr(pg, "transport", None) if pg is not None else None
        q.put(("world", backend, n, rank, os.getpid(), transport, t_init))

        for op in cfg.ops:
            current.update(op=op, size=0)
            variant, reason = _detect_variant(dist, torch, op, n, backend)
            if rank == 0:
                q.put(("variant", backend, n, op, variant, reason))
            if variant is None:
                continue
            for size in sizes_of(cfg):
                current["size"] = size
                if op != "all_reduce" and size < 4 * n:
                    continue
                warm, iters = iterations_for(cfg, size)
                count, out, inp = _buffers(torch, op, n, size)
                if op != "all_reduce":
                    _fill_and_expect(torch, op, n, rank, out, inp)  # real data, unchanged by ops
                for _ in range(warm):
                    _run_op(dist, torch, op, variant, n, out, inp)
                dist.barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    _run_op(dist, torch, op, variant, n, out, inp)
                avg_us = (time.perf_counter() - t0) * 1e6 / iters
                algorithm = getattr(pg, "last_algorithm", None) if backend == "plexus" else None
                wrong = -1
                if cfg.check:
                    expected = _fill_and_expect(torch, op, n, rank, out, inp)
                    _run_op(dist, torch, op, variant, n, out, inp)
                    wrong = int((out != expected).sum().item())
                    del expected
                t = torch.tensor([avg_us], dtype=torch.float64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                w = torch.tensor([float(max(wrong, 0))], dtype=torch.float64)
                dist.all_reduce(w, op=dist.ReduceOp.SUM)
                if rank == 0:
                    # count as plexus-bench and nccl-tests print it: elements per rank's
                    # send (all_gather) or receive (reduce_scatter) block
                    shown = count if op == "all_reduce" else count // n
                    q.put(("row", backend, n, op, variant, size, count * 4, shown, t.item(),
                           int(w.item()) if cfg.check else -1, warm, iters, algorithm))
                del out, inp

        if cfg.lat_iters > 0:
            current.update(op="latency all_reduce", size=cfg.lat_bytes)
            buf = torch.zeros(cfg.lat_bytes // 4, dtype=torch.float32)
            for _ in range(min(cfg.lat_iters, max(cfg.warmup, 50))):
                dist.all_reduce(buf)
            samples = [0.0] * cfg.lat_iters
            clock = time.perf_counter
            dist.barrier()
            start = clock()
            for i in range(cfg.lat_iters):
                t0 = clock()
                dist.all_reduce(buf)
                samples[i] = clock() - t0
            avg_us = (clock() - start) * 1e6 / cfg.lat_iters
            samples.sort()
            p50 = samples[len(samples) // 2] * 1e6
            p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1e6
            t = torch.tensor([avg_us, p50, p99], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            if rank == 0:
                q.put(("latency", backend, n, cfg.lat_bytes, cfg.lat_iters) +
                      tuple(t.tolist()))
        dist.barrier()
        dist.destroy_process_group()
        q.put(("done", backend, n, rank))
    except BaseException as e:  # report it to the parent, then fail this process
        q.put(("error", backend, n, rank, current["op"], current["size"],
               f"{type(e).__name__}: {e}", traceback.format_exc()))
        raise


# ------------------------------------------------------------------------------------------------
# the parent: worlds, tables, summary
# ------------------------------------------------------------------------------------------------

COLS = ("{:>12}  {:>12}  {:>8}  {:>6}  {:>8}  {:>7}  {:>7}  {:>6}  {:>6}  {}")


def print_header(backend, n, cfg, out):
    step = f"{cfg.stepfactor}(factor)"
    print(f"# torch_bench backend {backend} torch {cfg.torch_version}", file=out)
    print(f"# nRanks {n} minBytes {cfg.minbytes} maxBytes {cfg.maxbytes} step: {step} "
          f"warmup iters: {cfg.warmup} iters: {cfg.iters} (at most {cfg.iter_bytes} B per size, "
          f"at least {cfg.min_iters}) validation: {int(cfg.check)}", file=out)
    out.flush()


def print_table_header(op, variant, backend, out):
    call = {
        ("all_reduce", "base"): "dist.all_reduce (in-place)",
        ("all_gather", "base"): "dist._all_gather_base (= all_gather_into_tensor)",
        ("all_gather", "list"): "dist.all_gather into views of one tensor "
                                "(_all_gather_base not supported)",
        ("all_gather_list", "list"): "dist.all_gather into views of one tensor",
        ("reduce_scatter", "base"): "dist._reduce_scatter_base (= reduce_scatter_tensor)",
        ("reduce_scatter", "list"): "dist.reduce_scatter on chunks "
                                    "(_reduce_scatter_base not supported)",
    }.get((op, variant), variant)
    print(f"#\n# Collective test starting: {op}   [{backend}: {call}]", file=out)
    print("# " + COLS.format("size", "count", "type", "redop", "time", "algbw", "busbw",
                             "#wrong", "iters", "algorithm")[2:], file=out)
    print("# " + COLS.format("(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "",
                             "")[2:], file=out)
    out.flush()


def run_world(backend, n, cfg, results, latency, failures, notes, out):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    started = time.monotonic()
    deadline = started + cfg.world_timeout
    print_header(backend, n, cfg, out)
    context = mp.spawn(worker, args=(n, port, backend, cfg, q), nprocs=n, join=False)
    done_ranks = set()
    errors = []
    world_info = {}
    finished = False
    crashed = None

    pending = []

    def handle(msg):
        kind = msg[0]
        if kind in ("variant", "row", "latency") and len(world_info) < n:
            pending.append(msg)  # print the rank lines first
            return
        if kind == "world":
            _, b, nn, rank, pid, transport, t_init = msg
            world_info[rank] = (pid, transport, t_init)
            if len(world_info) == n:
                for r in sorted(world_info):
                    pid, tr, ti = world_info[r]
                    extra = f" transport {tr}" if tr else ""
                    print(f"#  Rank {r:2} Pid {pid:7} on 127.0.0.1 device cpu{extra} "
                          f"init_process_group {ti:.2f} s", file=out)
                held = list(pending)
                pending.clear()
                for m in held:
                    handle(m)
        elif kind == "variant":
            _, b, nn, op, variant, reason = msg
            if variant is None:
                print(f"#\n# Collective test starting: {op}   [{backend}]", file=out)
                print(f"# {op}: n/a ({backend}: not supported)  -- {reason}", file=out)
                results[(op, n, backend, "n/a")] = reason
            else:
                if variant == "list" and op != "all_gather_list":
                    notes.add(f"{backend} {op}: base call not supported, timed the list call")
                print_table_header(op, variant, backend, out)
        elif kind == "row":
            (_, b, nn, op, variant, size, nbytes, count, t_us, wrong, warm, iters, algo) = msg
            algbw = nbytes / 1e9 / (t_us / 1e6) if t_us > 0 else float("nan")
            busbw = algbw * BUS_FACTOR[op](n)
            redop = "none" if op.startswith("all_gather") else "sum"
            print(COLS.format(nbytes, count, "float", redop, format_number(t_us, 8),
                              format_number(algbw, 7), format_number(busbw, 7),
                              "N/A" if wrong < 0 else wrong, iters, algo or ""), file=out)
            key = (op, n, size)
            best = results.setdefault(key, {})
            prev = best.get(backend)
            if prev is None or t_us < prev["time"]:
                best[backend] = dict(time=t_us, algbw=algbw, busbw=busbw, variant=variant,
                                     wrong=max(wrong, prev["wrong"] if prev else 0),
                                     iters=iters, algorithm=algo)
            else:
                prev["wrong"] = max(prev["wrong"], wrong)
        elif kind == "latency":
            _, b, nn, nbytes, iters, avg, p50, p99 = msg
            print(f"#\n# all_reduce latency {nbytes} B, {iters} calls: avg {avg:.1f} us, "
                  f"p50 {p50:.1f} us, p99 {p99:.1f} us (largest over ranks)", file=out)
            key = (n, backend)
            prev = latency.get(key)
            if prev is None or avg < prev["avg"]:
                latency[key] = dict(avg=avg, p50=p50, p99=p99, bytes=nbytes, iters=iters)
        elif kind == "error":
            _, b, nn, rank, op, size, text, tb = msg
            errors.append((rank, op, size, text, tb))
            print(f"# ERROR rank {rank} in {op} size {size}: {text}", file=out)
        elif kind == "done":
            done_ranks.add(msg[3])
        out.flush()

    while True:
        try:
            while True:
                handle(q.get(timeout=0.2))
        except queue_module.Empty:
            pass
        try:
            finished = context.join(timeout=0.05)
        except Exception as e:  # a rank raised or died
            crashed = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            finished = True
        if finished:
            break
        if time.monotonic() > deadline:
            crashed = f"world timed out after {cfg.world_timeout} s"
            break
    # drain what is left, then stop any straggler
    try:
        while True:
            handle(q.get(timeout=0.5))
    except queue_module.Empty:
        pass
    if pending:
        world_info.update({r: (0, None, 0.0) for r in range(n) if r not in world_info})
        held = list(pending)
        pending.clear()
        for m in held:
            handle(m)
    for p in context.processes:
        if p.is_alive():
            p.terminate()
    for p in context.processes:
        p.join(5)
        if p.is_alive():
            p.kill()
    elapsed = time.monotonic() - started
    if crashed or errors or len(done_ranks) != n:
        first = errors[0] if errors else None
        failures.append(dict(backend=backend, n=n, crashed=crashed, errors=errors))
        print(f"# World FAILED ({backend}, {n} ranks): "
              f"{crashed or 'ranks missing'}" +
              (f"; first error rank {first[0]} {first[1]} size {first[2]}: {first[3]}"
               if first else ""), file=out)
        if errors and cfg.verbose:
            print(errors[0][4], file=out)
    print(f"# Collective tests concluded: {backend}, {n} ranks, {elapsed:.1f} s\n", file=out)
    out.flush()
    return elapsed


def summary_rows(cfg, results):
    rows = []
    smallest = min(sizes_of(cfg))
    for op in cfg.ops:
        for n in cfg.ranks:
            for size in sizes_of(cfg):
                if cfg.summary_sizes and size not in cfg.summary_sizes:
                    continue
                entry = results.get((op, n, size))
                na = {b: results.get((op, n, b, "n/a")) for b in cfg.backends}
                if entry is None and not any(na.values()):
                    continue
                entry = entry or {}
                p = entry.get("plexus")
                g = entry.get("gloo")
                ratio = p["busbw"] / g["busbw"] if p and g and g["busbw"] > 0 else None
                flags = []
                if (p and p["wrong"] > 0) or (g and g["wrong"] > 0):
                    flags.append("WRONG")
                if p and g:
                    if size >= 64 * 1024 and ratio is not None and ratio < cfg.target:
                        flags.append(f"below {cfg.target:g}x gloo")
                    if size == smallest and p["time"] > g["time"]:
                        flags.append(f"slower than gloo at {human_size(size)}")
                if na.get("plexus"):
                    flags.append("plexus n/a")
                if p is None and not na.get("plexus") and "plexus" in cfg.backends:
                    flags.append("plexus missing")
                rows.append(dict(op=op, n=n, size=size, p=p, g=g, ratio=ratio,
                                 gloo_na=bool(na.get("gloo")), flags=flags))
    return rows


def print_summary(cfg, results, latency, markdown, out):
    rows = summary_rows(cfg, results)
    smallest = min(sizes_of(cfg))

    def t(m):
        return f"{m['time']:.1f}" if m else "-"

    def bw(m):
        return f"{m['busbw']:.3f}" if m else "-"

    def gl(row, f):
        if row["gloo_na"]:
            return "n/a (gloo: not supported)" if f is t else "n/a"
        return f(row["g"])

    def rt(row):
        if row["gloo_na"]:
            return "n/a"
        return f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"

    head = ["op", "ranks", "size", "plexus time (us)", "gloo time (us)",
            "plexus busbw (GB/s)", "gloo busbw (GB/s)", "plexus/gloo", "flag"]
    body = []
    for r in rows:
        name = r["op"]
        if r["g"] and r["g"]["variant"] == "list" and r["op"] == "all_gather":
            name += "*"
        body.append([name, str(r["n"]), human_size(r["size"]), t(r["p"]), gl(r, t),
                     bw(r["p"]), gl(r, bw), rt(r), ", ".join(r["flags"])])
    lat_head = ["ranks", "size", "calls", "plexus avg (us)", "plexus p50", "plexus p99",
                "gloo avg (us)", "gloo p50", "gloo p99", "gloo/plexus (avg)"]
    lat_body = []
    for n in cfg.ranks:
        p = latency.get((n, "plexus"))
        g = latency.get((n, "gloo"))
        if not p and not g:
            continue
        ref = p or g

        def f(m, k):
            return f"{m[k]:.1f}" if m else "-"
        lat_body.append([str(n), human_size(ref["bytes"]), str(ref["iters"]),
                         f(p, "avg"), f(p, "p50"), f(p, "p99"), f(g, "avg"), f(g, "p50"),
                         f(g, "p99"),
                         f"{g['avg'] / p['avg']:.2f}x" if p and g and p["avg"] > 0 else "-"])
    foot = [f"ratio = plexus busbw / gloo busbw (= gloo time / plexus time); flagged where plexus "
            f"is below {cfg.target:g}x gloo from 64 KiB up, or slower than gloo at "
            f"{human_size(smallest)}.",
            "busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for all_gather and "
            "reduce_scatter (nccl-tests); float32, sum, CPU tensors, one host (127.0.0.1)."]
    if any(r["g"] and r["g"]["variant"] == "list" and r["op"] == "all_gather" for r in rows):
        foot.append("* gloo (torch " + cfg.torch_version + ") has no _all_gather_base: its "
                    "all_gather rows time dist.all_gather into views of one output tensor.")
    if any(r["gloo_na"] for r in rows):
        foot.append("gloo in torch " + cfg.torch_version + " supports neither reduce_scatter "
                    "nor _reduce_scatter_base.")

    if markdown:
        def md(h, b):
            def cell(c):
                return c.replace("*", "\\*").replace("|", "\\|") if c else " "
            lines = ["| " + " | ".join(h) + " |",
                     "|" + "|".join("---" if i < 3 or i == len(h) - 1 and h[i] == "flag"
                                    else "---:" for i in range(len(h))) + "|"]
            lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in b]
            return "\n".join(lines)
        print("\n### torch.distributed: Plexus beside Gloo\n", file=out)
        print(md(head, body), file=out)
        print("", file=out)
        for line in foot:
            print(line.replace("*", "\\*") + "  ", file=out)
        if lat_body:
            print("\n### torch.distributed all_reduce latency\n", file=out)
            print(md(lat_head, lat_body), file=out)
        print("", file=out)
    else:
        def plain(h, b):
            widths = [max(len(h[i]), *(len(row[i]) for row in b)) if b else len(h[i])
                      for i in range(len(h))]
            fmt_row = lambda row: "  ".join(  # noqa: E731
                (c.ljust(widths[i]) if i in (0, len(h) - 1) else c.rjust(widths[i]))
                for i, c in enumerate(row))
            print("# " + fmt_row(h).rstrip(), file=out)
            for row in b:
                print("  " + fmt_row(row).rstrip(), file=out)
        print("#\n# Summary: torch.distributed, plexus beside gloo", file=out)
        plain(head, body)
        for line in foot:
            print("# " + line, file=out)
        if lat_body:
            print("#\n# all_reduce latency", file=out)
            plain(lat_head, lat_body)
    out.flush()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="torch_bench.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("4K"))
    ap.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("64M"))
    ap.add_argument("-f", "--stepfactor", type=int, default=2)
    ap.add_argument("-n", "--iters", type=int, default=20, help="timed iterations (small sizes)")
    ap.add_argument("-w", "--warmup_iters", dest="warmup", type=int, default=5)
    ap.add_argument("--iter-bytes", type=parse_size_or_zero, default=parse_size("256M"),
                    help="at most this many bytes / size timed iterations (0: always -n); "
                         "default 256M")
    ap.add_argument("--min-iters", type=int, default=3,
                    help="at least this many timed iterations at any size (default 3)")
    ap.add_argument("-c", "--check", type=int, default=1, help="0 skips the check")
    ap.add_argument("-N", "--ranks", default="2,4", help="rank counts (default 2,4)")
    ap.add_argument("-B", "--backends", default="plexus,gloo")
    ap.add_argument("-o", "--ops", default=",".join(DEFAULT_OPS),
                    help=f"comma list of {', '.join(OPS)}")
    ap.add_argument("-r", "--rounds", type=int, default=1,
                    help="launch each world this many times, alternating backends; per size "
                         "the fastest round counts")
    ap.add_argument("--lat-iters", type=int, default=2000,
                    help="all_reduce calls of the latency test (0 skips it)")
    ap.add_argument("--lat-bytes", type=parse_size, default=parse_size("4K"))
    ap.add_argument("--target", type=float, default=3.0,
                    help="flag plexus below this many x gloo from 64 KiB up (default 3)")
    ap.add_argument("--summary-sizes", default="",
                    help="comma list of sizes for the summary (default: all)")
    ap.add_argument("--markdown", action="store_true", help="print the summary as Markdown")
    ap.add_argument("-t", "--timeout", type=int, default=120,
                    help="torch's collective timeout in seconds (default 120)")
    ap.add_argument("--world-timeout", type=int, default=600,
                    help="kill a world that runs longer than this (default 600 s)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print tracebacks")
    cfg = ap.parse_args(argv)

    try:
        cfg.ranks = [int(x) for x in cfg.ranks.split(",") if x]
        cfg.ops = [x for x in cfg.ops.split(",") if x]
        cfg.backends = [x for x in cfg.backends.split(",") if x]
        cfg.summary_sizes = {parse_size(x) for x in cfg.summary_sizes.split(",") if x}
    except (ValueError, argparse.ArgumentTypeError) as e:
        ap.error(str(e))
    bad = [o for o in cfg.ops if o not in OPS]
    if bad:
        ap.error(f"unknown op(s) {bad}; choose from {OPS}")
    if cfg.stepfactor < 2 or cfg.minbytes > cfg.maxbytes or any(n < 1 for n in cfg.ranks):
        ap.error("need -f >= 2, -b <= -e and rank counts >= 1")
    if cfg.minbytes % 4:
        ap.error("sizes must be multiples of 4 bytes (float32)")
    if cfg.iters < 1 or cfg.warmup < 0 or cfg.rounds < 1 or cfg.lat_iters < 0:
        ap.error("need -n >= 1, -w >= 0, -r >= 1, --lat-iters >= 0")

    import torch
    cfg.torch_version = torch.__version__
    if "plexus" in cfg.backends:
        try:
            import plexus_torch  # noqa: F401
        except ImportError as e:
            ap.exit(2, f"torch_bench.py: cannot import plexus_torch ({e}); "
                       "set PYTHONPATH=build/python\n")

    out = sys.stdout
    started = time.monotonic()
    print(f"# torch_bench.py {' '.join(argv if argv is not None else sys.argv[1:])}", file=out)
    plexus_env = {k: v for k, v in os.environ.items() if k.startswith("PLEXUS_")}
    if plexus_env:
        print("# environment: " + " ".join(f"{k}={v}" for k, v in sorted(plexus_env.items())),
              file=out)
    results, latency, failures, notes = {}, {}, [], set()
    timing = {}
    for rnd in range(cfg.rounds):
        for n in cfg.ranks:
            order = cfg.backends if rnd % 2 == 0 else list(reversed(cfg.backends))
            for backend in order:
                if cfg.rounds > 1:
                    print(f"# round {rnd + 1} of {cfg.rounds}", file=out)
                elapsed = run_world(backend, n, cfg, results, latency, failures, notes, out)
                timing[(backend, n)] = timing.get((backend, n), 0.0) + elapsed

    total_wrong = sum(m["wrong"] for k, v in results.items() if isinstance(v, dict)
                      for m in v.values())
    print_summary(cfg, results, latency, cfg.markdown, out)
    total = time.monotonic() - started
    print("#", file=out)
    for note in sorted(notes):
        print(f"# note: {note}", file=out)
    print("# world run times: " + ", ".join(f"{b} n={n} {s:.0f} s"
                                            for (b, n), s in timing.items()), file=out)
    print(f"# Out of bounds values : {total_wrong} {'OK' if total_wrong == 0 else 'FAILED'}",
          file=out)
    if failures:
        for f in failures:
            first = f["errors"][0] if f["errors"] else None
            print(f"# FAILED world {f['backend']} n={f['n']}: {f['crashed'] or 'ranks missing'}"
                  + (f" ({first[1]} size {first[2]}: {first[3]})" if first else ""), file=out)
    print(f"# total run time {total:.0f} s", file=out)
    return 0 if (total_wrong == 0 and not failures) else 1


if __name__ == "__main__":
    sys.exit(main())
