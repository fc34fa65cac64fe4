#!/usr/bin/env bash
# shellcheck disable=SC2317  # the stages are called through "$kind" and timed
# test-sanitizers.sh - the tests that run under sanitizers (tests/sanitizers.cmake):
#   address  build-asan/ (-DPLEXUS_SANITIZE=address: ASan + LeakSanitizer + UBSan): the comm and
#            engine unit tests, and a subset of the multi-process comm tests over tcp
#   thread   build-tsan/ (-DPLEXUS_SANITIZE=thread: TSan): the threaded tests, i.e. the algorithm
#            tests over the in-process thread transport (tests/comm/*_thread_test.cpp) and the
#            progress-thread ones (nonblocking requests, completion steps), and the CPU layers'
#            thread pool (engine/device/cpu_threads.h)
# Only the targets these tests need are built (listed below), so a cold build fits in CI: the
# build is configured with PLEXUS_TEST_PER_FILE=ON, one test executable per *_test.cpp (named
# after it) rather than one per test folder, so that only the chosen test files are compiled.
# Every report fails the run: ASan and UBSan abort, TSan exits 66. Suppressions (third-party
# noise only, each entry says why) are in scripts/sanitizers/.
#
# Usage: scripts/test-sanitizers.sh [address|thread]...   (default: both, address first)
# Environment: JOBS (default nproc), SANITIZER_BUILD_ROOT (default: the repository root; the
# build folders are made there), CMAKE_ARGS (added to both configurations).
# Prints each stage's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE=$PWD
source scripts/ccache.sh
SUPPRESSIONS=$SOURCE/scripts/sanitizers
# UCX's libucm patches mmap/madvise (its "bistro" hooks) to see memory being unmapped; glibc's
# thread exit then calls into libucm, which takes a lock after the sanitizer runtime has torn the
# thread down: SIGSEGV in __tsan::MutexPreReadLock under ucm_madvise. Plexus's UCX transport does
# not need the hooks (it registers memory itself), so the sanitizer runs go without them.
export UCX_MEM_MMAP_HOOK_MODE=none
ROOT=${SANITIZER_BUILD_ROOT:-$SOURCE}
JOBS=${JOBS:-$(nproc)}

# --- What each build runs. -------------------------------------------------------------------
# "test:filter" runs only the gtest filter's cases. The threaded algorithm tests run world sizes
# 2, 3 and 5 (a power of two, an odd size, a prime), two host layouts and their unparameterised
# cases, without the large counts: the code paths of the whole matrix at a fraction of its time
# (the whole of it takes 15 minutes under ASan on 2 cores; the shm reduce_scatter over the
# uneven layout alone, a minute under TSan, is left out too).
THREAD_FILTER="*/2ranks:*/3ranks:*/5ranks:*_2ranks:*_3ranks:*_5ranks:*_2x2:*_uneven_3p2"
THREAD_FILTER+=":*Failure.*:Alltoallv.*:HierarchicalNoLayout.*:HierarchicalEager.*:HierarchicalHalving.Eager*"
THREAD_FILTER+=":HierarchicalShmBits.*:-*LargeCount*:*HierarchicalShm.*reduce_scatter_uneven_3p2"
THREAD_TESTS=()
for t in algorithms_thread_test allreduce_algorithms_thread_test \
  alltoall_gather_scatter_thread_test hierarchical_shm_thread_test hierarchical_thread_test \
  reduce_scatter_allgather_thread_test tree_reduce_algorithms_thread_test; do
  THREAD_TESTS+=("$t:$THREAD_FILTER")
done
COMM_UNIT_TESTS=("${THREAD_TESTS[@]}" cost_model_test hierarchical_shm_cost_test ipc_schedule_test
  reduce_test shm_names_test staged_pipeline_test stream_checks_test two_level_cost_test
  config_table_test unknown_settings_test)
ENGINE_UNIT_TESTS=(activation_groups_test adamw_test checkpoint_folder_test checkpoint_metrics_test
  checkpoint_test compute_device_test cpu_threads_test full_runs_test gpt_shard_init_test gpt_shard_memory_test
  gpt_shard_test gpt_shard_units_test gpt_test layers_test memory_plugins_plan_test
  memory_report_test placement_test plugin_loader_test sharded_checkpoint_test stop_request_test
  text_dataset_test unit_partition_test)
# Multi-process comm tests: real ranks over the rendezvous and libfabric tcp.
ASAN_PROCESS_TESTS=(bootstrap_test barrier_test broadcast_test argument_checks_test
  unknown_settings_report_test "split_test:*tcp*" "nonblocking_test:*tcp_3ranks:*tcp_4ranks"
  "comm_lifecycle_test:CAbi.*:*tcp*")
TSAN_TESTS=("${THREAD_TESTS[@]}" "nonblocking_test:*tcp_3ranks:*tcp_4ranks" completion_hook_test
  cpu_threads_test)

now() { date +%s; }
summary=()
timed() {  # timed NAME COMMAND...: runs it and records its wall time; its exit status
  local name=$1 start rc=0
  shift
  start=$(now)
  "$@" || rc=$?
  summary+=("$name: $(($(now) - start)) s$( ((rc)) && echo ", FAILED")")
  echo "test-sanitizers: $name took $(($(now) - start)) s"
  return $rc
}

targets_of() { local t; for t in "$@"; do echo "${t%%:*}"; done; }

build() {  # build DIR KIND TESTS...
  local dir=$1 kind=$2
  shift 2
  local targets
  targets=$(targets_of "$@" | sort -u | paste -sd ';')
  # PLEXUS_PCH=OFF: the libraries compile without their precompiled headers here, so that each
  # source shows it includes what it uses (a precompiled <string> would hide a missing include).
  # shellcheck disable=SC2086
  cmake -S "$SOURCE" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DPLEXUS_SANITIZE="$kind" \
    -DPLEXUS_BUILD_PERF=OFF -DPLEXUS_TEST_PER_FILE=ON -DPLEXUS_PCH=OFF -DPLEXUS_SANITIZE_TARGETS="$targets" "${COMPILER_LAUNCHER[@]}" \
    ${CMAKE_ARGS:-} >/dev/null || return 1
  cmake --build "$dir" -j "$JOBS" --target sanitizer_targets
}

# Runs each test executable (with its filter), JOBS at a time; prints the output of failures.
run_tests() {  # run_tests DIR TESTS...
  local dir=$1
  shift
  local logs=$dir/sanitizer-logs
  rm -rf "$logs" && mkdir -p "$logs"
  printf '%s\n' "$@" | xargs -P "$JOBS" -I{} bash -c '
    spec=$1 dir=$2 logs=$3
    name=${spec%%:*} filter="*"
    [[ $spec == *:* ]] && filter=${spec#*:}
    start=$(date +%s)
    if timeout 900 "$dir/bin/$name" --gtest_filter="$filter" >"$logs/$name.log" 2>&1; then
      echo "test-sanitizers: ok   $name ($(($(date +%s) - start)) s)"
    else
      echo "test-sanitizers: FAIL $name ($(($(date +%s) - start)) s), log: $logs/$name.log"
      touch "$logs/$name.failed"
    fi' _ {} "$dir" "$logs"
  if compgen -G "$logs/*.failed" >/dev/null; then
    for f in "$logs"/*.failed; do
      echo "===== ${f%.failed}.log"
      tail -n 80 "${f%.failed}.log"
    done
    return 1
  fi
}

address() {
  local dir=$ROOT/build-asan
  local all=("${COMM_UNIT_TESTS[@]}" "${ENGINE_UNIT_TESTS[@]}" "${ASAN_PROCESS_TESTS[@]}")
  timed "address: build" build "$dir" address "${all[@]}" || return 1
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:suppressions=$SUPPRESSIONS/asan.supp"
  export LSAN_OPTIONS="suppressions=$SUPPRESSIONS/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$SUPPRESSIONS/ubsan.supp"
  export PLEXUS_FI_PROVIDER=tcp
  timed "address: tests" run_tests "$dir" "${all[@]}"
}

thread() {
  local dir=$ROOT/build-tsan
  timed "thread: build" build "$dir" thread "${TSAN_TESTS[@]}" || return 1
  export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$SUPPRESSIONS/tsan.supp"
  export PLEXUS_FI_PROVIDER=tcp
  timed "thread: tests" run_tests "$dir" "${TSAN_TESTS[@]}"
}

kinds=("$@")
((${#kinds[@]})) || kinds=(address thread)
for kind in "${kinds[@]}"; do
  [[ $kind == address || $kind == thread ]] && continue
  echo "test-sanitizers: unknown kind '$kind' (address or thread)" >&2
  exit 2
done
status=0
for kind in "${kinds[@]}"; do
  "$kind" || status=1
done
printf 'test-sanitizers: %s\n' "${summary[@]}"
exit $status
