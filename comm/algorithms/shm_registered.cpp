// shm_registered.cpp - the registered-buffer handshake of shm_registered.h.
#include "comm/algorithms/shm_registered.h"

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "comm/base/error.h"
#include "comm/base/log.h"

namespace plexus::comm {
namespace {

constexpr uint64_t kAnnounceMagic = 0x706c787265674131ULL;  // "plxregA1"

struct Announce {
  uint64_t magic = 0;
  uint64_t send_bytes = 0;  // the call's bytes (the same everywhere: a check)
  uint64_t recv_bytes = 0;
  SharedBufferRef send;
  SharedBufferRef recv;
};

struct Mapped {
  uint64_t magic = 0;
  uint32_t ok = 0;
};

bool fits(const SharedBufferRef& ref, uint64_t bytes) {
  return ref.alloc_id != 0 && ref.offset <= ref.alloc_bytes &&
         bytes <= ref.alloc_bytes - ref.offset;
}

bool needs_send(const RegisteredNeeds& needs, int q) {
  return needs.send_all || needs.send_root == q;
}

}  // namespace

plx_result_t registered_begin(PeerMemory& peers, const CollArgs& args, uint64_t send_bytes,
                              uint64_t recv_bytes, const RegisteredNeeds& needs,
                              const char* op_name, RegisteredCall* call, bool* ok) {
  *ok = false;
  const int n = peers.size(), r = peers.rank();
  const uint32_t g = peers.next_pieces(3);
  call->done_piece = g + 2;

  // A. announce
  PLX_CHECK(peers.wait_writable(g, op_name));
  Announce mine;
  std::memset(static_cast<void*>(&mine), 0, sizeof(mine));  // no stray padding bytes to peers
  mine.magic = kAnnounceMagic;
  mine.send_bytes = send_bytes;
  mine.recv_bytes = recv_bytes;
  mine.send.alloc_id = args.send_ref.alloc_id;
  mine.send.fd = args.send_ref.fd;
  mine.send.alloc_bytes = args.send_ref.alloc_bytes;
  mine.send.offset = args.send_ref.offset;
  mine.recv.alloc_id = args.recv_ref.alloc_id;
  mine.recv.fd = args.recv_ref.fd;
  mine.recv.alloc_bytes = args.recv_ref.alloc_bytes;
  mine.recv.offset = args.recv_ref.offset;
  std::memcpy(peers.slot(r, g), &mine, sizeof(mine));
  peers.arrive(g);
  PLX_CHECK(peers.wait_all_arrived(g, op_name));
  std::vector<Announce> all(static_cast<size_t>(n));
  bool everyone = true;
  for (int q = 0; q < n; ++q) {
    std::memcpy(&all[q], peers.slot(q, g), sizeof(Announce));
    const Announce& a = all[q];
    everyone = everyone && a.magic == kAnnounceMagic && a.send_bytes == send_bytes &&
               a.recv_bytes == recv_bytes && (!needs_send(needs, q) || fits(a.send, send_bytes)) &&
               (!needs.recv_all || fits(a.recv, recv_bytes));
  }
  if (!everyone) {
    // Pieces g+1 and g+2 are still consumed, with nothing in them: every rank reserved them.
    peers.arrive(g + 2);
    return PLX_SUCCESS;
  }

  // B. mapped (skipped by every rank alike when the needed allocations are those every rank
  // mapped before: PeerAllocations::verified). The key holds zeros for buffers not needed.
  std::vector<uint64_t> key;
  key.reserve(4 * static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) {
    const SharedBufferRef none{};
    const SharedBufferRef& s = needs_send(needs, q) ? all[q].send : none;
    const SharedBufferRef& v = needs.recv_all ? all[q].recv : none;
    key.insert(key.end(), {s.alloc_id, s.alloc_bytes, v.alloc_id, v.alloc_bytes});
  }
  const bool known = key == peers.allocations().verified();
  call->send.assign(static_cast<size_t>(n), nullptr);
  call->recv.assign(static_cast<size_t>(n), nullptr);
  call->send[r] = static_cast<const unsigned char*>(args.sendbuf);
  call->recv[r] = static_cast<unsigned char*>(args.recvbuf);
  bool mapped = true;
  std::string why;
  if (!known) peers.allocations().make_room(2 * static_cast<size_t>(n - 1));
  for (int q = 0; q < n && mapped; ++q) {
    if (q == r) continue;
    const pid_t pid = peers.peer_pid(q);
    if (needs_send(needs, q)) {
      call->send[q] = peers.allocations().resolve(q, pid, all[q].send, &why);
      mapped = call->send[q] != nullptr;
    }
    if (mapped && needs.recv_all) {
      call->recv[q] = peers.allocations().resolve(q, pid, all[q].recv, &why);
      mapped = call->recv[q] != nullptr;
    }
    if (!mapped) {
      log_message(LogLevel::Info,
                  "rank {}: {}: cannot map rank {}'s registered buffer ({}); the call goes "
                  "through the staging buffers",
                  peers.member_rank(r), op_name, peers.member_rank(q), why);
    }
  }
  if (known && !mapped) {
    // Cannot happen (the mappings are cached); the peers skip B, so no fallback is possible.
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("{}: rank {}: a verified registered buffer did not resolve: {}",
                                 op_name, peers.member_rank(r), why));
  }
  if (!known) {
    Mapped flag{kAnnounceMagic, mapped ? 1u : 0u};
    std::memcpy(peers.slot(r, g + 1), &flag, sizeof(flag));
    peers.arrive(g + 1);
    PLX_CHECK(peers.wait_all_arrived(g + 1, op_name));
    for (int q = 0; q < n; ++q) {
      Mapped theirs;
      std::memcpy(&theirs, peers.slot(q, g + 1), sizeof(theirs));
      everyone = everyone && theirs.magic == kAnnounceMagic && theirs.ok == 1;
    }
    peers.allocations().set_verified(everyone ? std::move(key) : std::vector<uint64_t>{});
    if (!everyone) {
      peers.arrive(g + 2);
      return PLX_SUCCESS;
    }
  }
  *ok = true;
  return PLX_SUCCESS;
}

plx_result_t registered_end(PeerMemory& peers, const RegisteredCall& call, const char* op_name) {
  peers.arrive(call.done_piece);
  PLX_CHECK(peers.wait_all_arrived(call.done_piece, op_name));
  peers.last_path = PeerMemory::Path::Registered;
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
