// gloo_bench.cpp - the peer benchmark for Gloo (Debian's libgloo-dev), as PyTorch's
// ProcessGroupGloo uses it: the TCP transport on 127.0.0.1, a full mesh connected through a
// FileStore rendezvous in a directory every rank shares (-s DIR), and the option-style
// collectives (gloo::allreduce, broadcast, reduce, allgather, alltoall, gather, scatter), float32
// with gloo::sum. Gloo has no reduce_scatter in this API, so that one exits 2.
//
// Ranks come from a launcher's environment: PLEXUS_RANK and PLEXUS_WORLD_SIZE (plexus-run), or
// RANK and WORLD_SIZE (torchrun):
//   plexus-run -n 4 -- perf/peers/bin/gloo_bench allreduce -s "$(mktemp -d)" -b 1K -e 64M
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "perf/peers/peer_harness.h"

namespace {

using plexus::peers::Coll;

constexpr std::chrono::seconds kTimeout{120};

// The environment variable `name`, else `fallback`'s, else -1.
int env_int(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) v = std::getenv(fallback);
  return v == nullptr ? -1 : std::atoi(v);
}

class GlooBackend final : public plexus::peers::PeerBackend {
 public:
  GlooBackend(int rank, int nranks, const std::string& store_dir) : rank_(rank), nranks_(nranks) {
    gloo::transport::tcp::attr attr("127.0.0.1");
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore file_store(store_dir);
    gloo::rendezvous::PrefixStore store("gloo_bench", file_store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    context->setTimeout(kTimeout);
    context->connectFullMesh(store, device);
    context_ = context;
  }

  std::string description() const override {
    return "peer Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." +
           std::to_string(GLOO_VERSION_MINOR) + "." + std::to_string(GLOO_VERSION_PATCH) +
           " (Debian libgloo-dev), transport tcp on 127.0.0.1";
  }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  bool supports(Coll coll) const override { return coll != Coll::kReduceScatter; }

  void barrier() override {
    gloo::BarrierOptions opts(context_);
    opts.setTag(next_tag());
    gloo::barrier(opts);
  }

  double max_over_ranks(double value) override {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(&value, 1);
    opts.setReduceFunction(reduce_fn(&gloo::max<double>));
    opts.setTag(next_tag());
    gloo::allreduce(opts);
    return value;
  }

  int64_t sum_over_ranks(int64_t value) override {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(&value, 1);
    opts.setReduceFunction(reduce_fn(&gloo::sum<int64_t>));
    opts.setTag(next_tag());
    gloo::allreduce(opts);
    return value;
  }

  void run(Coll coll, const float* send_const, float* recv, size_t count, int root) override {
    float* send = const_cast<float*>(send_const);  // Gloo takes non-const pointers, reads only
    const size_t all = count * static_cast<size_t>(nranks_);
    switch (coll) {
      case Coll::kAllreduce: {
        gloo::AllreduceOptions opts(context_);
        opts.setInput(send, count);
        opts.setOutput(recv, count);
        opts.setReduceFunction(reduce_fn(&gloo::sum<float>));
        opts.setTag(next_tag());
        gloo::allreduce(opts);
        break;
      }
      case Coll::kBroadcast: {
        gloo::BroadcastOptions opts(context_);
        opts.setOutput(recv, count);
        opts.setRoot(root);
        opts.setTag(next_tag());
        gloo::broadcast(opts);
        break;
      }
      case Coll::kReduce: {
        gloo::ReduceOptions opts(context_);
        opts.setInput(send, count);
        opts.setOutput(recv, count);
        opts.setRoot(root);
        opts.setReduceFunction(reduce_fn(&gloo::sum<float>));
        opts.setTag(next_tag());
        gloo::reduce(opts);
        break;
      }
      case Coll::kAllgather: {
        gloo::AllgatherOptions opts(context_);
        opts.setInput(send, count);
        opts.setOutput(recv, all);
        opts.setTag(next_tag());
        gloo::allgather(opts);
        break;
      }
      case Coll::kAlltoall: {
        gloo::AlltoallOptions opts(context_);
        opts.setInput(send, all);
        opts.setOutput(recv, all);
        opts.setTag(next_tag());
        gloo::alltoall(opts);
        break;
      }
      case Coll::kGather: {
        gloo::GatherOptions opts(context_);
        opts.setInput(send, count);
        if (rank_ == root) opts.setOutput(recv, all);
        opts.setRoot(root);
        opts.setTag(next_tag());
        gloo::gather(opts);
        break;
      }
      case Coll::kScatter: {
        gloo::ScatterOptions opts(context_);
        if (rank_ == root) {
          std::vector<float*> blocks;
          for (int r = 0; r < nranks_; ++r) blocks.push_back(send + r * count);
          opts.setInputs(blocks, count);
        }
        opts.setOutput(recv, count);
        opts.setRoot(root);
        opts.setTag(next_tag());
        gloo::scatter(opts);
        break;
      }
      case Coll::kReduceScatter: break;  // not supported(): never called
    }
  }

 private:
  using ReduceFn = void (*)(void*, const void*, const void*, size_t);
  static ReduceFn reduce_fn(ReduceFn fn) { return fn; }
  uint32_t next_tag() { return tag_++ % (1u << 20); }  // one tag per operation, in order

  int rank_;
  int nranks_;
  uint32_t tag_ = 0;
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace

int main(int argc, char** argv) {
  plexus::peers::PeerOptions options;
  if (int code = plexus::peers::parse_peer_options(argc, argv, "gloo_bench", &options); code >= 0) {
    return code;
  }
  const int rank = env_int("PLEXUS_RANK", "RANK");
  const int nranks = env_int("PLEXUS_WORLD_SIZE", "WORLD_SIZE");
  if (rank < 0 || nranks < 1 || rank >= nranks) {
    std::fprintf(stderr, "gloo_bench: set PLEXUS_RANK and PLEXUS_WORLD_SIZE (or RANK and "
                         "WORLD_SIZE), e.g. by starting it under plexus-run\n");
    return 2;
  }
  if (options.store_dir.empty()) {
    std::fprintf(stderr, "gloo_bench: -s DIR is required: a fresh directory every rank shares "
                         "for the FileStore rendezvous\n");
    return 2;
  }
  try {
    GlooBackend backend(rank, nranks, options.store_dir);
    return plexus::peers::run_peer_benchmark(backend, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_bench: rank %d: %s\n", rank, e.what());
    return 1;
  }
}
