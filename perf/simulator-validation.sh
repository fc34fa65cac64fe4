#!/usr/bin/env bash
# simulator-validation.sh - the cost model's predictions against measurements on the emulated
# cluster (issue 23: "validate the simulator where it can be measured").
#
#   perf/simulator-validation.sh                         # 6 layouts x 3 rates x 4 algorithms
#   perf/simulator-validation.sh -l 2x2,3x2 -r 1gbit -a ring,hierarchical
#   BUILD_DIR=build-dev perf/simulator-validation.sh --docs docs/performance.md
#   perf/simulator-validation.sh -l 3x2,4x2 -a hierarchical_ring,hierarchical_halving \
#     --docs docs/performance.md --block lanes
#
# For every layout KxM (K emulated hosts of M ranks, scripts/emulated-cluster.sh: network
# namespaces, each host link shaped by tc tbf), every link rate and every allreduce algorithm it
# runs plexus-bench allreduce with PLEXUS_ALGO=allreduce:<algorithm> and -P 1, which prints beside
# each measured row the time plx_comm_predict_time predicts for it: the same cost model, shape and
# measured parameters the communicator chooses its algorithms with, and the formulas
# plexus-topo --simulate prints for a topology file. hierarchical_ring and hierarchical_halving
# are the hierarchical allreduce with its lanes forced (PLEXUS_HIERARCHICAL_LANES=ring or
# halving; "hierarchical" leaves them to the model). Each run measures its parameters afresh (a
# PLEXUS_CACHE_DIR of its own), since the cached file is per host and provider, not per rate.
#
# Prints a Markdown table: per layout, rate, algorithm and size the predicted and the measured
# busbw (out of place, float32 sum, every result checked) and measured / predicted time, marked
# when they differ by more than 15%. --docs FILE also replaces the block between
# "<!-- perf/simulator-validation.sh: begin -->" and "... end -->" in FILE (appended when the
# markers are missing); with --block NAME the markers are "<!-- perf/simulator-validation.sh
# NAME: begin -->" and "... end -->", so that a second table (another set of layouts or
# algorithms) has a block of its own. Layouts of 6 or 8 ranks share this machine's cores: run
# it on an idle machine, and read a row whose measured time is above the prediction with the
# load in mind.
#
# Exit status: 0 when every run finished with no wrong element (whatever the figures), 1
# otherwise, 2 for bad usage, 77 when the machine cannot emulate a cluster, 130/143/129 on
# SIGINT/SIGTERM/SIGHUP (the running cluster is stopped first).
set -euo pipefail
cd "$(dirname "$0")/.."

layouts=2x1,2x2,3x2,4x1,2x4,4x2
rates=250mbit,500mbit,1gbit
algorithms=ring,hierarchical,rabenseifner,double_binary_tree
minbytes=1M
maxbytes=16M
iters=3
warmup=1
docs=""
block=""
timeout_s=600
usage() {
  cat >&2 <<'EOF'
usage: perf/simulator-validation.sh [-l LAYOUTS] [-r RATES] [-a ALGORITHMS] [-b MIN] [-e MAX]
                                    [-n ITERS] [-w WARMUP] [-t TIMEOUT_S] [--docs FILE]
                                    [--block NAME]
  defaults: -l 2x1,2x2,3x2,4x1,2x4,4x2 (HOSTSxRANKS_PER_HOST) -r 250mbit,500mbit,1gbit
            -a ring,hierarchical,rabenseifner,double_binary_tree -b 1M -e 16M (by 4x) -n 3 -w 1,
            -t 600 seconds per run; BUILD_DIR (default build) holds bin/plexus-bench
  algorithms: ring, hierarchical, rabenseifner, double_binary_tree, recursive_doubling, and
            hierarchical_ring, hierarchical_halving (its lanes forced; only on layouts of 3
            hosts or more with 2 ranks per host or more, e.g. -l 3x2,4x2)
EOF
  exit 2
}
die_usage() { echo "simulator-validation: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -l) [[ $# -ge 2 ]] || usage; layouts=$2; shift 2 ;;
    -r) [[ $# -ge 2 ]] || usage; rates=$2; shift 2 ;;
    -a) [[ $# -ge 2 ]] || usage; algorithms=$2; shift 2 ;;
    -b) [[ $# -ge 2 ]] || usage; minbytes=$2; shift 2 ;;
    -e) [[ $# -ge 2 ]] || usage; maxbytes=$2; shift 2 ;;
    -n) [[ $# -ge 2 ]] || usage; iters=$2; shift 2 ;;
    -w) [[ $# -ge 2 ]] || usage; warmup=$2; shift 2 ;;
    -t) [[ $# -ge 2 ]] || usage; timeout_s=$2; shift 2 ;;
    --docs) [[ $# -ge 2 ]] || usage; docs=$2; shift 2 ;;
    --block) [[ $# -ge 2 ]] || usage; block=$2; shift 2 ;;
    -h|--help) usage ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
IFS=, read -r -a layout_list <<< "$layouts"
IFS=, read -r -a rate_list <<< "$rates"
IFS=, read -r -a algorithm_list <<< "$algorithms"
for layout in "${layout_list[@]}"; do
  [[ "$layout" =~ ^([1-9][0-9]?)x([1-9][0-9]?)$ ]] ||
    die_usage "-l '$layout': give HOSTSxRANKS_PER_HOST, e.g. 2x2 (1..99 each)"
  (( BASH_REMATCH[1] >= 2 )) || die_usage "-l '$layout': at least 2 hosts"
done
for rate in "${rate_list[@]}"; do
  [[ "$rate" =~ ^[1-9][0-9]{0,5}(mbit|gbit)$ ]] || die_usage "-r '$rate': give <N>mbit or <N>gbit"
done
for algorithm in "${algorithm_list[@]}"; do
  [[ "$algorithm" =~ ^(ring|hierarchical(_ring|_halving)?|rabenseifner|double_binary_tree)$ ||
     "$algorithm" == recursive_doubling ]] ||
    die_usage "-a '$algorithm': one of ring, hierarchical, hierarchical_ring," \
              "hierarchical_halving, rabenseifner, double_binary_tree, recursive_doubling"
done
# A forced lane schedule runs only where halving may (hierarchical_cost.h): elsewhere the row
# would be the ring's under another name.
for algorithm in "${algorithm_list[@]}"; do
  [[ "$algorithm" == hierarchical_* ]] || continue
  for layout in "${layout_list[@]}"; do
    (( ${layout%x*} >= 3 && ${layout#*x} >= 2 )) ||
      die_usage "-a $algorithm on -l $layout: the lanes are a ring there (give layouts of 3" \
                "hosts or more and 2 ranks per host or more)"
  done
done
[[ -z "$block" || "$block" =~ ^[a-z0-9-]{1,32}$ ]] ||
  die_usage "--block '$block': 1-32 of a-z, 0-9 and -"
# Whole numbers without leading zeros (bash would read 08 as octal, plexus-bench refuse it).
[[ "$iters" =~ ^[1-9][0-9]{0,5}$ ]] || die_usage "-n '$iters': a whole number in 1..999999"
[[ "$warmup" =~ ^(0|[1-9][0-9]{0,5})$ ]] || die_usage "-w '$warmup': a whole number in 0..999999"
[[ "$timeout_s" =~ ^[1-9][0-9]{0,4}$ ]] || die_usage "-t '$timeout_s': a whole number in 1..99999"
bytes_of() {  # bytes_of SIZE: 4M -> 4194304
  local number=${1%[KMG]} shift_by=0
  case "$1" in *K) shift_by=10 ;; *M) shift_by=20 ;; *G) shift_by=30 ;; esac
  echo $(( number << shift_by ))
}
for value in "$minbytes" "$maxbytes"; do
  [[ "$value" =~ ^[1-9][0-9]{0,8}[KMG]?$ ]] || die_usage "'$value' is not a size (e.g. 4M)"
done
(( $(bytes_of "$minbytes") <= $(bytes_of "$maxbytes") )) ||
  die_usage "-b $minbytes is larger than -e $maxbytes"

BUILD_DIR=${BUILD_DIR:-build}
bench="$BUILD_DIR/bin/plexus-bench"
[[ -x "$bench" ]] || { echo "no $bench: build the plexus-bench target first" >&2; exit 1; }
out_dir=$(mktemp -d /tmp/plexus-simulator-validation.XXXXXX)
trap 'rm -rf "$out_dir"' EXIT

CHILD_SIGNALS_NAME=simulator-validation
# shellcheck source=perf/lib/child_signals.sh
source perf/lib/child_signals.sh

started="$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "# $started"
status=0
for layout in "${layout_list[@]}"; do
  hosts=${layout%x*}
  per_host=${layout#*x}
  for rate in "${rate_list[@]}"; do
    for algorithm in "${algorithm_list[@]}"; do
      name="$layout-$rate-$algorithm"
      mkdir -p "$out_dir/cache-$name"
      cmd=(scripts/emulated-cluster.sh --hosts "$hosts" --ranks-per-host "$per_host"
           --rate "$rate" --timeout "$timeout_s" -- "$bench" allreduce -b "$minbytes"
           -e "$maxbytes" -f 4 -n "$iters" -w "$warmup" -P 1 -J "$out_dir/$name.json")
      # hierarchical_ring / hierarchical_halving: the hierarchical allreduce, lanes forced.
      lanes=auto
      [[ "$algorithm" == hierarchical_* ]] && lanes=${algorithm#hierarchical_}
      base=${algorithm%_"$lanes"}
      echo "# $layout $rate allreduce:$base, PLEXUS_HIERARCHICAL_LANES=$lanes"
      run_child "$out_dir/$name.log" "$name" env PLEXUS_ALGO="allreduce:$base" \
        PLEXUS_HIERARCHICAL_LANES="$lanes" PLEXUS_CACHE_DIR="$out_dir/cache-$name" \
        "${cmd[@]}" || status=1
    done
  done
done

python3 perf/simulator/validation_table.py "$out_dir" "$started" "$docs" \
  "$layouts" "$rates" "$algorithms" "$block" || status=1
exit "$status"
