/*
 * plugin.h - the Plexus engine's plugin ABI (version 1).
 *
 * Every parallelism axis (D, P, T) and every "+name" of a placement string is a shared library
 * named libplexus_plugin_<name>.so, found by the engine on PLEXUS_PLUGIN_PATH (a colon-separated
 * list of folders), then in the build's and the install's plugin folder (lib/plexus). It exports
 * exactly one symbol:
 *
 *     const plx_plugin_t* plx_plugin_v1(void);
 *
 * Call order (see docs/plugin-abi.md):
 *   1. dlopen, dlsym("plx_plugin_v1"), call it once; the engine checks abi_version and
 *      struct_size and refuses a plugin built for a newer ABI than it knows.
 *   2. create(context, &state, err, err_len) once per rank, after the model is built and before
 *      the first step. The context (and everything it points to) stays valid until destroy.
 *   3. Each training step: forward, backward, then after_backward(state, grads) for every loaded
 *      plugin in placement order, then the optimizer step.
 *   4. destroy(state) once, before the communicators are destroyed.
 * A hook returns PLX_SUCCESS or a plx_result_t error and then writes a NUL-terminated message of
 * at most err_len bytes into err, naming the plugin, the rank and the cause; the engine prints it
 * and stops training with a non-zero exit. Hooks are called from the training thread only.
 * Plugins include only plexus/plexus.h and this header; they never include each other.
 *
 * ABI rule: structs start with struct_size and abi_version and grow only by appending fields;
 * "fields above: v1" marks what version 1 has. Initialise with the PLX_..._INIT macros.
 */
#ifndef PLEXUS_PLUGIN_H
#define PLEXUS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "plexus/plexus.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLX_PLUGIN_ABI_VERSION 1u

/* What the engine hands a plugin when it is created. */
typedef struct plx_plugin_context_t {
  size_t struct_size;
  uint32_t abi_version;
  /* The communicator of every rank of the job. */
  plx_comm_t world;
  /* The communicator of the ranks along this plugin's axis that share this rank's other
   * coordinates (for D: the data-parallel group; for a "+plugin": the data-parallel group too).
   * Equal to world when the job has only this axis. */
  plx_comm_t group;
  /* Degree of the plugin's axis and this rank's coordinate along it (0..degree-1). */
  int degree;
  int coordinate;
  /* The plugin's arguments from the placement string, e.g. "+offload(optimizer,host)" gives
   * {"optimizer", "host"}; num_args is 0 for none. */
  const char* const* args;
  size_t num_args;
  /* Gradient bucket size in bytes (from --bucket-bytes / PLEXUS_BUCKET_BYTES). */
  size_t bucket_bytes;
  /* fields above: v1 */
} plx_plugin_context_t;

#define PLX_PLUGIN_CONTEXT_INIT \
  { sizeof(plx_plugin_context_t), PLX_PLUGIN_ABI_VERSION, NULL, NULL, 1, 0, NULL, 0, 0 }

/* A view of the model's gradients: one flat float32 buffer (parameters have the same layout),
 * so a bucket or a shard is an offset and a count of elements. */
typedef struct plx_grad_view_t {
  size_t struct_size;
  uint32_t abi_version;
  float* grads;        /* count elements, owned by the engine */
  size_t count;        /* elements, not bytes */
  /* fields above: v1 */
} plx_grad_view_t;

#define PLX_GRAD_VIEW_INIT { sizeof(plx_grad_view_t), PLX_PLUGIN_ABI_VERSION, NULL, 0 }

typedef struct plx_plugin_t {
  size_t struct_size;
  uint32_t abi_version;
  const char* name;        /* as written in a placement string: "D", "P", "zero1", ... */
  const char* version;     /* the plugin's own version, e.g. "0.1.0" */
  const char* description; /* one line for --explain and for "available plugins" lists */

  /* Creates the plugin's per-rank state. Returns PLX_ERROR_INVALID_ARGUMENT for bad args (the
   * message names the argument), other codes as plexus.h. May be NULL if no state is needed. */
  plx_result_t (*create)(const plx_plugin_context_t* context, void** state, char* err,
                         size_t err_len);
  /* Called after every backward pass with the whole gradient; may modify it in place (the D
   * plugin averages it over its group). May be NULL. */
  plx_result_t (*after_backward)(void* state, const plx_grad_view_t* grads, char* err,
                                 size_t err_len);
  /* Frees the state. May be NULL. */
  void (*destroy)(void* state);
  /* fields above: v1 */
} plx_plugin_t;

/* The one symbol a plugin exports. */
typedef const plx_plugin_t* (*plx_plugin_entry_fn)(void);
#define PLX_PLUGIN_ENTRY_SYMBOL "plx_plugin_v1"

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_PLUGIN_H */
