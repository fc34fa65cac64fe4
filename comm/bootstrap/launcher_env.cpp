// launcher_env.cpp - the bootstrap's view of the launcher environment (see launcher_env.h).
#include "comm/bootstrap/launcher_env.h"

#include <string>
#include <utility>

#include "comm/base/error.h"

namespace plexus::bootstrap {

plx_result_t read_launcher_env(LauncherEnv* out, bool with_local) {
  std::string error;
  const plx_result_t r = topology::read_launcher_env(out, &error, with_local);
  return r == PLX_SUCCESS ? r : set_error(r, std::move(error));
}

}  // namespace plexus::bootstrap
