/* plugin_abi_fixture.c - test plugins for the loader, written in C99 against plugin.h.
 *
 * Built three times (tests/engine/CMakeLists.txt): FIXTURE_ABI 1 gives libplexus_plugin_old.so,
 * a plugin built for ABI version 1 (its table ends after destroy, as a v1 header made it);
 * FIXTURE_ABI 2 gives libplexus_plugin_v2.so, one built for ABI version 2 (its table ends after
 * tensor_allreduce); both export plx_plugin_v1, as plugins did before the entry symbol carried
 * the ABI version. FIXTURE_ABI 99 gives libplexus_plugin_future.so, one built for an ABI this
 * engine does not know: it exports plx_plugin_entry_v99, as a future plugin.h would name it.
 * FIXTURE_ABI 103 and 104 give broken plugins of this ABI (plx_plugin_entry_v3): "short", whose
 * table says version 3 but has version 1's size, and "noname", whose table has no name.
 * Compiling this file also checks that plugin.h is valid C. */
#include <stddef.h>

#include "plexus/plugin.h"

#ifndef FIXTURE_ABI
#error "define FIXTURE_ABI"
#endif

/* The version 1 layout of plx_plugin_t. */
typedef struct fixture_plugin_v1_t {
  size_t struct_size;
  uint32_t abi_version;
  const char* name;
  const char* version;
  const char* description;
  plx_result_t (*create)(const plx_plugin_context_t*, void**, char*, size_t);
  plx_result_t (*after_backward)(void*, const plx_grad_view_t*, char*, size_t);
  void (*destroy)(void*);
} fixture_plugin_v1_t;

/* The version 2 layout: version 1's, then the pipeline and tensor hooks. */
typedef struct fixture_plugin_v2_t {
  fixture_plugin_v1_t v1;
  plx_result_t (*run_pipeline)(void*, const plx_stage_ops_t*, char*, size_t);
  plx_result_t (*tensor_allreduce)(void*, float*, size_t, plx_red_op_t, char*, size_t);
} fixture_plugin_v2_t;

#if FIXTURE_ABI == 2
static plx_result_t fixture_tensor_allreduce(void* state, float* data, size_t count,
                                             plx_red_op_t op, char* err, size_t err_len) {
  (void)state, (void)data, (void)count, (void)op, (void)err, (void)err_len;
  return PLX_SUCCESS;
}
#endif

#if FIXTURE_ABI == 1
static const fixture_plugin_v1_t kPlugin = {sizeof(fixture_plugin_v1_t), 1u, "old", "1.0.0",
                                            "a plugin built for ABI 1", NULL, NULL, NULL};
#elif FIXTURE_ABI == 2
static const fixture_plugin_v2_t kPlugin = {
    {sizeof(fixture_plugin_v2_t), 2u, "v2", "2.0.0", "a plugin built for ABI 2", NULL, NULL, NULL},
    NULL,
    fixture_tensor_allreduce};
#elif FIXTURE_ABI == 103
static const fixture_plugin_v1_t kPlugin = {sizeof(fixture_plugin_v1_t), 3u, "short", "3.0.0",
                                            "a version 3 table of version 1's size", NULL, NULL,
                                            NULL};
#elif FIXTURE_ABI == 104
static const plx_plugin_t kPlugin = {.struct_size = sizeof(plx_plugin_t), .abi_version = 3u,
                                     .name = NULL, .version = "3.0.0",
                                     .description = "a nameless table"};
#else
static const fixture_plugin_v1_t kPlugin = {sizeof(fixture_plugin_v1_t), FIXTURE_ABI, "future",
                                            "9.0.0", "a plugin built for a future ABI", NULL,
                                            NULL, NULL};
#endif

#if FIXTURE_ABI <= 2
PLX_PLUGIN_EXPORT const plx_plugin_t* plx_plugin_v1(void) {
#elif FIXTURE_ABI > 100
PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) {
#else
PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_CAT_(plx_plugin_entry_v, FIXTURE_ABI)(void) {
#endif
  return (const plx_plugin_t*)(const void*)&kPlugin;
}
