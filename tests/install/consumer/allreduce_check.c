/* allreduce_check.c - a program outside the Plexus tree, built against an installed Plexus
 * (find_package or pkg-config; tests/install/install_test.sh): every rank allreduces
 * (rank + 1) * i for i in 0..count-1, as float32 and int64, and checks each element against
 * i * n(n+1)/2. Prints one line per rank; exits 1 on the first wrong element or failed call. */
#include <plexus/plexus.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 1000

static int failed(const char* what, plx_result_t result, int rank) {
  fprintf(stderr, "rank %d: %s: %s: %s\n", rank, what, plx_get_error_string(result),
          plx_get_last_error(NULL));
  return 1;
}

int main(void) {
  plx_comm_t comm = NULL;
  plx_result_t result = plx_comm_init_from_env(&comm);
  if (result != PLX_SUCCESS) return failed("plx_comm_init_from_env", result, -1);
  int rank = 0, size = 0;
  plx_comm_rank(comm, &rank);
  plx_comm_size(comm, &size);

  static float fsend[COUNT], frecv[COUNT];
  static int64_t isend[COUNT], irecv[COUNT];
  for (int i = 0; i < COUNT; ++i) {
    fsend[i] = (float)((rank + 1) * i);
    isend[i] = (int64_t)(rank + 1) * i;
  }
  result = plx_allreduce(fsend, frecv, COUNT, PLX_FLOAT32, PLX_SUM, comm, NULL);
  if (result != PLX_SUCCESS) return failed("plx_allreduce float32", result, rank);
  result = plx_allreduce(isend, irecv, COUNT, PLX_INT64, PLX_SUM, comm, NULL);
  if (result != PLX_SUCCESS) return failed("plx_allreduce int64", result, rank);
  const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;
  for (int i = 0; i < COUNT; ++i) {
    if (frecv[i] != (float)(ranks_sum * i) || irecv[i] != ranks_sum * i) {
      fprintf(stderr, "rank %d: element %d: got %g and %lld, expected %lld\n", rank, i,
              (double)frecv[i], (long long)irecv[i], (long long)(ranks_sum * i));
      return 1;
    }
  }
  result = plx_comm_destroy(comm);
  if (result != PLX_SUCCESS) return failed("plx_comm_destroy", result, rank);
  printf("rank %d of %d: allreduce of %d float32 and int64 elements correct\n", rank, size, COUNT);
  return 0;
}
