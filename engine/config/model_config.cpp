// model_config.cpp - see model_config.h.
#include "engine/config/model_config.h"

namespace plexus::engine {

GptConfig model_config(const ModelOptions& model) {
  GptConfig c;
  c.vocab_size = 256;
  c.max_seq_len = model.seq_len;
  c.n_layer = model.n_layer;
  c.n_head = model.n_head;
  c.n_embd = model.n_embd;
  return c;
}

}  // namespace plexus::engine
