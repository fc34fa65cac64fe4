/*
 * c_abi_c99_check.c - include/plexus/plexus.h must be a valid C99 header.
 *
 * Built with -std=c99 -pedantic-errors (tests/comm/CMakeLists.txt) and linked against libplexus,
 * then run: it exercises the calls that need no peers and returns 0 when each behaves as the
 * header documents.
 */
#include <stdio.h>
#include <string.h>

#include "plexus/plexus.h"

static int failures = 0;

static void expect(int condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "c_abi_c99_check: %s\n", what);
    ++failures;
  }
}

int main(void) {
  int version = -1;
  plx_comm_t comm = NULL;
  plx_unique_id_t id;
  plx_result_t async_error = PLX_SUCCESS;
  const char* name = NULL;
  plx_datatype_t type;
  size_t bytes = 0;

  memset(&id, 0, sizeof(id));
  expect(sizeof(id.internal) == PLX_UNIQUE_ID_BYTES, "unique id size");
  expect(plx_get_version(&version) == PLX_SUCCESS && version == PLX_VERSION, "plx_get_version");
  expect(strcmp(plx_get_last_error(NULL), "") == 0, "no error after success");
  expect(plx_get_version(NULL) == PLX_ERROR_INVALID_ARGUMENT, "plx_get_version(NULL)");
  expect(strcmp(plx_get_last_error(NULL), "plx_get_version: version is NULL") == 0,
         "plx_get_version(NULL) message");
  expect(plx_get_log_level(&version) == PLX_SUCCESS && version >= 0 && version <= 2,
         "plx_get_log_level");
  expect(plx_get_log_level(NULL) == PLX_ERROR_INVALID_ARGUMENT, "plx_get_log_level(NULL)");
  expect(strncmp(plx_get_error_string(PLX_ERROR_TIMEOUT), "PLX_ERROR_TIMEOUT", 17) == 0,
         "error string");
  expect(plx_comm_rank(comm, &version) == PLX_ERROR_INVALID_ARGUMENT, "rank of NULL comm");
  expect(plx_comm_transport_name(comm, &name) == PLX_ERROR_INVALID_ARGUMENT && name == NULL,
         "transport name of NULL comm");
  expect(plx_comm_get_async_error(comm, &async_error) == PLX_ERROR_INVALID_ARGUMENT,
         "async error of NULL comm");
  expect(plx_comm_init_rank(&comm, 0, id, 0) == PLX_ERROR_INVALID_ARGUMENT && comm == NULL,
         "init with nranks 0");
  expect(plx_allreduce(NULL, NULL, 0, PLX_FLOAT32, PLX_SUM, NULL, NULL) ==
             PLX_ERROR_INVALID_ARGUMENT,
         "allreduce on NULL comm");
  expect(plx_broadcast(NULL, NULL, 0, PLX_INT8, 0, NULL, NULL) == PLX_ERROR_INVALID_ARGUMENT,
         "broadcast on NULL comm");
  expect(plx_barrier(NULL) == PLX_ERROR_INVALID_ARGUMENT, "barrier on NULL comm");
  expect(plx_waitall(0, NULL) == PLX_SUCCESS, "plx_waitall of no requests");
  expect(plx_waitall(1, NULL) == PLX_ERROR_INVALID_ARGUMENT, "plx_waitall(1, NULL)");
  expect(strncmp(plx_get_last_error(NULL), "plx_waitall: ", 13) == 0 &&
             strstr(plx_get_last_error(NULL), "requests") != NULL,
         "plx_waitall(1, NULL) message names requests");
  {
    void* memory = NULL;
    void* handle = NULL;
    expect(plx_mem_alloc(&memory, 100) == PLX_SUCCESS && memory != NULL, "plx_mem_alloc");
    expect(memory != NULL && ((unsigned char*)memory)[99] == 0, "plx_mem_alloc zeroes");
    expect(plx_comm_register(NULL, memory, 100, &handle) == PLX_ERROR_INVALID_ARGUMENT &&
               handle == NULL,
           "plx_comm_register on NULL comm");
    expect(plx_comm_deregister(NULL, handle) == PLX_ERROR_INVALID_ARGUMENT,
           "plx_comm_deregister on NULL comm");
    expect(plx_mem_free(memory) == PLX_SUCCESS, "plx_mem_free");
    expect(plx_mem_free(memory) == PLX_ERROR_INVALID_ARGUMENT, "plx_mem_free twice");
  }
  expect(plx_comm_destroy(NULL) == PLX_SUCCESS, "destroy NULL");
  expect(plx_comm_abort(NULL) == PLX_SUCCESS, "abort NULL");
  for (type = PLX_INT8; type < PLX_NUM_DATATYPES; type = (plx_datatype_t)(type + 1)) {
    bytes += plx_datatype_size(type);
  }
  expect(bytes == 1 + 1 + 4 + 4 + 8 + 8 + 2 + 2 + 4 + 8, "datatype sizes");
  (void)plx_get_unique_id;
  (void)plx_comm_init_from_env;
  (void)plx_comm_size;
  (void)plx_comm_local_rank;
  (void)plx_comm_local_size;
  return failures == 0 ? 0 : 1;
}
