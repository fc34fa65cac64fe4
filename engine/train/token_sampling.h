// token_sampling.h - the pieces of autoregressive generation that --sample and --predict share:
// checking the sampling options, the logits of the next byte after a context (a sliding window
// of the model's max_seq_len bytes), and drawing a byte from them with temperature and top-k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/options.h"
#include "engine/model/gpt.h"
#include "engine/model/rng.h"

namespace plexus::engine {

// "" if --temperature is finite and > 0 and --tokens and --top-k are >= 0; else the message
// naming the options and their values (the caller prints it and exits 2).
// The most bytes --sample or --predict generates per prompt (each costs a forward pass of the
// whole context; a million takes hours on a CPU).
inline constexpr int kMaxSampleTokens = 1000000;

std::string check_sampling_options(const SampleOptions& options);

// The model's logits (vocab_size floats) for the byte after `context`, from a forward pass over
// its last min(size, max_seq_len) bytes. `context` must not be empty. The pointer is the
// model's logits buffer: valid until its next forward.
const float* next_token_logits(Gpt& model, const std::vector<int32_t>& context);

// Draws a token from softmax(logits / temperature), keeping only the top_k largest when
// 0 < top_k < vocab. Deterministic for a given rng state.
int draw_token(const float* logits, int vocab, float temperature, int top_k, SplitMix64& rng);

}  // namespace plexus::engine
