#!/usr/bin/env bash
# gpu-check.sh - the GPU checks of issue 6 on one GPU machine, in under 8 minutes (one H200, 16
# cores): build with CUDA, run the GPU test suite (ctest -L gpu), then plexus-gpu-bench (the
# reduction kernels' bandwidth beside device-to-device copy bandwidth), then plexus-gpu-allreduce
# (device-buffer allreduce, 2 and 4 ranks on one GPU through CUDA IPC, and staged; reduce_scatter
# and allgather, 4 ranks through CUDA IPC), then the
# engine's tokens/s on one GPT config (plexus-train --device cuda, fp32 and bf16). Prints the date,
# `nvidia-smi -L` and the figures; everything also goes to $BUILD_DIR/gpu-check.log.
#
#   perf/gpu-check.sh                       # BUILD_DIR=build-gpu, JOBS=16
#   BUILD_DIR=/tmp/b JOBS=8 CUDA_ARCHS=90 perf/gpu-check.sh
#
# Every step runs under `timeout`: configure 60 s, build 300 s, tests 90 s, bench 60 s, the three
# allreduce runs and the two training runs 60 s each, the reduce_scatter and allgather runs 45 s
# each (at most 15 min; the steps themselves
# take far less than their limits, well under 8 minutes together on 16 cores). Exit 0 when every step passed, 1 otherwise (the failing steps are listed at the end).
# The build is only the GPU targets (libplexus, plexus_gpu_tests, plexus-gpu-bench,
# plexus-gpu-allreduce, plexus-run, plexus-train and the D plugin), not the whole tree.
set -u -o pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-16}
# The GPU's own architecture (e.g. 9.0 -> 90) keeps the build short; CUDA_ARCHS overrides.
if [[ -z "${CUDA_ARCHS:-}" ]]; then
  CUDA_ARCHS=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 |
               tr -d ' .')
  [[ "$CUDA_ARCHS" =~ ^[0-9]+$ ]] || CUDA_ARCHS="80;90"
fi
mkdir -p "$BUILD_DIR"
LOG="$BUILD_DIR/gpu-check.log"
exec > >(tee "$LOG") 2>&1

failed=()
# step SECONDS NAME COMMAND...: runs COMMAND under timeout, records a failure.
step() {
  local limit=$1 name=$2
  shift 2
  echo
  echo "== $name (limit ${limit}s) =="
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    [[ $rc -eq 124 ]] && echo "$name: timed out after ${limit}s"
    echo "$name: FAILED (exit $rc)"
    failed+=("$name")
  fi
  echo "== $name: $((SECONDS - start))s =="
  return $rc
}

echo "== date =="
date -u '+%Y-%m-%dT%H:%M:%SZ'
echo "== nvidia-smi -L =="
nvidia-smi -L || echo "nvidia-smi: not available"
echo "== CUDA architectures: $CUDA_ARCHS; build dir: $BUILD_DIR; jobs: $JOBS =="

if step 60 configure cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_CUDA=ON \
     "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS" -DPLEXUS_BUILD_TESTS=ON -DPLEXUS_BUILD_PERF=ON &&
   step 300 build cmake --build "$BUILD_DIR" -j "$JOBS" --target plexus plexus_gpu_tests \
     plexus-gpu-bench plexus-gpu-allreduce plexus-run plexus-train plexus_plugin_D; then
  # GPU tests: each skips with the reason when no device is visible, so a SKIPPED line here
  # means this machine's GPU was not usable; the summary counts them.
  step 90 "gpu tests" ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure -j 8 \
    --timeout 80
  step 60 "reduction bandwidth" "$BUILD_DIR/bin/plexus-gpu-bench" -b 16M -e 1G -n 20 -w 3

  # Device-buffer allreduce with 2 and 4 ranks sharing this one GPU through CUDA IPC (every
  # element checked; nccl-tests-style rows, busbw = algbw * 2(n-1)/n), then 2 ranks through
  # pinned host staging (PLEXUS_SHM=0) for comparison. Exit 1 on any wrong element.
  for n in 2 4; do
    step 60 "cuda_ipc allreduce, $n ranks on one GPU" "$BUILD_DIR/bin/plexus-run" -n "$n" -- \
      "$BUILD_DIR/bin/plexus-gpu-allreduce" -b 1M -e 256M -n 20 -w 5
  done
  step 60 "staged allreduce, 2 ranks (PLEXUS_SHM=0)" env PLEXUS_SHM=0 \
    "$BUILD_DIR/bin/plexus-run" -n 2 -- "$BUILD_DIR/bin/plexus-gpu-allreduce" -b 1M -e 64M -n 5 -w 2
  # reduce_scatter and allgather through CUDA IPC, 4 ranks (busbw = algbw * (n-1)/n).
  for c in reduce_scatter allgather; do
    step 45 "cuda_ipc $c, 4 ranks on one GPU" "$BUILD_DIR/bin/plexus-run" -n 4 -- \
      "$BUILD_DIR/bin/plexus-gpu-allreduce" -c "$c" -b 1M -e 128M -n 10 -w 3
  done

  # The engine on this GPU: one fixed GPT config (6 layers, 6 heads, width 384, context 256,
  # batch 32: 10.8 M parameters), 30 steps in fp32 and 30 with bf16 autocast; every 10th step
  # prints its tok/s. No PyTorch figure: the device machines reach no package registry, so
  # PyTorch cannot be installed there (docs/gpu.md).
  # data/ is git-ignored: the device tool carries it only when asked (carry: ["data"]); without
  # it the docs stand in as the text (the figure is tokens/s, not the loss).
  text=data/moby_dick.txt
  if [[ ! -s $text ]]; then
    text=$BUILD_DIR/gpu-check-text.txt
    cat README.md docs/*.md > "$text"
    echo "data/moby_dick.txt is missing (carry it, or run scripts/train-moby-dick.sh once):" \
         "training on README.md and docs/*.md instead ($(wc -c < "$text") bytes)"
  fi
  train=("$BUILD_DIR/bin/plexus-train" --data "$text" --device cuda --n-layer 6
         --n-head 6 --n-embd 384 --seq-len 256 --batch-size 32 --steps 30 --val-every 0
         --log-every 10)
  step 60 "engine tokens/s, fp32" "${train[@]}"
  step 60 "engine tokens/s, bf16 autocast" "${train[@]}" --autocast bf16
fi

echo
echo "== done $(date -u '+%Y-%m-%dT%H:%M:%SZ') in ${SECONDS}s; log: $LOG =="
if [[ ${#failed[@]} -ne 0 ]]; then
  echo "FAILED steps: ${failed[*]}"
  exit 1
fi
echo "all steps passed"
