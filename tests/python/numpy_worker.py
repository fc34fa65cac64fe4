"""One rank of the NumPy binding's test (tests/python/numpy_binding_test.py starts 4 of them
under plexus-run or mpirun): every collective of plexus.Communicator over every dtype,
in-place and out-of-place, every reduction op, the non-blocking forms, split, and the error
paths, each result compared with values computed here from the closed-form inputs of every
rank. Prints "rank R: N checks passed" and exits 0, or prints the failure and aborts the
communicator (so that the other ranks fail at once) and exits 1.
"""
import gc
import os
import sys
import traceback

import numpy as np

import plexus

DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32,
          np.float64]
OPS = [plexus.SUM, plexus.PROD, plexus.MIN, plexus.MAX, plexus.AVG]
N = 5  # elements per rank and block: small, prime


class Checks:
    def __init__(self, rank):
        self.rank = rank
        self.count = 0

    def equal(self, what, got, expected):
        """got must be an ndarray equal to expected in dtype, shape and values."""
        expected = np.asarray(expected)
        assert isinstance(got, np.ndarray), f"rank {self.rank}: {what}: got {type(got)}"
        assert got.dtype == expected.dtype, \
            f"rank {self.rank}: {what}: dtype {got.dtype}, expected {expected.dtype}"
        np.testing.assert_array_equal(got, expected, err_msg=f"rank {self.rank}: {what}",
                                      strict=True)
        self.count += 1

    def true(self, what, condition):
        assert condition, f"rank {self.rank}: {what}"
        self.count += 1

    def raises(self, what, exception_types, function, *contains):
        """function() must raise one of exception_types whose text contains every `contains`."""
        try:
            function()
        except exception_types as error:
            for text in contains:
                assert text in str(error), \
                    f"rank {self.rank}: {what}: {text!r} not in the message {str(error)!r}"
            self.count += 1
            return error
        raise AssertionError(f"rank {self.rank}: {what}: no {exception_types} raised")


def signed(dtype):
    return np.issubdtype(dtype, np.signedinteger) or np.issubdtype(dtype, np.floating)


def data(rank, dtype, n=N):
    """Rank `rank`'s input: (rank+1) * arange(n), shifted to negative values for signed types
    (sums over 4 ranks stay within int8)."""
    base = np.arange(n) - (n // 2 if signed(dtype) else 0)
    return ((rank + 1) * base).astype(dtype)


def prod_data(rank, dtype, n=N):
    """Small factors, 1 and 2 (and -1 for signed types), so that products stay exact."""
    i = np.arange(n)
    values = np.where((i + rank) % 3 == 0, 2, 1)
    if signed(dtype):
        values = np.where((i + rank) % 4 == 1, -1, values)
    return values.astype(dtype)


def reduced(op, dtype, size, n=N):
    """op over ranks 0..size-1 of their inputs, computed in int64/float64 and cast back."""
    source = prod_data if op == plexus.PROD else data
    wide = np.int64 if np.issubdtype(dtype, np.integer) else np.float64
    stack = np.stack([source(r, dtype, n).astype(wide) for r in range(size)])
    if op == plexus.SUM:
        result = stack.sum(axis=0)
    elif op == plexus.PROD:
        result = stack.prod(axis=0)
    elif op == plexus.MIN:
        result = stack.min(axis=0)
    elif op == plexus.MAX:
        result = stack.max(axis=0)
    else:  # AVG: integer quotients truncated toward zero
        total = stack.sum(axis=0)
        if wide is np.int64:
            result = np.array([abs(int(t)) // size * (1 if t >= 0 else -1) for t in total])
        else:
            result = total / size
    return result.astype(dtype)


def check_allreduce(comm, checks, dtype):
    for op in OPS:
        source = prod_data if op == plexus.PROD else data
        expected = reduced(op, dtype, comm.size)
        send = source(comm.rank, dtype)
        out = comm.allreduce(send, op=op)
        checks.equal(f"allreduce {op.name} {np.dtype(dtype)}", out, expected)
        checks.equal(f"allreduce {op.name} {np.dtype(dtype)} left sendbuf", send,
                     source(comm.rank, dtype))
        buf = source(comm.rank, dtype)
        result = comm.allreduce(buf, buf, op=op)
        checks.true(f"allreduce {op.name} in place returns recvbuf", result is buf)
        checks.equal(f"allreduce {op.name} {np.dtype(dtype)} in place", buf, expected)


def check_rooted(comm, checks, dtype, root):
    rank, size, name = comm.rank, comm.size, np.dtype(dtype).name
    expected = reduced(plexus.SUM, dtype, size)
    # reduce
    out = comm.reduce(data(rank, dtype), root=root)
    if rank == root:
        checks.equal(f"reduce {name} root {root}", out, expected)
    else:
        checks.true(f"reduce {name} returns None off the root", out is None)
    buf = data(rank, dtype)
    comm.reduce(buf, buf, root=root)
    checks.equal(f"reduce {name} in place", buf,
                 expected if rank == root else data(rank, dtype))
    # broadcast: out of place (non-roots pass a template), then in place
    source = data(root, dtype) if rank == root else np.zeros(N, dtype)
    out = comm.broadcast(source, root=root)
    checks.equal(f"broadcast {name} root {root}", out, data(root, dtype))
    buf = data(root, dtype) if rank == root else np.zeros(N, dtype)
    comm.broadcast(buf, buf, root=root)
    checks.equal(f"broadcast {name} in place", buf, data(root, dtype))
    # gather: block j is rank j's data
    gathered = np.stack([data(r, dtype) for r in range(size)])
    out = comm.gather(data(rank, dtype), root=root)
    if rank == root:
        checks.equal(f"gather {name} root {root}", out, gathered)
    else:
        checks.true(f"gather {name} returns None off the root", out is None)
    recv = np.zeros((size, N), dtype)
    if rank == root:
        recv[root] = data(rank, dtype)
        comm.gather(recv[root], recv, root=root)  # in place: sendbuf is the root's block
        checks.equal(f"gather {name} in place", recv, gathered)
    else:
        comm.gather(data(rank, dtype), recv, root=root)
        checks.equal(f"gather {name} leaves recvbuf off the root", recv, np.zeros((size, N), dtype))
    # scatter: rank j gets block j of the root's (size, N) array
    blocks = np.stack([data(root + 10 * j, dtype) for j in range(size)])
    out = comm.scatter(blocks if rank == root else None, np.empty(N, dtype), root=root)
    checks.equal(f"scatter {name} root {root}", out, blocks[rank])
    if rank == root:
        send = blocks.copy()
        comm.scatter(send, send[root], root=root)  # in place: recvbuf is the root's block
        checks.equal(f"scatter {name} in place", send, blocks)
    else:
        out = comm.scatter(blocks, root=root)  # a template gives the shape: (N,)
        checks.equal(f"scatter {name} with a template", out, blocks[rank])


def check_spread(comm, checks, dtype):
    """reduce_scatter, allgather, alltoall, send/recv."""
    rank, size, name = comm.rank, comm.size, np.dtype(dtype).name
    # reduce_scatter of (size, N): rank r gets the sum over ranks of row r
    full = reduced(plexus.SUM, dtype, size, size * N).reshape(size, N)
    send = data(rank, dtype, size * N).reshape(size, N)
    out = comm.reduce_scatter(send)
    checks.equal(f"reduce_scatter {name}", out, full[rank])
    send = data(rank, dtype, size * N)
    out = comm.reduce_scatter(send, send[rank * N:(rank + 1) * N])  # in place (NCCL's rule)
    checks.equal(f"reduce_scatter {name} in place", send[rank * N:(rank + 1) * N], full[rank])
    checks.true(f"reduce_scatter {name} in place returns the block",
                np.shares_memory(out, send))
    # allgather
    gathered = np.stack([data(r, dtype) for r in range(size)])
    out = comm.allgather(data(rank, dtype))
    checks.equal(f"allgather {name}", out, gathered)
    recv = np.zeros((size, N), dtype)
    recv[rank] = data(rank, dtype)
    comm.allgather(recv[rank], recv)  # in place: sendbuf is this rank's block
    checks.equal(f"allgather {name} in place", recv, gathered)
    # alltoall: block j of rank r holds 10*r + j + i
    def blocks(r):
        return np.stack([np.arange(N) + 10 * r + j for j in range(size)]).astype(dtype)
    expected = np.stack([blocks(q)[rank] for q in range(size)])
    out = comm.alltoall(blocks(rank))
    checks.equal(f"alltoall {name}", out, expected)
    buf = blocks(rank)
    comm.alltoall(buf, buf)
    checks.equal(f"alltoall {name} in place", buf, expected)
    # send/recv around the ring, blocking: even ranks send first, odd ranks receive first
    right, left = (rank + 1) % size, (rank - 1) % size
    recv = np.zeros(N, dtype)
    if rank % 2 == 0:
        comm.send(data(rank, dtype), right)
        comm.recv(recv, left)
    else:
        comm.recv(recv, left)
        comm.send(data(rank, dtype), right)
    checks.equal(f"send/recv {name}", recv, data(left, dtype))


def bf16_bits(values):
    """bfloat16 bit patterns of float32 values that bfloat16 represents exactly."""
    bits = np.asarray(values, np.float32).view(np.uint32)
    assert not (bits & 0xFFFF).any(), "not exactly representable in bfloat16"
    return (bits >> 16).astype(np.uint16)


def check_bfloat16(comm, checks):
    send = bf16_bits(data(comm.rank, np.float32))
    expected = bf16_bits(reduced(plexus.SUM, np.float32, comm.size))
    out = comm.allreduce(send, datatype=plexus.BFLOAT16)
    checks.equal("allreduce SUM bfloat16", out, expected)
    comm.allreduce(send, send, op=plexus.SUM, datatype=plexus.BFLOAT16)
    checks.equal("allreduce SUM bfloat16 in place", send, expected)
    checks.raises("uint16 without datatype=BFLOAT16", TypeError,
                  lambda: comm.allreduce(send), "uint16", "BFLOAT16")
    checks.raises("BFLOAT16 on float32", TypeError,
                  lambda: comm.allreduce(np.ones(3, np.float32), datatype=plexus.BFLOAT16),
                  "BFLOAT16")


def check_nonblocking(comm, checks):
    rank, size = comm.rank, comm.size
    x = data(rank, np.float32)
    a = comm.iallreduce(x, op=plexus.MAX)
    g = comm.iallgather(x)
    results = plexus.waitall([a, g])
    checks.equal("iallreduce MAX by waitall", results[0], reduced(plexus.MAX, np.float32, size))
    checks.equal("iallgather by waitall", results[1],
                 np.stack([data(r, np.float32) for r in range(size)]))
    checks.true("waitall's results are the Requests' results", a.wait() is results[0])
    request = comm.iallreduce(data(rank, np.int64))
    while not request.test():
        pass
    checks.true("test() stays True once done", request.test() and request.done)
    checks.equal("iallreduce by test()", request.wait(), reduced(plexus.SUM, np.int64, size))
    # the Request alone keeps its arrays alive: nothing else refers to them here
    request = comm.iallreduce(np.full(1000, rank + 1, np.float64), op=plexus.SUM)
    gc.collect()
    checks.equal("iallreduce of a temporary", request.wait(),
                 np.full(1000, size * (size + 1) // 2, np.float64))
    buf = data(0, np.int32) if rank == 0 else np.zeros(N, np.int32)
    request = comm.ibroadcast(buf, buf, root=0)
    checks.equal("ibroadcast", request.wait(), data(0, np.int32))
    send = data(rank, np.float64, size * N)
    request = comm.ireduce_scatter(send)
    checks.equal("ireduce_scatter", request.wait(),
                 reduced(plexus.SUM, np.float64, size, size * N)[rank * N:(rank + 1) * N])
    # isend and irecv both ways without a group (they do not hold the communicator)
    right, left = (rank + 1) % size, (rank - 1) % size
    recv_left, recv_right = np.zeros(N, np.uint8), np.zeros(N, np.uint8)
    requests = [comm.isend(data(rank, np.uint8), right), comm.isend(data(rank, np.uint8), left),
                comm.irecv(recv_left, left), comm.irecv(recv_right, right)]
    results = plexus.waitall(requests)
    checks.true("isend's result is None", results[0] is None and results[1] is None)
    checks.equal("irecv from the left", recv_left, data(left, np.uint8))
    checks.equal("irecv from the right", results[3], data(right, np.uint8))


def check_split(comm, checks):
    rank, size = comm.rank, comm.size
    sub = comm.split(rank % 2)
    members = [r for r in range(size) if r % 2 == rank % 2]
    checks.true("split: size", sub.size == len(members))
    checks.true("split: rank", sub.rank == members.index(rank))
    out = sub.allreduce(np.array([rank + 1], np.int64))
    checks.equal("split: allreduce over even/odd ranks", out,
                 np.array([sum(r + 1 for r in members)], np.int64))
    sub.destroy()
    sub.destroy()  # idempotent
    checks.raises("a destroyed communicator", plexus.InvalidUsageError,
                  lambda: sub.allreduce(np.ones(2)), "destroyed")
    # the last rank opts out with UNDEFINED; the others form one communicator, keys reversed
    color = plexus.UNDEFINED if rank == size - 1 else 0
    sub = comm.split(color, key=-rank)
    if rank == size - 1:
        checks.true("split: UNDEFINED gives None", sub is None)
    else:
        with sub:
            checks.true("split: keys order the ranks", sub.rank == size - 2 - rank)
            out = sub.allreduce(np.array([rank], np.int32))
            checks.equal("split: allreduce without the last rank", out,
                         np.array([sum(range(size - 1))], np.int32))


def check_init_rank(comm, checks):
    """A second communicator through get_unique_id()/init_rank(), the id broadcast over comm."""
    uid = np.zeros(128, np.uint8)
    if comm.rank == 0:
        # The world's rendezvous server holds the launcher's port: let the kernel pick one.
        os.environ.pop("PLEXUS_MASTER_PORT", None)
        uid[:] = np.frombuffer(plexus.get_unique_id(), np.uint8)
    comm.broadcast(uid, uid, root=0)
    with plexus.Communicator.init_rank(comm.size, uid.tobytes(), comm.rank) as other:
        checks.true("init_rank: rank and size", (other.rank, other.size) == (comm.rank, comm.size))
        out = other.allreduce(np.array([comm.rank], np.int64), op=plexus.MAX)
        checks.equal("init_rank: allreduce", out, np.array([comm.size - 1], np.int64))
    checks.raises("init_rank: a short id", ValueError,
                  lambda: plexus.Communicator.init_rank(comm.size, b"x", comm.rank), "128")


def check_errors(comm, checks):
    rank, size = comm.rank, comm.size
    x = np.arange(4, dtype=np.float32)
    checks.raises("dtype mismatch", (TypeError, plexus.PlexusError),
                  lambda: comm.allreduce(x, np.empty(4, np.int32)), "recvbuf", "int32",
                  f"rank {rank}")
    checks.raises("unsupported dtype", TypeError,
                  lambda: comm.allreduce(np.ones(3, np.int16)), "int16")
    send = np.arange(2, dtype=np.float32)
    error = checks.raises("allgather recvbuf size", ValueError,
                          lambda: comm.allgather(send, np.empty(2 * size - 1, np.float32)),
                          f"allgather: rank {rank}: recvbuf has {2 * size - 1} elements, "
                          f"expected {2 * size} (sendbuf 2 x {size} ranks)")
    checks.true("a size error is a PlexusError INVALID_ARGUMENT",
                isinstance(error, plexus.PlexusError)
                and error.code == plexus.Result.ERROR_INVALID_ARGUMENT)
    checks.raises("reduce_scatter sendbuf size", ValueError,
                  lambda: comm.reduce_scatter(np.ones(size + 1, np.float32)), "sendbuf")
    checks.raises("non-contiguous sendbuf", ValueError,
                  lambda: comm.allreduce(np.arange(8.0)[::2]), "sendbuf", "contiguous")
    readonly = np.empty(4, np.float32)
    readonly.flags.writeable = False
    checks.raises("read-only recvbuf", ValueError,
                  lambda: comm.allreduce(x, readonly), "recvbuf", "read-only")
    checks.raises("a list", TypeError, lambda: comm.allreduce([1.0, 2.0]), "numpy.ndarray")
    for name, call in [("broadcast", lambda: comm.broadcast(x, x, root=99)),
                       ("reduce", lambda: comm.reduce(x, root=99)),
                       ("ibroadcast", lambda: comm.ibroadcast(x, x, root=99))]:
        error = checks.raises(f"{name} root 99", plexus.PlexusError, call, "root", "99")
        checks.true(f"{name} root 99: code", error.code == plexus.Result.ERROR_INVALID_ARGUMENT
                    and error.code_name == "PLX_ERROR_INVALID_ARGUMENT"
                    and isinstance(error, plexus.InvalidArgumentError))
        checks.true(f"{name} root 99: the library's message",
                    error.message.startswith("plx_") and f"rank {rank}" in error.message)
    checks.raises("a bad op", plexus.InvalidArgumentError,
                  lambda: comm.allreduce(x, op=17), "op")
    # the communicator is still usable after argument errors
    checks.equal("allreduce after the errors", comm.allreduce(np.ones(3, np.int32)),
                 np.full(3, size, np.int32))


def main():
    comm = plexus.Communicator.from_env()
    checks = Checks(comm.rank)
    try:
        checks.true("size", comm.size >= 2)
        checks.true("local size: one host", comm.local_size == comm.size)
        checks.true("local rank", 0 <= comm.local_rank < comm.local_size)
        checks.true("transport", isinstance(comm.transport, str) and comm.transport)
        for index, dtype in enumerate(DTYPES):
            check_allreduce(comm, checks, dtype)
            check_rooted(comm, checks, dtype, root=index % comm.size)
            check_spread(comm, checks, dtype)
        check_bfloat16(comm, checks)
        check_nonblocking(comm, checks)
        check_split(comm, checks)
        check_init_rank(comm, checks)
        check_errors(comm, checks)
        comm.barrier()
        comm.destroy()
        comm.destroy()  # idempotent
    except BaseException:
        print(f"rank {comm.rank}: FAILED after {checks.count} checks", flush=True)
        traceback.print_exc()
        sys.stdout.flush()
        comm.abort()
        return 1
    print(f"rank {comm.rank}: {checks.count} checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
