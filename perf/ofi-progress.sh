#!/usr/bin/env bash
# ofi-progress.sh - libfabric's manual-progress providers (tcp;ofi_rxm, udp;ofi_rxd), 2 ranks on
# this host over loopback: does the wait loop keep a large transfer moving, and does an idle
# rank still leave its core alone? It prints
#   bandwidth  plexus-bench sendrecv (out of place, algbw in MB/s) at each size, with the default
#              wait loop and with polling forced on (PLEXUS_SPIN_US=1000000, its largest value:
#              the wait yield-polls for 1 s before any sleep);
#   non-blocking  the same with plx_isend/plx_irecv + plx_wait (plexus-p2p-bench): the
#              communicator's progress thread drives those transfers, with its own wait loop
#              (comm/core/executor.h);
#   idle CPU   plexus-idle-bench: the largest share of a core used by a rank kept waiting 2 s in
#              a barrier (2 rounds).
# With --old DIR (a copy of another build's bin/ and lib/, e.g. of the tree before a change) both
# also run DIR's binaries, with DIR/lib first on LD_LIBRARY_PATH (the build's RUNPATH comes
# after it), as a column "old loop" (plexus-p2p-bench, which uses only the C ABI, is always this
# build's, run on DIR/lib).
#
# Usage: perf/ofi-progress.sh [--build DIR] [--old DIR] [--providers LIST] [--sizes LIST]
#                             [--iters N]
#   --build      the build folder (default: build)
#   --providers  comma-separated PLEXUS_FI_PROVIDER values (default: tcp;ofi_rxm,udp;ofi_rxd)
#   --sizes      comma-separated sizes in plexus-bench's syntax (default: 16M,32M,64M)
#   --iters      timed iterations per size (default 10; udp;ofi_rxd, ~40x slower, a third, at
#                least 3), after 2 untimed
# Each run is bounded (timeout, then SIGKILL); on exit every process group it started is killed.
# Figures depend on the machine's load: the two cores here are shared, so read them side by side,
# never alone. docs/performance.md (Idle CPU while waiting) records a run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
old=
providers="tcp;ofi_rxm,udp;ofi_rxd"
sizes=16M,32M,64M
iters=10
while (($#)); do
  case $1 in
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --old) old=${2:?--old needs a folder}; shift 2 ;;
    --providers) providers=${2:?--providers needs a list}; shift 2 ;;
    --sizes) sizes=${2:?--sizes needs a list}; shift 2 ;;
    --iters) iters=${2:?--iters needs a number}; shift 2 ;;
    *) echo "ofi-progress: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
for tool in plexus-run plexus-bench plexus-idle-bench plexus-p2p-bench; do
  [[ -x $build/bin/$tool ]] || {
    echo "ofi-progress: $build/bin/$tool missing (cmake --build $build --target $tool)" >&2
    exit 2
  }
done
IFS=, read -r -a provider_list <<<"$providers"
IFS=, read -r -a size_list <<<"$sizes"

# Each run is started in a process group of its own (setsid) and killed with it on exit.
pgroups=()
cleanup() {
  local g
  for g in "${pgroups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run LIMIT_S OUTFILE ENV... -- COMMAND...: bounded, output to OUTFILE; never fails the script.
run() {
  local limit=$1 out=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  setsid env "${envs[@]}" timeout --kill-after=5 "$limit" "$@" >"$out" 2>&1 &
  local pid=$!
  pgroups+=("$pid")
  wait "$pid" || echo "ofi-progress: '$*' (${envs[*]}) exited with $?" >&2
}

tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

# bandwidth LABEL BINDIR PROVIDER SPIN [LD_LIBRARY_PATH]: prints "size MB/s" rows.
bandwidth() {
  local bindir=$2 provider=$3 spin=$4 libs=${5:-}
  local n=$iters limit=300
  if [[ $provider == udp* ]]; then n=$((iters / 3 > 3 ? iters / 3 : 3)); fi
  local envs=("PLEXUS_FI_PROVIDER=$provider" "PLEXUS_TRANSPORT=ofi")
  [[ -n $spin ]] && envs+=("PLEXUS_SPIN_US=$spin")
  [[ -n $libs ]] && envs+=("LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  local first=${size_list[0]} last=${size_list[-1]}
  run "$limit" "$tmp/bw" "${envs[@]}" -- "$bindir/plexus-run" -n 2 -- "$bindir/plexus-bench" \
    sendrecv -b "$first" -e "$last" -n "$n" -w 2 -c 0
  # Out-of-place bandwidth of each size row: bytes over time (us, column 7) is MB/s.
  awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ { printf "%s %.0f\n", $2, $2 / $7 }' "$tmp/bw"
}

# nonblocking BINDIR PROVIDER SPIN [LD_LIBRARY_PATH]: "size MB/s" rows of plexus-p2p-bench.
nonblocking() {
  local bindir=$1 provider=$2 spin=$3 libs=${4:-}
  local n=$iters
  if [[ $provider == udp* ]]; then n=$((iters / 3 > 3 ? iters / 3 : 3)); fi
  local envs=("PLEXUS_FI_PROVIDER=$provider" "PLEXUS_TRANSPORT=ofi")
  [[ -n $spin ]] && envs+=("PLEXUS_SPIN_US=$spin")
  [[ -n $libs ]] && envs+=("LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  run 300 "$tmp/nb" "${envs[@]}" -- "$bindir/plexus-run" -n 2 -- "$build/bin/plexus-p2p-bench" \
    --sizes "$sizes" --iters "$n" --warmup 2
  awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ { print $2, $3 }' "$tmp/nb"
}

declare -A mbs nbs
echo "# ofi-progress: $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for provider in "${provider_list[@]}"; do
  modes=(new forced)
  [[ -n $old ]] && modes=(old new forced)
  for mode in "${modes[@]}"; do
    case $mode in
      old) rows=$(bandwidth old "$old/bin" "$provider" "" "$old/lib") ;;
      new) rows=$(bandwidth new "$build/bin" "$provider" "") ;;
      forced) rows=$(bandwidth forced "$build/bin" "$provider" 1000000) ;;
    esac
    while read -r size value; do
      [[ -n $size ]] && mbs["$provider|$mode|$size"]=$value
    done <<<"$rows"
    case $mode in
      old) rows=$(nonblocking "$build/bin" "$provider" "" "$old/lib") ;;
      new) rows=$(nonblocking "$build/bin" "$provider" "") ;;
      forced) rows=$(nonblocking "$build/bin" "$provider" 1000000) ;;
    esac
    while read -r size value; do
      [[ -n $size ]] && nbs["$provider|$mode|$size"]=$value
    done <<<"$rows"
  done
done

# table TITLE ARRAY: one row per provider and size of the associative array named ARRAY
# ("provider|mode|size" -> MB/s), one column per mode.
table() {
  local -n values=$2
  echo
  echo "## $1"
  echo
  local header="| provider | size |" rule="|---|---|"
  [[ -n $old ]] && { header+=" old loop |"; rule+="---|"; }
  echo "$header default loop | forced polling |"
  echo "$rule---|---|"
  local provider size line
  for provider in "${provider_list[@]}"; do
    for size in $(printf '%s\n' "${!values[@]}" | awk -F'|' -v p="$provider" '$1 == p { print $3 }' |
                  sort -un); do
      line="| $provider | $(numfmt --to=iec-i --suffix=B "$size") |"
      [[ -n $old ]] && line+=" ${values["$provider|old|$size"]:-?} |"
      echo "$line ${values["$provider|new|$size"]:-?} | ${values["$provider|forced|$size"]:-?} |"
    done
  done
}
table "sendrecv bandwidth, 2 ranks, out of place (MB/s: bytes over time)" mbs
table "plx_isend/plx_irecv bandwidth, 2 ranks (MB/s: one message's bytes over the exchange)" nbs

echo
echo "## idle CPU: rank 0 keeps the other waiting 2 s in a barrier, 2 rounds"
echo
idle_share() {  # BINDIR PROVIDER [LD_LIBRARY_PATH]: the largest share, in %
  local envs=("PLEXUS_FI_PROVIDER=$2" "PLEXUS_TRANSPORT=ofi")
  [[ -n ${3:-} ]] && envs+=("LD_LIBRARY_PATH=$3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  run 60 "$tmp/idle" "${envs[@]}" -- "$1/plexus-run" -n 2 -- "$1/plexus-idle-bench" \
    --wait-seconds 2 --rounds 2
  sed -n 's/.*largest share of a core used by a waiting rank: \([0-9.]*\) %.*/\1/p' \
    "$tmp/idle" | tail -1
}
if [[ -n $old ]]; then
  echo "| provider | old loop | default loop |"
  echo "|---|---|---|"
else
  echo "| provider | default loop |"
  echo "|---|---|"
fi
for provider in "${provider_list[@]}"; do
  line="| $provider |"
  if [[ -n $old ]]; then
    share=$(idle_share "$old/bin" "$provider" "$old/lib")
    line+=" ${share:-?} % |"
  fi
  share=$(idle_share "$build/bin" "$provider")
  echo "$line ${share:-?} % |"
done
