// config_table.h - the one table of PLEXUS_* environment variables.
//
// Every variable any part of Plexus reads (libplexus, its tools, the engine, the Python package,
// the tests) is declared once in config_table.cpp with its full name, type, default and help, so
// `grep PLEXUS_TIMEOUT_MS` finds its definition, print_config_table() documents all of them and
// a PLEXUS_* name in the environment that the table lacks is a misspelling
// (unknown_settings.h). C++ code reads them through config_read.h. Launcher variables that
// Plexus merely honours (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, ...) belong to their launchers
// and are listed in topology/launcher_env.cpp instead.
//
// This library sits below topology/, comm/ and the engine, which all read it.
#pragma once

#include <cstdio>
#include <span>
#include <string_view>

namespace plexus {

enum class ConfigType {
  Integer,   // decimal integer
  Bytes,     // byte count: decimal, optionally with a K, M or G suffix (powers of 1024)
  String,    // free text
  LogLevel,  // WARN, INFO or TRACE
};

struct ConfigVariable {
  std::string_view name;
  ConfigType type;
  std::string_view default_value;  // "" = no default (unset means "not given")
  std::string_view help;
  std::string_view read_by = "";   // "" = libplexus; else who reads it ("plexus-topo", "tests/e2e")
};

// All variables, in the order print_config_table() shows them.
std::span<const ConfigVariable> config_variables();

// The table entry for `name`, or nullptr.
const ConfigVariable* find_config_variable(std::string_view name);

// Prints every variable, one block each:
//   NAME (TYPE, default: DEFAULT)               (read by libplexus)
//   NAME (TYPE, default: DEFAULT; read by WHO)  (read elsewhere)
//       HELP
void print_config_table(FILE* out);

}  // namespace plexus
