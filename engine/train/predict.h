// predict.h - plexus-train --predict: for every line of a text file, a continuation sampled
// from a single-file checkpoint and the model's most likely next bytes after it, as JSON lines.
//
// Input: the file's bytes cut at '\n' (the '\n' is not part of the line; a last line without
// one counts; a '\r' stays in its line; an empty line is an empty prompt, conditioned on "\n"
// as --sample does), at most kMaxPredictInputBytes. Output (written by rank 0 through a
// temporary file and a rename): one JSON object per input line, in input order:
//   {"line": i, "prompt": "...", "continuation": "...", "continuation_bytes": [..],
//    "next_byte": [{"byte": b, "p": p}, ...]}
// "prompt" and "continuation" are the bytes as JSON strings, invalid UTF-8 replaced by U+FFFD
// and control characters escaped; "continuation_bytes" are the exact --tokens bytes drawn with
// --temperature and --top-k from SplitMix64(--sample-seed + i), so a line's output depends
// only on the line and its index. "next_byte" is the model's distribution (softmax of the
// logits, temperature 1, no top-k) of the byte after the prompt: the --predict-top most likely
// bytes, most likely first (ties: the smaller byte), with their probabilities.
//
// Ranks: every rank holds the whole model and takes lines rank, rank + N, ...; rank 0 gathers
// the others' lines (plx_send/plx_recv on the world) and writes the file, byte-identical to a
// single process's. A placement with a P or T degree above 1 is refused (the model is not
// split for predict); D and +plugins are accepted and change nothing. See
// docs/evaluate-predict.md.
#pragma once

#include <cstddef>
#include <string>

#include "engine/config/options.h"

namespace plexus::engine {

inline constexpr size_t kMaxPredictInputBytes = size_t{64} << 20;  // 64 MiB

struct PredictOptions {
  SampleOptions sample;       // checkpoint, tokens, temperature, top_k, seed, device
  std::string input_path;     // --predict
  std::string output_path;    // --predict-output
  int top = 5;                // --predict-top: most likely next bytes listed, 1..256
  std::string placement = "D";
  int pipeline_degree = 0;
  int tensor_degree = 0;
};

// Runs --predict on this rank (every rank of the launcher's world calls it). Returns the exit
// code: 0, 2 for bad input (an option, the input file, the output's folder, the checkpoint,
// the placement: the message names the option), 1 for a runtime failure. Never throws.
int run_prediction(const PredictOptions& options);

}  // namespace plexus::engine
