// sampler.cpp - text generation from a checkpoint (--sample): autoregressive sampling with
// temperature and optional top-k (token_sampling.h), over a sliding context window of the
// model's max_seq_len bytes.
#include "engine/train/sampler.h"

#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_model.h"
#include "engine/config/blas_threads.h"
#include "engine/device/compute.h"
#include "engine/model/gpt.h"
#include "engine/model/rng.h"
#include "engine/train/token_sampling.h"

namespace plexus::engine {

int run_sampling(const SampleOptions& o) {
  try {
    if (std::string why = check_sampling_options(o); !why.empty()) {
      std::fprintf(stderr, "plexus-train: %s\n", why.c_str());
      return 2;
    }
    if (std::string why = select_compute_device(o.device, 0, o.autocast); !why.empty()) {
      std::fprintf(stderr, "plexus-train: %s\n", why.c_str());
      return 2;
    }
    use_one_compute_thread();  // a token at a time: threads would wait more than they work
    const ModelCheckpoint ck = load_model_checkpoint(o.checkpoint_path);
    Gpt model(ck.config);  // on the selected device
    std::copy(ck.params().begin(), ck.params().end(), model.params());

    std::vector<int32_t> context(o.prompt.begin(), o.prompt.end());
    for (int32_t& t : context) t = static_cast<uint8_t>(t);
    if (context.empty()) context.push_back('\n');
    std::fputs(o.prompt.c_str(), stdout);
    SplitMix64 rng(o.seed);  // a seed gives the same text everywhere
    for (int i = 0; i < o.tokens; ++i) {
      const float* last = next_token_logits(model, context);
      int next = draw_token(last, ck.config.vocab_size, o.temperature, o.top_k, rng);
      context.push_back(next);
      std::fputc(next, stdout);
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);
    return 0;
  } catch (const CheckpointError& e) {
    std::fprintf(stderr, "plexus-train: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "plexus-train: sampling from '%s': out of memory (std::bad_alloc) for "
                 "its model with --tokens %d\n",
                 o.checkpoint_path.c_str(), o.tokens);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-train: sampling from '%s': %s\n", o.checkpoint_path.c_str(),
                 e.what());
    return 1;
  }
}

}  // namespace plexus::engine
