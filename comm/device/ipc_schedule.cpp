// ipc_schedule.cpp - the steps of one piece of a CUDA IPC collective (ipc_schedule.h). Built
// with and without CUDA: it is data, and the CPU test runs it.
#include "comm/device/ipc_schedule.h"

#include <algorithm>

#include "comm/algorithms/shm_pieces.h"

namespace plexus::comm::device {

namespace {

Step plain(StepKind kind, int peer = 0) {
  Step s;
  s.kind = kind;
  s.peer = peer;
  return s;
}

Step copy(Place dst, Place src, size_t count, bool scaled = false) {
  Step s;
  s.kind = StepKind::Copy;
  s.dst = dst;
  s.src = src;
  s.count = count;
  s.scaled = scaled;
  return s;
}

Step reduce(Place dst, size_t slot_offset, size_t count) {
  Step s;
  s.kind = StepKind::Reduce;
  s.dst = dst;
  s.src = {Buffer::Slot, 0, slot_offset};
  s.count = count;
  return s;
}

Place send(size_t offset) { return {Buffer::Send, 0, offset}; }
Place recv(size_t offset) { return {Buffer::Recv, 0, offset}; }
Place slot(int rank, size_t offset) { return {Buffer::Slot, rank, offset}; }

void add(std::vector<Step>* steps, const Step& s) {
  if ((s.kind == StepKind::Copy || s.kind == StepKind::Reduce) && s.count == 0) return;
  steps->push_back(s);
}

// The part of every piece-sized run of a reduce_scatter slot: slot_elems / n, rounded down to
// whole 64-byte lines when a slot has room for one per rank.
size_t block_stride(const IpcCall& call) {
  const size_t n = static_cast<size_t>(call.n);
  const size_t line = std::max<size_t>(1, 64 / call.elem);
  const size_t per = call.slot_elems / n;
  return per >= line ? per / line * line : per;
}

void reduce_steps(const IpcCall& c, size_t off, size_t len, std::vector<Step>* steps) {
  const int n = c.n, r = c.rank;
  add(steps, plain(StepKind::WaitWritable));
  add(steps, copy(slot(r, 0), send(off), len, true));
  add(steps, plain(StepKind::Sync));
  add(steps, plain(StepKind::Arrive));
  add(steps, plain(StepKind::WaitAllArrived));
  const PieceSpan mine = piece_part(len, n, r, c.elem);
  add(steps, reduce(slot(r, mine.begin), mine.begin, mine.count));
  add(steps, plain(StepKind::Sync));
  add(steps, plain(StepKind::Reduced));
  if (c.collective == Collective::Reduce && r != c.root) return;
  for (int j = 0; j < n; ++j) {
    const int q = (r + j) % n;
    if (q != r) add(steps, plain(StepKind::WaitReduced, q));
    const PieceSpan part = piece_part(len, n, q, c.elem);
    add(steps, copy(recv(off + part.begin), slot(q, part.begin), part.count));
  }
}

void reduce_scatter_steps(const IpcCall& c, size_t off, size_t len, std::vector<Step>* steps) {
  const size_t stride = block_stride(c);
  add(steps, plain(StepKind::WaitWritable));
  for (int q = 0; q < c.n; ++q) {
    const size_t qs = static_cast<size_t>(q);
    add(steps, copy(slot(c.rank, qs * stride), send(qs * c.count + off), len, true));
  }
  add(steps, plain(StepKind::Sync));
  add(steps, plain(StepKind::Arrive));
  add(steps, plain(StepKind::WaitAllArrived));
  add(steps, reduce(recv(off), static_cast<size_t>(c.rank) * stride, len));
}

void allgather_steps(const IpcCall& c, size_t off, size_t len, std::vector<Step>* steps) {
  const int n = c.n, r = c.rank;
  if (!c.in_place) add(steps, copy(recv(static_cast<size_t>(r) * c.count + off), send(off), len));
  add(steps, plain(StepKind::WaitWritable));
  add(steps, copy(slot(r, 0), send(off), len));
  add(steps, plain(StepKind::Sync));
  add(steps, plain(StepKind::Arrive));
  for (int j = 1; j < n; ++j) {
    const int q = (r + j) % n;
    add(steps, plain(StepKind::WaitArrived, q));
    add(steps, copy(recv(static_cast<size_t>(q) * c.count + off), slot(q, 0), len));
  }
}

void broadcast_steps(const IpcCall& c, size_t off, size_t len, std::vector<Step>* steps) {
  if (c.rank == c.root) {
    add(steps, plain(StepKind::WaitWritable));
    add(steps, copy(slot(c.rank, 0), send(off), len));
    add(steps, plain(StepKind::Sync));
    add(steps, plain(StepKind::Arrive));
    if (!c.in_place) add(steps, copy(recv(off), send(off), len));
    return;
  }
  add(steps, plain(StepKind::Sync));
  add(steps, plain(StepKind::Arrive));
  add(steps, plain(StepKind::WaitArrived, c.root));
  add(steps, copy(recv(off), slot(c.root, 0), len));
}

}  // namespace

bool has_ipc_schedule(Collective collective) {
  switch (collective) {
    case Collective::Allreduce:
    case Collective::Reduce:
    case Collective::Broadcast:
    case Collective::ReduceScatter:
    case Collective::Allgather:
      return true;
    default:
      return false;
  }
}

IpcPieces ipc_pieces(const IpcCall& call) {
  IpcPieces p;
  p.per_piece = call.collective == Collective::ReduceScatter ? block_stride(call) : call.slot_elems;
  if (p.per_piece == 0) return p;
  p.pieces = (call.count + p.per_piece - 1) / p.per_piece;
  return p;
}

void ipc_piece_steps(const IpcCall& call, size_t k, std::vector<Step>* steps) {
  const IpcPieces p = ipc_pieces(call);
  if (k >= p.pieces) return;
  const size_t off = k * p.per_piece;
  const size_t len = std::min(p.per_piece, call.count - off);
  switch (call.collective) {
    case Collective::Allreduce:
    case Collective::Reduce:
      return reduce_steps(call, off, len, steps);
    case Collective::ReduceScatter:
      return reduce_scatter_steps(call, off, len, steps);
    case Collective::Allgather:
      return allgather_steps(call, off, len, steps);
    case Collective::Broadcast:
      return broadcast_steps(call, off, len, steps);
    default:
      return;
  }
}

}  // namespace plexus::comm::device
