// model_config.h - the GPT that plexus-train's model options describe: byte-level (a vocabulary
// of 256), context --seq-len, --n-layer blocks of --n-head heads and --n-embd width.
#pragma once

#include "engine/config/options.h"
#include "engine/model/gpt.h"

namespace plexus::engine {

// Not validated: GptConfig::validate() says what is wrong with it.
GptConfig model_config(const ModelOptions& model);

}  // namespace plexus::engine
