"""Collectives: the collective and point-to-point methods of a Communicator on NumPy arrays.

Each has a prepare step, shared by its blocking and non-blocking forms, that checks the arrays
(plexus._buffers), allocates a missing receive array and returns the C arguments, the arrays to
keep alive and the result. Counts come from array sizes (elements). The class is a mixin: the
Communicator supplies _rank, _size and _start().
"""
from ._buffers import Call, address, block_shape
from .ops import Op


class Collectives:
    """Collective methods of plexus.Communicator; see plexus.communicator's docstring."""

    def _allreduce(self, method, sendbuf, recvbuf, op, datatype):
        c = Call(method, self._rank, self._size)
        send = c.array("sendbuf", sendbuf)
        recv = None if recvbuf is None else c.array("recvbuf", recvbuf, writeable=True)
        dt = c.datatype(send, recv, datatype)
        recv = c.output("recvbuf", recv, send.shape, send.dtype)
        c.expect_size("recvbuf", recv, send.size, "as sendbuf")
        op = c.integer("op", op)
        return (address(send), address(recv), send.size, dt, op), (send, recv), recv

    def allreduce(self, sendbuf, recvbuf=None, op=Op.SUM, datatype=None):
        """recvbuf[i] = op over all ranks of sendbuf[i] (plx_allreduce); returns recvbuf.

        sendbuf: any shape; recvbuf: the same number of elements (a new array of sendbuf's
        shape when None). In place when recvbuf starts where sendbuf does (allreduce(a, a)).
        op: plexus.SUM, PROD, MIN, MAX or AVG (integer AVG truncates toward zero; MIN/MAX
        propagate NaN). datatype: None (taken from the dtype) or the matching plexus datatype;
        plexus.BFLOAT16 is required for uint16 arrays of bfloat16 bits (every method).
        Every rank gets bit-identical results. Raises DatatypeError (TypeError) for an
        unsupported or mismatched dtype, InvalidArgumentError (ValueError) for a size,
        contiguity or read-only recvbuf problem or a bad op, MismatchError when ranks differ,
        RemoteError/PlexusTimeoutError/AbortedError when the communicator failed.
        Thread safety: one thread per communicator at a time (plexus.communicator).
        """
        return self._start("allreduce", *self._allreduce("allreduce", sendbuf, recvbuf, op,
                                                         datatype), nonblocking=False)

    def iallreduce(self, sendbuf, recvbuf=None, op=Op.SUM, datatype=None):
        """Non-blocking allreduce(): returns a Request whose wait() returns recvbuf. The
        arrays must not be touched until it completes (the Request keeps them alive).
        Argument errors are raised at once, as by allreduce()."""
        return self._start("allreduce", *self._allreduce("iallreduce", sendbuf, recvbuf, op,
                                                         datatype), nonblocking=True)

    def _root_receives(self, c, sendbuf, recvbuf, root, datatype):
        """The checked root, sendbuf, recvbuf (None off the root: it is not read there) and
        datatype of a call whose root receives (reduce, gather)."""
        root = c.integer("root", root)
        send = c.array("sendbuf", sendbuf)
        recv = None
        if self._rank == root and recvbuf is not None:
            recv = c.array("recvbuf", recvbuf, writeable=True)
        return root, send, recv, c.datatype(send, recv, datatype)

    def _reduce(self, method, sendbuf, recvbuf, op, root, datatype):
        c = Call(method, self._rank, self._size)
        root, send, recv, dt = self._root_receives(c, sendbuf, recvbuf, root, datatype)
        if self._rank == root:
            recv = c.output("recvbuf", recv, send.shape, send.dtype)
            c.expect_size("recvbuf", recv, send.size, "as sendbuf")
        op = c.integer("op", op)
        return (address(send), address(recv), send.size, dt, op, root), (send, recv), recv

    def reduce(self, sendbuf, recvbuf=None, op=Op.SUM, root=0, datatype=None):
        """The root's recvbuf[i] = op over all ranks of sendbuf[i] (plx_reduce). Returns
        recvbuf on the root (a new array of sendbuf's shape when None), None elsewhere
        (recvbuf is ignored there). In place on the root when recvbuf starts where sendbuf
        does. A root out of 0..size-1 raises InvalidArgumentError from the library (naming
        the root) on every rank. Other errors and thread safety as allreduce()."""
        return self._start("reduce", *self._reduce("reduce", sendbuf, recvbuf, op, root,
                                                   datatype), nonblocking=False)

    def ireduce(self, sendbuf, recvbuf=None, op=Op.SUM, root=0, datatype=None):
        """Non-blocking reduce(): a Request whose wait() returns recvbuf on the root, None
        elsewhere."""
        return self._start("reduce", *self._reduce("ireduce", sendbuf, recvbuf, op, root,
                                                   datatype), nonblocking=True)

    def _root_sends(self, c, sendbuf, recvbuf, root, template):
        """The checked root, sendbuf and recvbuf of a call whose root sends (broadcast,
        scatter): sendbuf is required on the root; elsewhere it is a template of `template`
        and may be None if recvbuf is given."""
        root = c.integer("root", root)
        send = None if sendbuf is None else c.array("sendbuf", sendbuf)
        if self._rank == root and send is None:
            raise c.fail("sendbuf is None on the root")
        if recvbuf is None and send is None:
            raise c.fail("recvbuf and sendbuf are None: a rank other than the root needs "
                         f"recvbuf (or sendbuf as a template of {template})")
        recv = None if recvbuf is None else c.array("recvbuf", recvbuf, writeable=True)
        return root, send, recv

    def _broadcast(self, method, sendbuf, recvbuf, root, datatype):
        c = Call(method, self._rank, self._size)
        root, send, recv = self._root_sends(c, sendbuf, recvbuf, root, "its shape and dtype")
        dt = c.datatype(send, recv, datatype)
        recv = c.output("recvbuf", recv, send.shape if send is not None else None,
                        recv.dtype if send is None else send.dtype)
        if send is not None:
            c.expect_size("recvbuf", recv, send.size, "as sendbuf")
        if self._rank != root:
            send = None  # read only on the root
        return (address(send), address(recv), recv.size, dt, root), (send, recv), recv

    def broadcast(self, sendbuf, recvbuf=None, root=0, datatype=None):
        """Every rank's recvbuf receives the root's sendbuf (plx_broadcast); returns recvbuf.

        On the root sendbuf is required; elsewhere it is not read and may be None if recvbuf
        is given (otherwise it serves as the template of the new recvbuf: same shape and
        dtype). recvbuf: sendbuf's number of elements, a new array of its shape when None.
        In place on the root when recvbuf starts where sendbuf does: broadcast(a, a, root).
        A root out of range raises InvalidArgumentError from the library on every rank.
        Other errors and thread safety as allreduce()."""
        return self._start("broadcast", *self._broadcast("broadcast", sendbuf, recvbuf, root,
                                                         datatype), nonblocking=False)

    def ibroadcast(self, sendbuf, recvbuf=None, root=0, datatype=None):
        """Non-blocking broadcast(): a Request whose wait() returns recvbuf."""
        return self._start("broadcast", *self._broadcast("ibroadcast", sendbuf, recvbuf, root,
                                                         datatype), nonblocking=True)

    def _reduce_scatter(self, method, sendbuf, recvbuf, op, datatype):
        c = Call(method, self._rank, self._size)
        send = c.array("sendbuf", sendbuf)
        recv = None if recvbuf is None else c.array("recvbuf", recvbuf, writeable=True)
        dt = c.datatype(send, recv, datatype)
        count = c.divisible("sendbuf", send)
        recv = c.output("recvbuf", recv, block_shape(send.shape, self._size), send.dtype)
        c.expect_size("recvbuf", recv, count,
                      f"sendbuf {send.size} / {self._size} ranks")
        op = c.integer("op", op)
        return (address(send), address(recv), count, dt, op), (send, recv), recv

    def reduce_scatter(self, sendbuf, recvbuf=None, op=Op.SUM, datatype=None):
        """Rank r's recvbuf[i] = op over all ranks of sendbuf[r * n + i], n = recvbuf.size
        (plx_reduce_scatter); returns recvbuf.

        sendbuf.size must be size * recvbuf.size. A new recvbuf has rank r's block's shape:
        sendbuf.shape[1:] when sendbuf.shape[0] == size, (shape[0] // size, *shape[1:]) when
        shape[0] is a multiple of size, else (sendbuf.size // size,). In place (NCCL's rule)
        when recvbuf is rank r's block of sendbuf, e.g.
        reduce_scatter(a, a.reshape(size, -1)[rank]). Errors and thread safety as
        allreduce()."""
        return self._start("reduce_scatter", *self._reduce_scatter(
            "reduce_scatter", sendbuf, recvbuf, op, datatype), nonblocking=False)

    def ireduce_scatter(self, sendbuf, recvbuf=None, op=Op.SUM, datatype=None):
        """Non-blocking reduce_scatter(): a Request whose wait() returns recvbuf."""
        return self._start("reduce_scatter", *self._reduce_scatter(
            "ireduce_scatter", sendbuf, recvbuf, op, datatype), nonblocking=True)

    def _allgather(self, method, sendbuf, recvbuf, datatype):
        c = Call(method, self._rank, self._size)
        send = c.array("sendbuf", sendbuf)
        recv = None if recvbuf is None else c.array("recvbuf", recvbuf, writeable=True)
        dt = c.datatype(send, recv, datatype)
        recv = c.output("recvbuf", recv, (self._size,) + send.shape, send.dtype)
        c.expect_size("recvbuf", recv, send.size * self._size,
                      f"sendbuf {send.size} x {self._size} ranks")
        return (address(send), address(recv), send.size, dt), (send, recv), recv

    def allgather(self, sendbuf, recvbuf=None, datatype=None):
        """recvbuf's block j (elements j*n .. j*n+n-1, n = sendbuf.size) is rank j's sendbuf,
        on every rank (plx_allgather); returns recvbuf.

        recvbuf.size must be size * sendbuf.size; a new one has shape (size, *sendbuf.shape),
        so recvbuf[j] is rank j's array. In place (NCCL's rule) when sendbuf is this rank's
        block of recvbuf: allgather(r.reshape(size, -1)[rank], r). Errors and thread safety
        as allreduce()."""
        return self._start("allgather", *self._allgather("allgather", sendbuf, recvbuf,
                                                         datatype), nonblocking=False)

    def iallgather(self, sendbuf, recvbuf=None, datatype=None):
        """Non-blocking allgather(): a Request whose wait() returns recvbuf."""
        return self._start("allgather", *self._allgather("iallgather", sendbuf, recvbuf,
                                                         datatype), nonblocking=True)

    def _alltoall(self, method, sendbuf, recvbuf, datatype):
        c = Call(method, self._rank, self._size)
        send = c.array("sendbuf", sendbuf)
        recv = None if recvbuf is None else c.array("recvbuf", recvbuf, writeable=True)
        dt = c.datatype(send, recv, datatype)
        count = c.divisible("sendbuf", send)
        recv = c.output("recvbuf", recv, send.shape, send.dtype)
        c.expect_size("recvbuf", recv, send.size, "as sendbuf")
        return (address(send), address(recv), count, dt), (send, recv), recv

    def alltoall(self, sendbuf, recvbuf=None, datatype=None):
        """Block j of rank r's sendbuf lands in block r of rank j's recvbuf (plx_alltoall);
        blocks are sendbuf.size // size elements. Returns recvbuf (a new array of sendbuf's
        shape when None). sendbuf.size must be a multiple of size and recvbuf.size equal to
        it. In place when recvbuf starts where sendbuf does. Errors and thread safety as
        allreduce()."""
        return self._start("alltoall", *self._alltoall("alltoall", sendbuf, recvbuf, datatype),
                           nonblocking=False)

    def ialltoall(self, sendbuf, recvbuf=None, datatype=None):
        """Non-blocking alltoall(): a Request whose wait() returns recvbuf."""
        return self._start("alltoall", *self._alltoall("ialltoall", sendbuf, recvbuf,
                                                       datatype), nonblocking=True)

    def _gather(self, method, sendbuf, recvbuf, root, datatype):
        c = Call(method, self._rank, self._size)
        root, send, recv, dt = self._root_receives(c, sendbuf, recvbuf, root, datatype)
        if self._rank == root:
            recv = c.output("recvbuf", recv, (self._size,) + send.shape, send.dtype)
            c.expect_size("recvbuf", recv, send.size * self._size,
                          f"sendbuf {send.size} x {self._size} ranks")
        return (address(send), address(recv), send.size, dt, root), (send, recv), recv

    def gather(self, sendbuf, recvbuf=None, root=0, datatype=None):
        """The root's recvbuf block j is rank j's sendbuf (plx_gather). Returns recvbuf on the
        root (size * sendbuf.size elements; a new one has shape (size, *sendbuf.shape)),
        None elsewhere (recvbuf ignored there). In place on the root when sendbuf is its
        block root of recvbuf. A root out of range raises InvalidArgumentError from the
        library. Errors and thread safety as allreduce()."""
        return self._start("gather", *self._gather("gather", sendbuf, recvbuf, root, datatype),
                           nonblocking=False)

    def igather(self, sendbuf, recvbuf=None, root=0, datatype=None):
        """Non-blocking gather(): a Request whose wait() returns recvbuf on the root."""
        return self._start("gather", *self._gather("igather", sendbuf, recvbuf, root,
                                                   datatype), nonblocking=True)

    def _scatter(self, method, sendbuf, recvbuf, root, datatype):
        c = Call(method, self._rank, self._size)
        root, send, recv = self._root_sends(c, sendbuf, recvbuf, root, "the root's sendbuf")
        dt = c.datatype(send, recv, datatype)
        if send is not None:
            count = c.divisible("sendbuf", send)
            recv = c.output("recvbuf", recv, block_shape(send.shape, self._size), send.dtype)
            c.expect_size("recvbuf", recv, count, f"sendbuf {send.size} / {self._size} ranks")
        if self._rank != root:
            send = None  # read only on the root
        return (address(send), address(recv), recv.size, dt, root), (send, recv), recv

    def scatter(self, sendbuf, recvbuf=None, root=0, datatype=None):
        """Block j of the root's sendbuf lands in rank j's recvbuf (plx_scatter); returns
        recvbuf. sendbuf (root: required; elsewhere not read, None or a template) has size *
        recvbuf.size elements; a new recvbuf has the block shape of reduce_scatter(). In
        place on the root when recvbuf is its block root of sendbuf. A root out of range
        raises InvalidArgumentError from the library. Errors and thread safety as
        allreduce()."""
        return self._start("scatter", *self._scatter("scatter", sendbuf, recvbuf, root,
                                                     datatype), nonblocking=False)

    def iscatter(self, sendbuf, recvbuf=None, root=0, datatype=None):
        """Non-blocking scatter(): a Request whose wait() returns recvbuf."""
        return self._start("scatter", *self._scatter("iscatter", sendbuf, recvbuf, root,
                                                     datatype), nonblocking=True)

    def _send(self, method, sendbuf, peer, datatype):
        c = Call(method, self._rank, self._size)
        peer = c.integer("peer", peer)
        send = c.array("sendbuf", sendbuf)
        dt = c.datatype(send, None, datatype)
        return (address(send), send.size, dt, peer), (send,), None

    def send(self, sendbuf, peer, datatype=None):
        """Sends sendbuf (all its elements) to rank `peer` (plx_send); the k-th send to a
        peer matches its k-th recv from this rank, with the same size and dtype. May block
        until the peer receives: two ranks exchanging use isend()/irecv(), or order the calls
        (one sends first). Returns None. Raises InvalidArgumentError for a peer out of range,
        TransportError for a receive smaller than the message; thread safety as allreduce()."""
        self._start("send", *self._send("send", sendbuf, peer, datatype), nonblocking=False)

    def isend(self, sendbuf, peer, datatype=None):
        """Non-blocking send(): a Request whose wait() returns None. Once posted it does not
        hold the communicator: later calls run while it is in flight (as MPI_Isend)."""
        return self._start("send", *self._send("isend", sendbuf, peer, datatype),
                           nonblocking=True)

    def _recv(self, method, recvbuf, peer, datatype):
        c = Call(method, self._rank, self._size)
        peer = c.integer("peer", peer)
        recv = c.array("recvbuf", recvbuf, writeable=True)
        dt = c.datatype(None, recv, datatype)
        return (address(recv), recv.size, dt, peer), (recv,), recv

    def recv(self, recvbuf, peer, datatype=None):
        """Receives recvbuf.size elements from rank `peer` into recvbuf (plx_recv) and
        returns it; recvbuf is required (its size and dtype must match the sender's).
        Errors and thread safety as send()."""
        return self._start("recv", *self._recv("recv", recvbuf, peer, datatype),
                           nonblocking=False)

    def irecv(self, recvbuf, peer, datatype=None):
        """Non-blocking recv(): a Request whose wait() returns recvbuf. Once posted it does
        not hold the communicator (as MPI_Irecv)."""
        return self._start("recv", *self._recv("irecv", recvbuf, peer, datatype),
                           nonblocking=True)
