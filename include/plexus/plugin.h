/*
 * plugin.h - the Plexus engine's plugin ABI (version 2; version 1 plugins still load).
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
 *      struct_size and refuses a plugin built for a newer ABI than it knows. The symbol keeps
 *      its name across ABI versions: abi_version and struct_size tell the versions apart, and
 *      the hooks a smaller (older) struct lacks count as NULL.
 *   2. create(context, &state, err, err_len) once per rank, after the model is built and before
 *      the first step, on every rank at the same point (a plugin may make collective calls on
 *      its groups, e.g. plx_comm_split). The context (and everything it points to) stays valid
 *      until destroy.
 *   3. Each training step: forward and backward (driven by the one plugin with a run_pipeline
 *      hook, if any, else by the engine; layers call tensor_allreduce when a T plugin is
 *      loaded), then after_backward(state, grads) for every loaded plugin in placement order,
 *      then the optimizer step.
 *   4. destroy(state) once, before the communicators are destroyed.
 * A hook returns PLX_SUCCESS or a plx_result_t error and then writes a NUL-terminated message of
 * at most err_len bytes into err, naming the plugin, the rank and the cause; the engine prints it
 * and stops training with a non-zero exit. Hooks are called from the training thread only.
 * Plugins include only plexus/plexus.h and this header; they never include each other.
 *
 * ABI rule: structs start with struct_size and abi_version and grow only by appending fields;
 * "fields above: vN" marks what version N has. Initialise with the PLX_..._INIT macros.
 */
#ifndef PLEXUS_PLUGIN_H
#define PLEXUS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "plexus/plexus.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLX_PLUGIN_ABI_VERSION 2u

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
  /* The three axis groups of this rank, each ordered by the axis coordinate: the data group
   * (ranks sharing this rank's p and t), the pipeline group (sharing d and t) and the tensor
   * group (sharing d and p). An axis of degree 1 gives a group of this rank alone. */
  plx_comm_t data_group;
  plx_comm_t pipeline_group;
  plx_comm_t tensor_group;
  /* Pipeline options (--pipeline-schedule, --microbatches, --virtual-stages): a
   * plx_pipeline_schedule_t, the microbatches per step M >= 1, and the model chunks per
   * pipeline rank v >= 1 (v > 1 only with PLX_PIPELINE_INTERLEAVED). */
  int pipeline_schedule;
  int num_microbatches;
  int virtual_stages;
  /* fields above: v2 */
} plx_plugin_context_t;

#define PLX_PLUGIN_CONTEXT_INIT                                                              \
  { sizeof(plx_plugin_context_t), PLX_PLUGIN_ABI_VERSION, NULL, NULL, 1, 0, NULL, 0, 0, NULL, \
    NULL, NULL, PLX_PIPELINE_1F1B, 1, 1 }

/* Size of a version 1 context: a plugin reads a v2 field only when struct_size covers it. */
#define PLX_PLUGIN_CONTEXT_V1_SIZE offsetof(plx_plugin_context_t, data_group)

/* Pipeline schedules (context.pipeline_schedule), as in Narayanan et al., "Efficient
 * Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC 2021. P stages,
 * p this rank's stage, M microbatches, v chunks per stage:
 *   PLX_PIPELINE_SIMPLE       GPipe (Huang et al. 2019): every microbatch's forward, then every
 *                             backward; M microbatches of activations held; bubble (P-1)/M.
 *   PLX_PIPELINE_1F1B         PipeDream-Flush: stage p runs min(P-p-1, M) warm-up forwards,
 *                             then alternates one forward and one backward, then drains the
 *                             backwards; at most P-p microbatches held; bubble (P-1)/M.
 *   PLX_PIPELINE_INTERLEAVED  Megatron-LM's interleaved 1F1B: v model chunks per stage (chunk c
 *                             of stage p is global chunk c*P + p), M % P == 0; bubble
 *                             (P-1)/(v*M) for v times the point-to-point messages. */
typedef enum plx_pipeline_schedule_t {
  PLX_PIPELINE_SIMPLE = 0,
  PLX_PIPELINE_1F1B = 1,
  PLX_PIPELINE_INTERLEAVED = 2
} plx_pipeline_schedule_t;

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

/*
 * What the engine hands a pipeline plugin's run_pipeline for one training step: the rank's
 * model chunks as forward and backward callbacks over microbatches. P is the pipeline degree
 * and p this rank's pipeline coordinate; chunk c (0..num_chunks-1) of this rank is global
 * chunk c*P + p of the P*num_chunks chunks the model is cut into, so global chunk k+1 follows
 * global chunk k. Microbatches are 0..num_microbatches-1.
 *
 * forward(engine, chunk, microbatch, input, output, err, err_len): runs the chunk's forward on
 * the microbatch. input holds activation_count floats from the previous global chunk, or is
 * NULL for global chunk 0 (it reads the microbatch's tokens itself); output receives
 * activation_count floats for the next global chunk, or is NULL for the last global chunk (it
 * computes the microbatch's loss and keeps it). The engine keeps whatever its backward needs:
 * input and output belong to the plugin and are reused after the call.
 * backward(engine, chunk, microbatch, grad_output, grad_input, err, err_len): runs the chunk's
 * backward on a microbatch whose forward ran before (at most once per forward), accumulating
 * parameter gradients. grad_output holds the loss gradient w.r.t. the chunk's output, or is NULL
 * for the last global chunk (it starts from its own loss); grad_input receives the gradient
 * w.r.t. the chunk's input, or is NULL for global chunk 0.
 * In one step every (chunk, microbatch) runs forward exactly once and then backward exactly
 * once, in the schedule's order. Both return PLX_SUCCESS, or an error code with a NUL-terminated
 * message of at most err_len bytes in err; run_pipeline then returns that code with the message.
 * Both are called on the thread that called run_pipeline, never concurrently. The struct and
 * engine belong to the caller and are read during run_pipeline only.
 */
typedef struct plx_stage_ops_t {
  size_t struct_size;
  uint32_t abi_version;
  void* engine;              /* passed back to forward and backward, opaque to the plugin */
  int num_microbatches;      /* M >= 1 */
  int num_chunks;            /* model chunks (virtual stages) on this rank, v >= 1 */
  size_t activation_count;   /* floats (elements) in one microbatch's boundary activation, B*T*C */
  plx_result_t (*forward)(void* engine, int chunk, int microbatch, const float* input,
                          float* output, char* err, size_t err_len);
  plx_result_t (*backward)(void* engine, int chunk, int microbatch, const float* grad_output,
                           float* grad_input, char* err, size_t err_len);
  /* fields above: v2 */
} plx_stage_ops_t;

#define PLX_STAGE_OPS_INIT \
  { sizeof(plx_stage_ops_t), PLX_PLUGIN_ABI_VERSION, NULL, 1, 1, 0, NULL, NULL }

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

  /* Pipeline plugins: runs one training step's forward and backward passes of every
   * microbatch over this rank's chunks (ops), exchanging activations and their gradients with
   * the neighbouring pipeline ranks, in the order of context.pipeline_schedule. Called instead
   * of the engine's own microbatch loop, once per step on every rank of the pipeline group;
   * when it returns PLX_SUCCESS every forward and backward of the step has run on this rank.
   * Only one loaded plugin may provide it. Returns PLX_ERROR_INVALID_ARGUMENT for ops that do
   * not fit the schedule (e.g. M % P != 0 for interleaved, the message names both values), the
   * code of a failing forward or backward with its message, or a communication error
   * (PLX_ERROR_REMOTE when a neighbour failed). After a failure the engine aborts its world
   * communicator, so that stages blocked on this one fail at once rather than at
   * PLEXUS_TIMEOUT_MS; the plugin refuses later steps (PLX_ERROR_INVALID_USAGE). May be NULL. */
  plx_result_t (*run_pipeline)(void* state, const plx_stage_ops_t* ops, char* err,
                               size_t err_len);
  /* Tensor plugins: in-place allreduce of count floats (elements) at data over the tensor
   * group, called inside layers (Megatron-LM's f and g operators); op is PLX_SUM or PLX_MAX.
   * Every rank of the tensor group calls it in the same order with the same count and op. The
   * result is bit-identical on every rank. Returns PLX_ERROR_INVALID_ARGUMENT for another op or
   * a NULL data with count > 0, otherwise as plx_allreduce. May be NULL. */
  plx_result_t (*tensor_allreduce)(void* state, float* data, size_t count, plx_red_op_t op,
                                   char* err, size_t err_len);
  /* fields above: v2 */
} plx_plugin_t;

/* Size of a version 1 plugin table: hooks past it are absent (NULL) in a v1 plugin. */
#define PLX_PLUGIN_V1_SIZE offsetof(plx_plugin_t, run_pipeline)

/* The one symbol a plugin exports. */
typedef const plx_plugin_t* (*plx_plugin_entry_fn)(void);
#define PLX_PLUGIN_ENTRY_SYMBOL "plx_plugin_v1"

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_PLUGIN_H */
