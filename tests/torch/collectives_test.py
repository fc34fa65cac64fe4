"""Every torch.distributed operation of the plexus backend on 4 real processes, against values
computed here: each collective x dtype x op, roots other than 0, zero-size tensors, async_op with
wait() and get_future(), new_group([1, 3]), a 16 MiB ring through batch_isend_irecv, errors that
must be raised on every rank (mismatched counts, unsupported ops) with the group usable after.

Run: PYTHONPATH=build/python /usr/bin/python3 tests/torch/collectives_test.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_world import run_world  # noqa: E402

WORLD = 4
N = 37  # odd, so no block layout lines up by accident


def dtypes():
    import torch
    return [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
            torch.int32, torch.int64, torch.bool]


def value(rank, n, dtype, salt=0):
    """Rank `rank`'s input: small integers (1..3), exact in every dtype; bool: a mix."""
    import torch
    base = torch.tensor([((rank + i + salt) % 3) + 1 for i in range(n)], dtype=torch.float64)
    return (base != 2) if dtype == torch.bool else base.to(dtype)


def reduced(world, n, dtype, op, salt=0):
    """op over the world's inputs, computed here in float64 (then truncated/cast as torch)."""
    import torch
    import torch.distributed as dist
    stack = torch.stack([value(r, n, dtype, salt).double() for r in range(world)])
    if op == dist.ReduceOp.SUM:
        out = stack.sum(0)
    elif op == dist.ReduceOp.PRODUCT:
        out = stack.prod(0)
    elif op == dist.ReduceOp.MIN:
        out = stack.min(0).values
    elif op == dist.ReduceOp.MAX:
        out = stack.max(0).values
    elif op == dist.ReduceOp.AVG:
        out = stack.sum(0) / world
        if not dtype.is_floating_point:
            out = torch.trunc(out)
    else:
        raise ValueError(op)
    return (out != 0) if dtype == torch.bool else out.to(dtype)


def ops_for(dtype):
    import torch
    import torch.distributed as dist
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    return ops if dtype == torch.bool else ops + [dist.ReduceOp.AVG]


class Checker:
    """Collects failed comparisons instead of stopping at the first."""

    def __init__(self, rank):
        self.rank, self.failures, self.count = rank, [], 0

    def equal(self, what, got, expected):
        import torch
        self.count += 1
        if got.dtype != expected.dtype or got.shape != expected.shape or \
                not torch.equal(got, expected):
            self.failures.append(f"rank {self.rank}: {what}: got {got.tolist()} "
                                 f"expected {expected.tolist()}")

    def true(self, what, condition, detail=""):
        self.count += 1
        if not condition:
            self.failures.append(f"rank {self.rank}: {what} {detail}")

    def raises(self, what, fn, *needles):
        """fn() must raise RuntimeError whose message holds every needle."""
        self.count += 1
        try:
            fn()
        except RuntimeError as e:
            missing = [n for n in needles if n not in str(e)]
            if missing:
                self.failures.append(f"rank {self.rank}: {what}: message lacks {missing}: {e}")
            return str(e)
        self.failures.append(f"rank {self.rank}: {what}: did not raise")
        return ""


def reductions(rank, world):
    import torch
    import torch.distributed as dist
    c = Checker(rank)
    for dtype in dtypes():
        for op in ops_for(dtype):
            t = value(rank, N, dtype)
            dist.all_reduce(t, op=op)
            c.equal(f"all_reduce {dtype} {op}", t, reduced(world, N, dtype, op))
            for root in (1, 3):
                t = value(rank, N, dtype, salt=root)
                dist.reduce(t, dst=root, op=op)
                if rank == root:
                    c.equal(f"reduce {dtype} {op} root {root}", t,
                            reduced(world, N, dtype, op, salt=root))
                else:
                    c.equal(f"reduce {dtype} {op} root {root} leaves non-roots", t,
                            value(rank, N, dtype, salt=root))
            # reduce_scatter: rank r's block j is value(r, N, salt=j); rank j gets block j.
            out = torch.zeros(N, dtype=dtype)
            dist.reduce_scatter(out, [value(rank, N, dtype, salt=j) for j in range(world)], op=op)
            c.equal(f"reduce_scatter {dtype} {op}", out, reduced(world, N, dtype, op, salt=rank))
            out = torch.zeros(N, dtype=dtype)
            flat = torch.cat([value(rank, N, dtype, salt=j) for j in range(world)])
            dist.reduce_scatter_tensor(out, flat, op=op)
            c.equal(f"_reduce_scatter_base {dtype} {op}", out,
                    reduced(world, N, dtype, op, salt=rank))
        if dtype.is_floating_point:
            factor = 0.5
            t = value(rank, N, dtype)
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
            expected = (torch.stack([value(r, N, dtype).double() for r in range(world)]) *
                        factor).sum(0).to(dtype)
            c.equal(f"all_reduce {dtype} premul_sum 0.5", t, expected)
    return c.failures, c.count


def movements(rank, world):
    import torch
    import torch.distributed as dist
    c = Checker(rank)
    for dtype in dtypes():
        for root in range(world):
            t = value(rank, N, dtype, salt=10) if rank == root else torch.zeros(N, dtype=dtype)
            dist.broadcast(t, src=root)
            c.equal(f"broadcast {dtype} root {root}", t, value(root, N, dtype, salt=10))
        outs = [torch.zeros(N, dtype=dtype) for _ in range(world)]
        dist.all_gather(outs, value(rank, N, dtype))
        for j in range(world):
            c.equal(f"all_gather {dtype} block {j}", outs[j], value(j, N, dtype))
        out = torch.zeros(world * N, dtype=dtype)
        dist.all_gather_into_tensor(out, value(rank, N, dtype))
        c.equal(f"_all_gather_base {dtype}", out,
                torch.cat([value(j, N, dtype) for j in range(world)]))
        root = 2
        gathered = [torch.zeros(N, dtype=dtype) for _ in range(world)] if rank == root else None
        dist.gather(value(rank, N, dtype), gather_list=gathered, dst=root)
        if rank == root:
            for j in range(world):
                c.equal(f"gather {dtype} root {root} block {j}", gathered[j], value(j, N, dtype))
        root = 3
        out = torch.zeros(N, dtype=dtype)
        blocks = [value(root, N, dtype, salt=j) for j in range(world)] if rank == root else None
        dist.scatter(out, scatter_list=blocks, src=root)
        c.equal(f"scatter {dtype} root {root}", out, value(root, N, dtype, salt=rank))
        # alltoall_single, even: block j of rank r is value(r, N, salt=j) and lands on rank j.
        send = torch.cat([value(rank, N, dtype, salt=j) for j in range(world)])
        recv = torch.zeros(world * N, dtype=dtype)
        dist.all_to_all_single(recv, send)
        c.equal(f"all_to_all_single even {dtype}", recv,
                torch.cat([value(j, N, dtype, salt=rank) for j in range(world)]))
        # uneven: rank r sends r + j + 1 rows of 2 elements to rank j.
        rows = lambda src, dst: src + dst + 1  # noqa: E731
        send = torch.cat([value(rank, 2 * rows(rank, j), dtype, salt=j).view(-1, 2)
                          for j in range(world)])
        in_splits = [rows(rank, j) for j in range(world)]
        out_splits = [rows(j, rank) for j in range(world)]
        recv = torch.zeros(sum(out_splits), 2, dtype=dtype)
        dist.all_to_all_single(recv, send, output_split_sizes=out_splits,
                               input_split_sizes=in_splits)
        c.equal(f"all_to_all_single uneven {dtype}", recv,
                torch.cat([value(j, 2 * rows(j, rank), dtype, salt=rank).view(-1, 2)
                           for j in range(world)]))
        # all_to_all with lists of different sizes.
        outs = [torch.zeros(rows(j, rank), dtype=dtype) for j in range(world)]
        dist.all_to_all(outs, [value(rank, rows(rank, j), dtype, salt=j) for j in range(world)])
        for j in range(world):
            c.equal(f"all_to_all {dtype} from {j}", outs[j], value(j, rows(j, rank), dtype,
                                                                   salt=rank))
        # send/recv along a ring, even ranks first (blocking calls must pair up).
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        got = torch.zeros(N, dtype=dtype)
        if rank % 2 == 0:
            dist.send(value(rank, N, dtype), dst=nxt)
            dist.recv(got, src=prv)
        else:
            dist.recv(got, src=prv)
            dist.send(value(rank, N, dtype), dst=nxt)
        c.equal(f"send/recv {dtype}", got, value(prv, N, dtype))
    dist.barrier()
    return c.failures, c.count


def edges(rank, world):
    """Zero-size tensors, async forms, a subgroup, a 16 MiB ring, errors on every rank."""
    import torch
    import torch.distributed as dist
    c = Checker(rank)
    empty = torch.zeros(0)
    for name, call in [
            ("all_reduce", lambda: dist.all_reduce(empty)),
            ("broadcast", lambda: dist.broadcast(empty, src=1)),
            ("reduce", lambda: dist.reduce(empty, dst=2)),
            ("all_gather", lambda: dist.all_gather([torch.zeros(0)] * world, empty)),
            ("_all_gather_base", lambda: dist.all_gather_into_tensor(torch.zeros(0), empty)),
            ("reduce_scatter", lambda: dist.reduce_scatter(empty, [torch.zeros(0)] * world)),
            ("all_to_all_single", lambda: dist.all_to_all_single(torch.zeros(0), empty)),
            ("gather", lambda: dist.gather(empty, [torch.zeros(0)] * world if rank == 1 else None,
                                           dst=1)),
            ("scatter", lambda: dist.scatter(empty, [torch.zeros(0)] * world if rank == 1
                                             else None, src=1))]:
        try:
            call()
            c.true(f"zero-size {name}", True)
        except RuntimeError as e:
            c.true(f"zero-size {name}", False, str(e))

    # async_op: wait() and get_future().
    t = value(rank, N, torch.float32)
    work = dist.all_reduce(t, async_op=True)
    c.true("async wait() returns True", work.wait() is True)
    c.equal("async all_reduce via wait()", t, reduced(world, N, torch.float32,
                                                      dist.ReduceOp.SUM))
    t = value(rank, N, torch.float64)
    fut = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True).get_future()
    got = fut.wait()
    c.equal("async all_reduce via get_future()", got[0], reduced(world, N, torch.float64,
                                                                 dist.ReduceOp.MAX))
    chained = dist.all_reduce(value(rank, N, torch.float32), async_op=True).get_future().then(
        lambda f: f.value()[0] * 2)
    c.equal("future.then", chained.wait(),
            reduced(world, N, torch.float32, dist.ReduceOp.SUM) * 2)
    outs = [torch.zeros(N) for _ in range(world)]
    works = [dist.all_gather(outs, value(rank, N, torch.float32), async_op=True),
             dist.broadcast(t, src=3, async_op=True)]
    for w in works:
        w.wait()
    c.equal("async all_gather block 3", outs[3], value(3, N, torch.float32))
    c.true("work.is_completed()", all(w.is_completed() for w in works))

    # new_group([1, 3]): every rank creates it, only 1 and 3 use it.
    group = dist.new_group([1, 3], backend="plexus")
    if rank in (1, 3):
        t = torch.full((5,), float(rank))
        dist.all_reduce(t, group=group)
        c.equal("new_group([1,3]) all_reduce", t, torch.full((5,), 4.0))
        t = torch.full((3,), float(rank))
        dist.broadcast(t, src=3, group=group)
        c.equal("new_group([1,3]) broadcast from global rank 3", t, torch.full((3,), 3.0))
        c.true("new_group rank", dist.get_rank(group) == (0 if rank == 1 else 1))
    t = torch.ones(4)
    dist.all_reduce(t)
    c.equal("world after new_group", t, torch.full((4,), float(world)))

    # A 16 MiB ring through batch_isend_irecv (posted together, so no ordering is needed).
    n = 4 * 1024 * 1024
    send = torch.arange(n, dtype=torch.float32) + rank * 1000.0
    recv = torch.zeros(n)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % world),
           dist.P2POp(dist.irecv, recv, (rank - 1) % world)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    c.equal("16 MiB ring through batch_isend_irecv", recv,
            torch.arange(n, dtype=torch.float32) + ((rank - 1) % world) * 1000.0)

    # A pending receive holds up nothing issued after it: an async all_reduce's future completes
    # while rank 0's irecv still waits for the send rank 1 makes only after that all_reduce.
    got = torch.zeros(4)
    pending = dist.irecv(got, src=1) if rank == 0 else None
    reduced_now = dist.all_reduce(torch.ones(4), async_op=True).get_future().wait()[0]
    c.equal("all_reduce future behind a pending irecv", reduced_now, torch.full((4,), float(world)))
    if rank == 1:
        dist.send(torch.full((4,), 7.0), dst=0)
    if rank == 0:
        pending.wait()
        c.equal("irecv answered after the all_reduce", got, torch.full((4,), 7.0))
    # A batch of one large isend returns before its receiver posts (as gloo's and NCCL's).
    n = 1 << 18
    if rank in (0, 1):
        peer = 1 - rank
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((n,), float(rank)),
                                                  peer)])
        got = torch.zeros(n)
        dist.recv(got, src=peer)
        for req in reqs:
            req.wait()
        c.equal("recv after a batch of one isend", got[:3], torch.full((3,), float(peer)))
    # Complex tensors through send/recv and broadcast (as their real views).
    z = torch.full((3,), complex(1, -2), dtype=torch.complex64) if rank == 0 else \
        torch.zeros(3, dtype=torch.complex64)
    dist.broadcast(z, src=0)
    c.equal("complex broadcast", z, torch.full((3,), complex(1, -2), dtype=torch.complex64))
    if rank in (2, 3):
        z = torch.full((2,), complex(rank, rank), dtype=torch.complex128)
        if rank == 2:
            dist.send(z, dst=3)
        else:
            dist.recv(z, src=2)
            c.equal("complex send/recv", z, torch.full((2,), complex(2, 2),
                                                      dtype=torch.complex128))
    # all_to_all_single in place through a view of the same storage, uneven splits.
    splits = [1 + ((rank + j) % 2) for j in range(world)]  # symmetric: rank r sends splits[j] to j
    t = torch.cat([torch.full((splits[j],), float(10 * rank + j)) for j in range(world)])
    dist.all_to_all_single(t, t[:], output_split_sizes=splits, input_split_sizes=splits)
    c.equal("all_to_all_single through a view, uneven", t,
            torch.cat([torch.full((splits[j],), float(10 * j + rank)) for j in range(world)]))

    # Mismatched counts: raised on every rank, the group usable afterwards.
    c.raises("mismatched all_reduce counts", lambda: dist.all_reduce(torch.ones(10 + (rank == 0))),
             "plexus allreduce", "PLX_ERROR_MISMATCH")
    c.raises("mismatched broadcast dtypes",
             lambda: dist.broadcast(torch.ones(8, dtype=torch.float32 if rank else torch.int32),
                                    src=0), "PLX_ERROR_MISMATCH")
    c.raises("mismatched async all_reduce",
             lambda: dist.all_reduce(torch.ones(3 + rank), async_op=True).wait(),
             "PLX_ERROR_MISMATCH")
    t = torch.full((6,), float(rank))
    dist.all_reduce(t)
    c.equal("all_reduce after mismatches", t, torch.full((6,), float(sum(range(world)))))

    # Complex tensors: torch hands the backend their real view for SUM.
    t = torch.full((3,), complex(rank, -rank), dtype=torch.complex64)
    dist.all_reduce(t)
    total = float(sum(range(world)))
    c.equal("complex64 all_reduce", t, torch.full((3,), complex(total, -total),
                                                  dtype=torch.complex64))

    # Unsupported: refused on every rank (each rank's own check), before anything is sent.
    c.raises("bitwise op", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32),
                                                   op=dist.ReduceOp.BOR), "bitwise")
    c.raises("recv from any source", lambda: dist.recv(torch.zeros(2)), "any source")
    c.raises("non-contiguous", lambda: dist.all_reduce(torch.ones(4, 4).t()), "contiguous")
    c.raises("int16 (no Plexus datatype)",
             lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)), "dtype", "not supported")
    c.raises("PREMUL_SUM on int32", lambda: dist.all_reduce(
        torch.ones(4, dtype=torch.int32), op=dist._make_nccl_premul_sum(0.5)), "floating-point")
    c.raises("AVG on bool", lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool),
                                                    op=dist.ReduceOp.AVG), "AVG")
    t = torch.full((2,), 1.0)
    dist.all_reduce(t)
    c.equal("all_reduce after refusals", t, torch.full((2,), float(world)))
    return c.failures, c.count


class TorchCollectives(unittest.TestCase):
    def check(self, fn):
        results = run_world(fn, world_size=WORLD, backend="plexus", timeout_s=300)
        failures = [f for rank_failures, _ in results for f in rank_failures]
        counts = [count for _, count in results]
        self.assertTrue(all(n > 0 for n in counts), counts)
        self.assertEqual(failures, [], "\n".join(failures[:40]))

    def test_reductions_every_dtype_and_op(self):
        self.check(reductions)

    def test_data_movement_every_dtype(self):
        self.check(movements)

    def test_zero_size_async_groups_batches_and_errors(self):
        self.check(edges)


if __name__ == "__main__":
    unittest.main()
