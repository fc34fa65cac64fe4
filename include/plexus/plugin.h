/*
 * plugin.h - the Plexus engine's plugin ABI (version 3; version 1 and 2 plugins still load).
 *
 * Every parallelism axis (D, P, T) and every "+name" of a placement string is a shared library
 * named libplexus_plugin_<name>.so, found by the engine on PLEXUS_PLUGIN_PATH (a colon-separated
 * list of folders), then in plexus/plugins beside the libplexus.so the process loaded (the build
 * tree's build/lib, an install's <libdir>; docs/install.md). It exports exactly one symbol, named
 * for the ABI version it serves (PLX_PLUGIN_ENTRY, from PLX_PLUGIN_ABI_NUMBER):
 *
 *     const plx_plugin_t* plx_plugin_entry_v3(void);
 *
 * Call order (see docs/plugin-abi.md):
 *   1. dlopen, dlsym("plx_plugin_entry_v3"), call it once; the engine checks that the table's
 *      abi_version is the symbol's and that struct_size covers its fields. A plugin built for
 *      another ABI exports another plx_plugin_entry_v<N> and is refused, the message naming the
 *      file and both versions. Plugins built before the symbol carried the version (ABI 1 to 3)
 *      export plx_plugin_v1 and still load when their table's abi_version is 1..3: the hooks a
 *      smaller (older) struct lacks count as NULL.
 *   2. create(context, &state, err, err_len) once per rank, after the communicator's axis groups
 *      are split and before the memory plan and the model are built (so plan_memory can shape
 *      the model), on every rank at the same point (a plugin may make collective calls on its
 *      groups, e.g. plx_comm_split). The context (and everything it points to) stays valid
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

/* The ABI version as a bare number (it names the entry symbol), and as the unsigned value the
 * structs' abi_version fields hold. */
#define PLX_PLUGIN_ABI_NUMBER 3
#define PLX_PLUGIN_PASTE_(a, b) a##b
#define PLX_PLUGIN_CAT_(a, b) PLX_PLUGIN_PASTE_(a, b)
#define PLX_PLUGIN_QUOTE_(x) #x
#define PLX_PLUGIN_STRING_(x) PLX_PLUGIN_QUOTE_(x)
#define PLX_PLUGIN_ABI_VERSION PLX_PLUGIN_CAT_(PLX_PLUGIN_ABI_NUMBER, u)

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
  /* Gradient bucket size in bytes (plexus-train --bucket-bytes). */
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
typedef enum plx_pipeline_schedule_t PLX_ENUM_INT {
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

/* What a memory plugin asks of the engine (plan_memory, ABI v3): which of the engine's
 * memory-saving mechanisms to use. The engine starts from PLX_MEMORY_PLAN_INIT (everything off)
 * and hands the plan to every loaded plugin's plan_memory in placement order; each sets only the
 * fields of its own feature. Two plugins setting the same field is an error naming both.
 *
 * ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
 * Models", SC 2020), over the data group of each (p, t) coordinate. Each parameter unit (a
 * block, wte, wpe, ln_f: see docs/memory.md) is split into |D| equal parts, padded at the end:
 *   stage 1  optimizer state (AdamW m and v) only for this rank's part; after backward the
 *            gradient is averaged by reduce_scatter, this rank steps its part, all_gather
 *            rebuilds the parameters;
 *   stage 2  as 1, and the gradient is kept only as this rank's part: each unit's gradient is
 *            reduce-scattered as soon as its backward for a microbatch ends, and freed;
 *   stage 3  as 2, and the parameters too: a unit is gathered (all_gather) just before its
 *            forward or backward and freed after, with prefetch_units units gathered ahead
 *            (non-blocking), except units of at most param_persistence_threshold elements,
 *            which stay gathered (DeepSpeed's stage3_param_persistence_threshold).
 * Activation checkpointing (Chen et al., "Training Deep Nets with Sublinear Memory Cost", 2016;
 * Megatron-LM's full recomputation): checkpoint_every = N > 0 keeps only the input of every
 * N-th block (blocks 0, N, 2N, ... of each model chunk) and recomputes each group of N blocks'
 * forward in its backward.
 * Activation offloading (SageMaker model parallel): the checkpointed inputs move to the host
 * pool after forward and come back before the backward that needs them, the next
 * activation_loading_horizon >= 1 groups ahead; needs checkpoint_every > 0.
 * Optimizer offloading (ZeRO-Offload, Ren et al. 2021): the optimizer state lives in the host
 * pool and the optimizer step runs there on a host copy of the gradient.
 * On the CPU backend "device" and "host" are two separately accounted pools of host memory. */
typedef struct plx_memory_plan_t {
  size_t struct_size;
  uint32_t abi_version;
  int zero_stage;                     /* 0 (off), 1, 2 or 3 */
  size_t param_persistence_threshold; /* stage 3: elements; units this small stay gathered */
  int prefetch_units;                 /* stage 3: units gathered ahead of use, >= 0 */
  int checkpoint_every;               /* 0 (off) or N >= 1 blocks per recomputed group */
  int offload_activations;            /* 0 or 1 */
  int activation_loading_horizon;     /* >= 1: groups brought back ahead of their backward */
  int offload_optimizer;              /* 0 or 1 */
  /* fields above: v3 */
} plx_memory_plan_t;

#define PLX_MEMORY_PLAN_INIT \
  { sizeof(plx_memory_plan_t), PLX_PLUGIN_ABI_VERSION, 0, 0, 0, 0, 0, 1, 0 }

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

  /* Memory plugins (+zero1/2/3, +ckpt, +offload(...)): called once on every rank after create,
   * in placement order, with the plan so far; sets the fields of the plugin's own feature (see
   * plx_memory_plan_t) and leaves the others. Returns PLX_ERROR_INVALID_ARGUMENT when the
   * plugin's arguments are bad (the message names the argument, its value and the valid range).
   * May be NULL. */
  plx_result_t (*plan_memory)(void* state, plx_memory_plan_t* plan, char* err, size_t err_len);
  /* Sharding plugins (zero_stage > 0): the data group's collectives for sharded state, called by
   * the engine on every rank of the data group in the same order with the same shard_count.
   * reduce_scatter: full holds shard_count * degree floats (elements), this rank's part is
   * elements [coordinate * shard_count, (coordinate + 1) * shard_count); shard receives the
   * average over the group of that part (plx_reduce_scatter with PLX_AVG). full and shard must
   * not overlap. all_gather: shard (shard_count floats) is this rank's part; full receives every
   * rank's part in coordinate order (shard_count * degree floats). If request is NULL it
   * returns when done; otherwise it starts a non-blocking plx_iallgather, stores its request in
   * *request, and the engine completes it with plx_wait before reading full (prefetch). Both
   * return PLX_ERROR_INVALID_ARGUMENT for NULL buffers with shard_count > 0, otherwise as the
   * collective. With a sharding plugin loaded the engine calls no plugin's after_backward: no
   * full gradient exists to hand over. May be NULL (then zero_stage must stay 0). */
  plx_result_t (*reduce_scatter)(void* state, const float* full, float* shard,
                                 size_t shard_count, char* err, size_t err_len);
  plx_result_t (*all_gather)(void* state, const float* shard, float* full, size_t shard_count,
                             plx_request_t* request, char* err, size_t err_len);
  /* fields above: v3 */
} plx_plugin_t;

/* Size of a version 1 (2) plugin table: hooks past it are absent (NULL) in such a plugin. */
#define PLX_PLUGIN_V1_SIZE offsetof(plx_plugin_t, run_pipeline)
#define PLX_PLUGIN_V2_SIZE offsetof(plx_plugin_t, plan_memory)

/* The one symbol a plugin exports, named for the ABI version it serves: a plugin defines
 *     PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) { return &table; }
 * which is plx_plugin_entry_v3 with this header. PLX_PLUGIN_ENTRY_SYMBOL is its name as a
 * string, for dlsym. PLX_PLUGIN_LEGACY_ENTRY_SYMBOL is the name every plugin exported before the
 * symbol carried the version (ABI 1 to 3; the table's abi_version tells them apart). */
typedef const plx_plugin_t* (*plx_plugin_entry_fn)(void);
#define PLX_PLUGIN_ENTRY PLX_PLUGIN_CAT_(plx_plugin_entry_v, PLX_PLUGIN_ABI_NUMBER)
#define PLX_PLUGIN_ENTRY_SYMBOL PLX_PLUGIN_STRING_(PLX_PLUGIN_ENTRY)
#define PLX_PLUGIN_ENTRY_PREFIX "plx_plugin_entry_v"
#define PLX_PLUGIN_LEGACY_ENTRY_SYMBOL "plx_plugin_v1"
#ifdef __cplusplus
#define PLX_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define PLX_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_PLUGIN_H */
