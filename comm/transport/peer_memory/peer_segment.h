// peer_segment.h - the shared-memory segment behind PeerMemory: its layout, and creating,
// opening and unlinking it.
//
// One POSIX shared-memory object per communicator (on one host), named
// "plexus_<creator pid>_pm_<64 random bits>_<counter>" so that names never collide and a segment
// left by a creator that died before unlinking it is removed by the next shm start-up
// (comm/transport/ofi/shm_names.h removes plexus_<pid>_* objects whose pid is gone). Layout:
//
//   +--------+-----------------------+-----------------------------------------------------+
//   | header | words of rank 0..n-1  | slots: rank 0 buffer 0, rank 0 buffer 1, rank 1 ... |
//   +--------+-----------------------+-----------------------------------------------------+
//     64 B     n x 256 B (4 lines)     2 n x slot_bytes, page aligned
//
// A rank's words: `arrived` and `reduced` (FutexWord, futex_word.h), its pid (with its pid
// namespace, since containers on one host may share /dev/shm), and the notes of its pieces
// (PeerMemory::post_note, peer_memory.h; piece g's in notes[g % 2]). Every rank
// writes only its own words and slots; peers read them. Pages are zero when created; the
// creator's posix_fallocate allocates every page (on its NUMA node), and every rank maps the
// whole segment with MAP_POPULATE, so no collective takes a page fault in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/transport/peer_memory/futex_word.h"
#include "plexus/plexus.h"

namespace plexus::comm {

struct SegmentHeader {
  uint64_t magic = 0;
  uint32_t ranks = 0;
  uint32_t reserved = 0;
  uint64_t slot_bytes = 0;
  uint64_t total_bytes = 0;
  unsigned char pad[32] = {};
};
static_assert(sizeof(SegmentHeader) == 64);

constexpr size_t kSegmentNoteBytes = 32;  // one piece's note (PeerMemory::post_note)

struct RankWords {
  FutexWord arrived;  // pieces this rank has staged (see peer_memory.h)
  FutexWord reduced;  // pieces whose part this rank has reduced
  alignas(64) int32_t pid = 0;
  uint64_t pid_namespace = 0;  // inode of /proc/self/ns/pid: pids compare only within one
  uint32_t note_piece[2] = {};  // piece + 1 of the note in notes[i] (0: none yet)
  alignas(64) unsigned char notes[2][kSegmentNoteBytes] = {};  // piece g's in notes[g % 2]
};
static_assert(sizeof(RankWords) == 256);

constexpr uint64_t kSegmentMagic = 0x706c78706565726eULL;  // "plxpeern": layout with notes

// Bytes of the segment for `ranks` ranks with `slot_bytes` per buffer.
size_t segment_bytes(int ranks, size_t slot_bytes);

// One mapping of a segment; unmapped by the destructor.
class SegmentMapping {
 public:
  SegmentMapping() = default;
  ~SegmentMapping();
  SegmentMapping(const SegmentMapping&) = delete;
  SegmentMapping& operator=(const SegmentMapping&) = delete;

  // Creates a new object of segment_bytes(ranks, slot_bytes) under a fresh name and maps it
  // (header filled in). The caller unlinks it with unlink_segment once every rank has mapped it.
  // On failure *why says what failed; nothing is left behind.
  bool create(int ranks, size_t slot_bytes, std::string* name, std::string* why);
  // Maps the object `name` made by create() and checks its header against `ranks`.
  bool open(const std::string& name, int ranks, std::string* why);

  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base_); }
  RankWords& words(int rank) const;
  // Buffer `buffer` (0 or 1) of `rank`: header().slot_bytes bytes.
  unsigned char* slot(int rank, int buffer) const;
  bool mapped() const { return base_ != nullptr; }

 private:
  bool map(int fd, size_t bytes, std::string* why);
  void* base_ = nullptr;
  size_t bytes_ = 0;
  int ranks_ = 0;
};

// Removes the name (the mappings stay valid). Ignores a name already gone.
void unlink_segment(const std::string& name);

}  // namespace plexus::comm
