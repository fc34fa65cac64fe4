// split_test.cpp - plx_comm_split on real ranks over libfabric tcp and shm and over UCX.
//
// MPI_Comm_split semantics: each split's expected members come from a serial reference (the
// members of one color sorted by key, then by parent rank), and each child is checked through
// its own traffic: an allgather of the members' world ranks must list them in that order, and an
// allreduce must give their closed-form sum. Then: PLX_UNDEFINED gives NULL; a bad color on one
// rank fails every rank with a message naming that rank; a split of a split; every collective on
// the children, interleaved with the parent's; destroy of children and parent in either order;
// abort of a child (even in the middle of one of its calls) leaving the parent working.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

// What newcomm holds before a split, to see whether the split wrote it.
const plx_comm_t kUnwritten = reinterpret_cast<plx_comm_t>(uintptr_t{0x5eed});

// The old ranks of `me`'s color in their new order: by key, then by old rank (MPI 4.0, 7.4.2).
// Empty for PLX_UNDEFINED.
std::vector<int> reference_members(const std::vector<int>& colors, const std::vector<int>& keys,
                                   int me) {
  std::vector<int> members;
  if (colors[me] == PLX_UNDEFINED) return members;
  for (int r = 0; r < static_cast<int>(colors.size()); ++r) {
    if (colors[r] == colors[me]) members.push_back(r);
  }
  std::sort(members.begin(), members.end(),
            [&](int a, int b) { return std::pair(keys[a], a) < std::pair(keys[b], b); });
  return members;
}

std::string show(const std::vector<int>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::to_string(values[i]);
  }
  return out + "]";
}

// Checks a child: its rank and size, its local rank and size (every rank runs on this host), the
// order of its members (an allgather of their world ranks) and an allreduce over it.
// `members` are world ranks in the expected order.
std::string check_child(plx_comm_t child, const std::vector<int>& members, int world_rank) {
  const int m = static_cast<int>(members.size());
  const int expected_rank =
      static_cast<int>(std::find(members.begin(), members.end(), world_rank) - members.begin());
  int rank = -1, size = -1, local_rank = -1, local_size = -1;
  if (plx_comm_rank(child, &rank) != PLX_SUCCESS || plx_comm_size(child, &size) != PLX_SUCCESS ||
      plx_comm_local_rank(child, &local_rank) != PLX_SUCCESS ||
      plx_comm_local_size(child, &local_size) != PLX_SUCCESS) {
    return "child queries: " + last_error_text();
  }
  if (rank != expected_rank || size != m || local_rank != expected_rank || local_size != m) {
    return "child is rank " + std::to_string(rank) + " of " + std::to_string(size) + ", local " +
           std::to_string(local_rank) + " of " + std::to_string(local_size) + "; expected " +
           std::to_string(expected_rank) + " of " + std::to_string(m) + " (members " +
           show(members) + ")";
  }
  std::vector<int> order(m, -1);
  int32_t mine = world_rank;
  if (auto why = expect_success(plx_allgather(&mine, order.data(), 1, PLX_INT32, child, nullptr),
                                "allgather on the child");
      !why.empty()) {
    return why;
  }
  if (order != members) return "child members " + show(order) + ", expected " + show(members);
  int64_t value = world_rank + 1, sum = 0;
  if (auto why = expect_success(plx_allreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, child, nullptr),
                                "allreduce on the child");
      !why.empty()) {
    return why;
  }
  int64_t expected = 0;
  for (int w : members) expected += w + 1;
  if (sum != expected) {
    return "child allreduce " + std::to_string(sum) + ", expected " + std::to_string(expected);
  }
  return "";
}

// An allreduce on the parent: sum over ranks of (rank + 1) * salt.
std::string check_parent(plx_comm_t parent, int rank, int n, int64_t salt) {
  int64_t value = (rank + 1) * salt, sum = 0;
  if (auto why = expect_success(plx_allreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, parent, nullptr),
                                "allreduce on the parent");
      !why.empty()) {
    return why;
  }
  const int64_t expected = salt * n * (n + 1) / 2;
  if (sum != expected) {
    return "parent allreduce " + std::to_string(sum) + ", expected " + std::to_string(expected);
  }
  return "";
}

// Splits `parent` (whose members are the world ranks `world`, this rank being parent rank `me`)
// with every rank's color and key, checks the result against the reference, and returns the
// child (NULL for PLX_UNDEFINED) in *child.
std::string split_and_check(plx_comm_t parent, const std::vector<int>& world, int me,
                            const std::vector<int>& colors, const std::vector<int>& keys,
                            OwnedComm* child) {
  plx_comm_t made = kUnwritten;
  if (auto why = expect_success(plx_comm_split(parent, colors[me], keys[me], &made),
                                "plx_comm_split(color " + std::to_string(colors[me]) + ", key " +
                                    std::to_string(keys[me]) + ")");
      !why.empty()) {
    return why;
  }
  const std::vector<int> members = reference_members(colors, keys, me);
  if (members.empty()) return made == nullptr ? "" : "PLX_UNDEFINED did not give NULL";
  if (made == nullptr || made == kUnwritten) return "no child made";
  *child->out() = made;
  std::vector<int> member_worlds;
  for (int p : members) member_worlds.push_back(world[p]);
  return check_child(made, member_worlds, world[me]);
}

using Assignment = std::pair<std::vector<int>, std::vector<int>>;  // colors, keys

// The splits of ColorsAndKeysOrderTheChildren for n ranks.
std::vector<Assignment> assignments(int n) {
  std::vector<Assignment> out;
  auto make = [&](auto color, auto key) {
    Assignment a;
    for (int r = 0; r < n; ++r) {
      a.first.push_back(color(r));
      a.second.push_back(key(r));
    }
    out.push_back(a);
  };
  make([](int r) { return (r % 2) * 1000003; }, [](int r) { return -r; });  // keys reverse
  make([](int) { return 7; }, [n](int r) { return (n - r) / 2; });          // ties: by rank
  make([](int r) { return r == 0 ? PLX_UNDEFINED : 3; }, [](int) { return 0; });
  make([](int) { return PLX_UNDEFINED; }, [](int) { return 0; });  // nobody joins
  make([](int r) { return r; }, [](int) { return 0; });            // one rank each
  make([](int r) { return r % 3; }, [](int r) { return r % 2; });
  return out;
}

// A bad color on one rank (or two) fails every rank alike, naming the (lowest) rank; local
// argument errors; the parent then still works, and so does a correct split.
std::string bad_colors(plx_comm_t world, int rank, int n) {
  const std::string fn = "plx_comm_split: rank " + std::to_string(rank) + ": ";
  const std::string rule = "; colors must be >= 0 or PLX_UNDEFINED (-1)";
  // One rank passes a bad color: every rank fails, naming it.
  const int victim = n - 1;
  plx_comm_t made = kUnwritten;
  if (auto why = expect_failure(plx_comm_split(world, rank == victim ? -5 : rank % 2, 0, &made),
                                PLX_ERROR_INVALID_ARGUMENT,
                                fn + "rank " + std::to_string(victim) + " passed color -5" + rule);
      !why.empty()) {
    return "one bad color: " + why;
  }
  if (made != kUnwritten) return "newcomm written by a failed split";
  // Two bad colors: the lowest rank is named.
  const int color = rank == 1 ? -2 : rank == n - 1 ? -7 : 0;
  if (auto why = expect_failure(plx_comm_split(world, color, rank, &made),
                                PLX_ERROR_INVALID_ARGUMENT, fn + "rank 1 passed color -2" + rule);
      !why.empty()) {
    return "two bad colors: " + why;
  }
  // Local argument errors (every rank makes the same one, so no rank is left waiting).
  if (auto why = expect_failure(plx_comm_split(world, 0, 0, nullptr), PLX_ERROR_INVALID_ARGUMENT,
                                fn + "newcomm is NULL");
      !why.empty()) {
    return why;
  }
  if (auto why = expect_failure(plx_comm_split(nullptr, 0, 0, &made), PLX_ERROR_INVALID_ARGUMENT,
                                "plx_comm_split: comm is NULL");
      !why.empty()) {
    return why;
  }
  if (plx_group_start() != PLX_SUCCESS) return "plx_group_start: " + last_error_text();
  const std::string in_group = expect_failure(
      plx_comm_split(world, 0, 0, &made), PLX_ERROR_INVALID_USAGE, fn + "called inside a group");
  if (plx_group_end() != PLX_SUCCESS) return "plx_group_end: " + last_error_text();
  if (!in_group.empty()) return "split in a group: " + in_group;
  if (made != kUnwritten) return "newcomm written by a failed split";
  // Nothing to rebuild: the parent still works, and so does a correct split.
  if (auto why = check_parent(world, rank, n, 3); !why.empty()) return why;
  std::vector<int> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  OwnedComm child;
  if (auto why = split_and_check(world, identity, rank, std::vector<int>(n, 0),
                                 std::vector<int>(n, 0), &child);
      !why.empty()) {
    return "split after the failures: " + why;
  }
  return child.destroy("child");
}

class SplitTest : public RankCaseTest {};

TEST_P(SplitTest, ColorsKeysAndBadColors) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, [&]() -> std::string {
      OwnedComm world;
      if (auto why = open_world(n, &world); !why.empty()) return why;
      std::vector<int> identity(n);
      std::iota(identity.begin(), identity.end(), 0);
      int salt = 1;
      for (const auto& [colors, keys] : assignments(n)) {
        OwnedComm child;
        const std::string label = "split colors " + show(colors) + " keys " + show(keys) + ": ";
        if (auto why = split_and_check(world.get(), identity, rank, colors, keys, &child);
            !why.empty()) {
          return label + why;
        }
        if (auto why = check_parent(world.get(), rank, n, ++salt); !why.empty()) {
          return label + why;
        }
        if (child.get()) {
          if (auto why = child.destroy("child"); !why.empty()) return label + why;
        }
      }
      if (auto why = bad_colors(world.get(), rank, n); !why.empty()) return why;
      return world.destroy("world");
    }());
  });
}

TEST_P(SplitTest, SplitOfASplitAndDestroyInAnyOrder) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, [&]() -> std::string {
      OwnedComm world;
      if (auto why = open_world(n, &world); !why.empty()) return why;
      std::vector<int> identity(n);
      std::iota(identity.begin(), identity.end(), 0);
      // Level 1: parity, reverse order.
      std::vector<int> colors(n), keys(n);
      for (int r = 0; r < n; ++r) {
        colors[r] = r % 2;
        keys[r] = n - r;
      }
      OwnedComm child;
      if (auto why = split_and_check(world.get(), identity, rank, colors, keys, &child);
          !why.empty()) {
        return "level 1: " + why;
      }
      std::vector<int> child_world;  // world ranks of the child's members, in child order
      for (int p : reference_members(colors, keys, rank)) child_world.push_back(p);
      const int m = static_cast<int>(child_world.size());
      const int c = static_cast<int>(std::find(child_world.begin(), child_world.end(), rank) -
                                     child_world.begin());
      // Level 2: pairs of the child, each pair in reverse order; level 3: a copy of level 2.
      std::vector<int> colors2(m), keys2(m);
      for (int r = 0; r < m; ++r) {
        colors2[r] = r / 2;
        keys2[r] = -r;
      }
      OwnedComm grandchild;
      if (auto why = split_and_check(child.get(), child_world, c, colors2, keys2, &grandchild);
          !why.empty()) {
        return "level 2: " + why;
      }
      std::vector<int> grand_world;
      for (int p : reference_members(colors2, keys2, c)) grand_world.push_back(child_world[p]);
      const int g = static_cast<int>(std::find(grand_world.begin(), grand_world.end(), rank) -
                                     grand_world.begin());
      const int gm = static_cast<int>(grand_world.size());
      OwnedComm copy;
      if (auto why = split_and_check(grandchild.get(), grand_world, g, std::vector<int>(gm, 4),
                                     std::vector<int>(gm, 0), &copy);
          !why.empty()) {
        return "level 3: " + why;
      }
      // Every level keeps working, used in turn.
      for (int round = 0; round < 3; ++round) {
        if (auto why = check_child(copy.get(), grand_world, rank); !why.empty()) return why;
        if (auto why = check_parent(world.get(), rank, n, 10 + round); !why.empty()) return why;
        if (auto why = check_child(child.get(), child_world, rank); !why.empty()) return why;
        if (auto why = check_child(grandchild.get(), grand_world, rank); !why.empty()) {
          return why;
        }
      }
      // Destroy in mixed orders: the world first on odd ranks (their children keep working
      // without it), last on even ranks.
      if (rank % 2 == 1) {
        if (auto why = world.destroy("world first"); !why.empty()) return why;
        if (auto why = check_child(child.get(), child_world, rank); !why.empty()) {
          return "after the world's destroy: " + why;
        }
        if (auto why = copy.destroy("copy"); !why.empty()) return why;
        if (auto why = child.destroy("child"); !why.empty()) return why;
        if (auto why = check_child(grandchild.get(), grand_world, rank); !why.empty()) {
          return "after its parent's destroy: " + why;
        }
        return grandchild.destroy("grandchild");
      }
      if (auto why = grandchild.destroy("grandchild"); !why.empty()) return why;
      if (auto why = check_child(copy.get(), grand_world, rank); !why.empty()) {
        return "after its parent's destroy: " + why;
      }
      if (auto why = child.destroy("child"); !why.empty()) return why;
      if (auto why = copy.destroy("copy"); !why.empty()) return why;
      return world.destroy("world last");
    }());
  });
}

// Every collective on a child, closed-form, each followed by an allreduce on the parent.
// Member j of the child (world rank w[j]) contributes v(w[j], i) = 1000 w[j] + i + 1 at index i.
std::string collectives_on_child(plx_comm_t child, plx_comm_t world, const std::vector<int>& w,
                                 int c, int rank, int n) {
  const int m = static_cast<int>(w.size());
  const size_t count = 37;
  const size_t big = count * static_cast<size_t>(m);
  const auto v = [](int world_rank, size_t i) {
    return static_cast<int32_t>(1000 * world_rank + static_cast<int>(i) + 1);
  };
  std::vector<int32_t> send(big), recv(big);
  for (size_t i = 0; i < big; ++i) send[i] = v(w[c], i);
  int64_t salt = 100;
  std::string why;
  const auto step = [&](plx_result_t rc, const char* what, auto expected_at, size_t length,
                        bool check) {
    if (!why.empty()) return;
    why = expect_success(rc, what);
    if (!why.empty()) return;
    for (size_t i = 0; check && i < length && why.empty(); ++i) {
      const int32_t want = expected_at(i);
      if (recv[i] != want) {
        why = std::string(what) + ": index " + std::to_string(i) + " is " +
              std::to_string(recv[i]) + ", expected " + std::to_string(want);
      }
    }
    if (why.empty()) why = check_parent(world, rank, n, ++salt);
    std::fill(recv.begin(), recv.end(), -1);
  };
  const int root = m - 1;
  int32_t sum_w = 0, max_w = 0;
  for (int x : w) {
    sum_w += x;
    max_w = std::max(max_w, x);
  }
  step(
      plx_allreduce(send.data(), recv.data(), count, PLX_INT32, PLX_SUM, child, nullptr),
      "allreduce", [&](size_t i) { return 1000 * sum_w + m * static_cast<int32_t>(i + 1); }, count,
      true);
  step(
      plx_reduce(send.data(), recv.data(), count, PLX_INT32, PLX_MAX, root, child, nullptr),
      "reduce", [&](size_t i) { return v(max_w, i); }, count, c == root);
  step(
      plx_broadcast(send.data(), recv.data(), count, PLX_INT32, root, child, nullptr), "broadcast",
      [&](size_t i) { return v(w[root], i); }, count, true);
  step(
      plx_reduce_scatter(send.data(), recv.data(), count, PLX_INT32, PLX_SUM, child, nullptr),
      "reduce_scatter",
      [&](size_t i) { return 1000 * sum_w + m * static_cast<int32_t>(c * count + i + 1); }, count,
      true);
  step(
      plx_allgather(send.data(), recv.data(), count, PLX_INT32, child, nullptr), "allgather",
      [&](size_t i) { return v(w[i / count], i % count); }, big, true);
  step(
      plx_alltoall(send.data(), recv.data(), count, PLX_INT32, child, nullptr), "alltoall",
      [&](size_t i) { return v(w[i / count], c * count + i % count); }, big, true);
  step(
      plx_gather(send.data(), recv.data(), count, PLX_INT32, root, child, nullptr), "gather",
      [&](size_t i) { return v(w[i / count], i % count); }, big, c == root);
  step(
      plx_scatter(send.data(), recv.data(), count, PLX_INT32, root, child, nullptr), "scatter",
      [&](size_t i) { return v(w[root], c * count + i); }, count, true);
  step(
      plx_barrier(child), "barrier", [](size_t) { return 0; }, 0, false);
  // A ring of sends and receives on the child, in a group.
  if (why.empty()) {
    if (plx_group_start() != PLX_SUCCESS) return "plx_group_start: " + last_error_text();
    const plx_result_t sent = plx_send(send.data(), count, PLX_INT32, (c + 1) % m, child, nullptr);
    const plx_result_t received =
        plx_recv(recv.data(), count, PLX_INT32, (c + m - 1) % m, child, nullptr);
    const plx_result_t ended = plx_group_end();
    step(
        sent != PLX_SUCCESS       ? sent
        : received != PLX_SUCCESS ? received
                                  : ended,
        "send/recv", [&](size_t i) { return v(w[(c + m - 1) % m], i); }, count, true);
  }
  return why;
}

TEST_P(SplitTest, EveryCollectiveRunsOnTheChildren) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, [&]() -> std::string {
      OwnedComm world;
      if (auto why = open_world(n, &world); !why.empty()) return why;
      std::vector<int> identity(n), colors(n), keys(n);
      std::iota(identity.begin(), identity.end(), 0);
      for (int r = 0; r < n; ++r) {
        colors[r] = r % 2;
        keys[r] = (r * 7) % n;  // a scrambled order
      }
      // The split queues behind the parent's outstanding requests, which finish first.
      constexpr int kOutstanding = 3;
      int64_t values[kOutstanding], sums[kOutstanding];
      plx_request_t requests[kOutstanding];
      for (int k = 0; k < kOutstanding; ++k) {
        values[k] = (rank + 1) * int64_t{k + 1};
        sums[k] = -1;
        if (auto why = expect_success(plx_iallreduce(&values[k], &sums[k], 1, PLX_INT64, PLX_SUM,
                                                     world.get(), &requests[k]),
                                      "iallreduce before the split");
            !why.empty()) {
          return why;
        }
      }
      OwnedComm child;
      if (auto why = split_and_check(world.get(), identity, rank, colors, keys, &child);
          !why.empty()) {
        return why;
      }
      for (int k = 0; k < kOutstanding; ++k) {
        int done = -1;
        if (plx_test(requests[k], &done) != PLX_SUCCESS || done != 1 ||
            sums[k] != int64_t{k + 1} * n * (n + 1) / 2) {
          return "request " + std::to_string(k) + " posted before the split: done " +
                 std::to_string(done) + ", sum " + std::to_string(sums[k]) + " " +
                 last_error_text();
        }
      }
      const std::vector<int> members = reference_members(colors, keys, rank);
      const int c =
          static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
      if (auto why = collectives_on_child(child.get(), world.get(), members, c, rank, n);
          !why.empty()) {
        return why;
      }
      if (auto why = child.destroy("child"); !why.empty()) return why;
      return world.destroy("world");
    }());
  });
}

TEST_P(SplitTest, AbortOfAChildLeavesTheParentWorking) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, [&]() -> std::string {
      OwnedComm world;
      if (auto why = open_world(n, &world); !why.empty()) return why;
      std::vector<int> identity(n), colors(n), keys(n, 0);
      std::iota(identity.begin(), identity.end(), 0);
      for (int r = 0; r < n; ++r) colors[r] = r % 2;
      // 1. Every member aborts its child after using it.
      {
        OwnedComm child;
        if (auto why = split_and_check(world.get(), identity, rank, colors, keys, &child);
            !why.empty()) {
          return why;
        }
        // Every member has finished with the child before any aborts it (an abort right after a
        // collective may take messages a slower member still waits for).
        if (auto why = expect_success(plx_barrier(world.get()), "world barrier"); !why.empty()) {
          return why;
        }
        if (auto why = child.abort("child"); !why.empty()) return why;
        if (auto why = check_parent(world.get(), rank, n, 21); !why.empty()) {
          return "after aborting the child: " + why;
        }
      }
      // 2. World rank 0 aborts its child while one of its own threads waits in a barrier on it
      // that the other members never enter: that call ends with PLX_ERROR_ABORTED. The other
      // members abort theirs unused.
      {
        OwnedComm child;
        if (auto why = split_and_check(world.get(), identity, rank, colors, keys, &child);
            !why.empty()) {
          return why;
        }
        if (auto why = expect_success(plx_barrier(world.get()), "world barrier"); !why.empty()) {
          return why;
        }
        if (rank == 0) {
          std::atomic<plx_result_t> result{PLX_IN_PROGRESS};
          std::string message;
          std::thread waiter([&] {
            result = plx_barrier(child.get());
            message = last_error_text();
          });
          usleep(200 * 1000);
          const std::string aborted = child.abort("child during a barrier");
          waiter.join();
          if (!aborted.empty()) return aborted;
          if (result != PLX_ERROR_ABORTED || message.find("plx_barrier: rank 0: ") != 0 ||
              message.find("aborted") == std::string::npos) {
            return std::string("barrier on the aborted child: ") + plx_get_error_string(result) +
                   " \"" + message + "\"";
          }
        }
        // The others close their endpoints only after rank 0's abort, so that its blocked call
        // cannot fail first on a closed peer.
        if (auto why = expect_success(plx_barrier(world.get()), "world barrier"); !why.empty()) {
          return why;
        }
        if (rank != 0) {
          if (auto why = child.abort("unused child"); !why.empty()) return why;
        }
      }
      // 3. World rank 0 aborts its child with requests outstanding (an ibarrier the others
      // never join, three iallreduce queued behind it): every wait returns PLX_ERROR_ABORTED.
      {
        OwnedComm child;
        if (auto why = split_and_check(world.get(), identity, rank, colors, keys, &child);
            !why.empty()) {
          return why;
        }
        if (auto why = expect_success(plx_barrier(world.get()), "world barrier"); !why.empty()) {
          return why;
        }
        if (rank == 0) {
          int32_t values[3] = {1, 2, 3}, sums[3] = {0, 0, 0};
          plx_request_t requests[4] = {nullptr, nullptr, nullptr, nullptr};
          if (auto why = expect_success(plx_ibarrier(child.get(), &requests[0]), "ibarrier");
              !why.empty()) {
            return why;
          }
          for (int k = 0; k < 3; ++k) {
            if (auto why = expect_success(plx_iallreduce(&values[k], &sums[k], 1, PLX_INT32,
                                                         PLX_SUM, child.get(), &requests[k + 1]),
                                          "iallreduce");
                !why.empty()) {
              return why;
            }
          }
          usleep(100 * 1000);
          if (auto why = child.abort("child with outstanding requests"); !why.empty()) return why;
          for (int k = 0; k < 4; ++k) {
            const plx_result_t rc = plx_wait(requests[k]);
            const std::string message = last_error_text();
            if (rc != PLX_ERROR_ABORTED || message.find("plx_wait: rank 0: ") != 0 ||
                message.find("aborted") == std::string::npos) {
              return "request " + std::to_string(k) +
                     " on the aborted child: " + plx_get_error_string(rc) + " \"" + message + "\"";
            }
          }
          if (sums[0] != 0 || sums[1] != 0 || sums[2] != 0) return "an aborted request wrote";
        }
        if (auto why = expect_success(plx_barrier(world.get()), "world barrier"); !why.empty()) {
          return why;
        }
        if (rank != 0) {
          if (auto why = child.abort("unused child"); !why.empty()) return why;
        }
      }
      plx_result_t async = PLX_ERROR_INTERNAL;
      if (plx_comm_get_async_error(world.get(), &async) != PLX_SUCCESS || async != PLX_SUCCESS) {
        return std::string("parent's async error: ") + plx_get_error_string(async);
      }
      for (int round = 0; round < 3; ++round) {
        if (auto why = check_parent(world.get(), rank, n, 30 + round); !why.empty()) {
          return "after the aborts: " + why;
        }
      }
      return world.destroy("world");
    }());
  });
}

// Each transport once, 4 and 5 ranks between them (a fork of 5 ranks per case costs seconds on
// a loaded 2-core runner).
INSTANTIATE_TEST_SUITE_P(Transports, SplitTest,
                         ::testing::Values(RankCase{"tcp", 5}, RankCase{"shm", 4},
                                           RankCase{"ucx", 4}),
                         rank_case_name);

}  // namespace
}  // namespace plexus::test
