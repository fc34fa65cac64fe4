#!/usr/bin/env bash
# compare.sh - Plexus beside Gloo, Open MPI and MPICH on this host, in one command.
#
#   perf/compare.sh [-c allreduce] [-n 2,4] [-b 1K] [-e 64M] [-f 4] [-i 20] [-w 5] [-r 3]
#                   [-p gloo,openmpi,mpich] [-a ALGO_SPEC] [-t 600] [-d docs] [--no-install]
#
#  1. apt-get installs what is missing of libgloo-dev, openmpi-bin, libopenmpi-dev, mpich,
#     libmpich-dev and gnuplot-nox (skip with --no-install);
#  2. builds plexus-bench and plexus-run in BUILD_DIR (default build/, reused if configured),
#     and the peers and the memory probe with perf/peers/build.sh into BUILD_DIR/peers;
#  3. measures the memory bandwidth (perf/compare/stream_bound.cpp) with 1 thread and with each
#     rank count;
#  4. -r rounds of: for each rank count run, one after the other, each under `timeout -t` s,
#       plexus   plexus-run -n N -- plexus-bench COLL ...      (PLEXUS_FI_PROVIDER passes through)
#       plexus_reg  the same with -R 1: buffers from plx_mem_alloc, registered on the
#                communicator (nccl-tests' -R), which the one-host allreduce reads directly
#       gloo     plexus-run -n N -- gloo_bench COLL -s STORE   (Gloo's tcp transport, FileStore)
#       openmpi  mpirun.openmpi --oversubscribe --allow-run-as-root -np N mpi_bench_openmpi COLL
#       mpich    mpiexec.mpich -n N mpi_bench_mpich COLL
#     all with the same sizes (-b..-e by -f), iterations (-i) and warmups (-w), raw outputs in
#     BUILD_DIR/compare/COLL/NAME_nN_rK.txt; the libraries take turns, so a burst of load from
#     elsewhere hits them alike, and per size each library's fastest round counts;
#  5. perf/compare/make_report.py prints ONE side-by-side table (busbw per size and library,
#     Plexus / best peer, the memory bound, 4 KiB latency, the verdicts against the targets) and
#     writes it to DOCS/performance-COLL.md, a plot to DOCS/performance-COLL.png, and into
#     DOCS/performance.md between its markers.
# Exit status: 0 when every run finished with no wrong element, 1 otherwise, 2 for bad usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
coll=allreduce ranks=2,4 min=1K max=64M factor=4 iters=20 warmup=5 rounds=3
peers=gloo,openmpi,mpich
algo="" run_timeout=600 docs=$root/docs install=1
build_dir=${BUILD_DIR:-$root/build}

usage() {
  sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}
while [[ $# -gt 0 ]]; do
  case $1 in
    -c) coll=$2; shift 2 ;;
    -n) ranks=$2; shift 2 ;;
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    -i) iters=$2; shift 2 ;;
    -w) warmup=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -p) peers=$2; shift 2 ;;
    -a) algo=$2; shift 2 ;;
    -t) run_timeout=$2; shift 2 ;;
    -d) docs=$(cd "$2" && pwd) || usage; shift 2 ;;
    --no-install) install=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $ranks =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "compare.sh: -n $ranks: want e.g. 2,4" >&2; exit 2; }
[[ $run_timeout =~ ^[0-9]+$ ]] || { echo "compare.sh: -t $run_timeout: seconds" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: -r $rounds: a count >= 1" >&2; exit 2; }
IFS=, read -r -a rank_list <<<"$ranks"
IFS=, read -r -a peer_list <<<"$peers"

log() { echo "compare.sh: $*" >&2; }

# 1. Packages.
if [[ $install == 1 ]]; then
  missing=()
  for pkg in libgloo-dev openmpi-bin libopenmpi-dev mpich libmpich-dev gnuplot-nox; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y --no-install-recommends \
      "${missing[@]}" >&2 || log "apt-get install failed; the missing peers will be skipped"
  fi
fi

# 2. Builds.
jobs=$(nproc)
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >&2 || exit 1
fi
cmake --build "$build_dir" -j "$jobs" --target plexus-bench plexus-run >&2 || exit 1
bin=$build_dir/bin
peer_bin=$build_dir/peers
"$root/perf/peers/build.sh" "$peer_bin" >&2 || log "some peer failed to build; it is skipped"

raw=$build_dir/compare/$coll
rm -rf "$raw"
mkdir -p "$raw"
echo "perf/compare.sh -c $coll -n $ranks -b $min -e $max -f $factor -i $iters -w $warmup" \
  "-r $rounds -p $peers${algo:+ -a $algo}" >"$raw/command.txt"
{
  echo "date:      $(date -u '+%Y-%m-%d %H:%M UTC')"
  lscpu_field() { lscpu | sed -n "s/^$1: *//p" | head -1; }
  echo "cpu:       $(lscpu_field 'Model name'), $(nproc) cores ($(lscpu_field 'Socket(s)')" \
    "socket(s), $(lscpu_field 'NUMA node(s)') NUMA node(s))"
  echo "memory:    $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "os:        $(. /etc/os-release && echo "$PRETTY_NAME"), Linux $(uname -r)"
  echo "compiler:  $(g++ --version | head -1)"
  echo "libfabric: $(pkg-config --modversion libfabric 2>/dev/null || echo unknown)" \
    "PLEXUS_FI_PROVIDER=${PLEXUS_FI_PROVIDER:-<unset: Plexus chooses>}"
  echo "load:      $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min load average before the runs)"
} >"$raw/machine.txt"

# 3. Memory bandwidth: 1 thread and each rank count.
threads=$(printf '%s\n' 1 "${rank_list[@]}" | sort -n -u | paste -sd,)
if [[ -x $peer_bin/stream_bound ]]; then
  log "memory bandwidth with $threads threads"
  timeout -k 10 "$run_timeout" "$peer_bin/stream_bound" -t "$threads" >"$raw/stream.txt"
fi

# 4. The runs. run NAME N COMMAND...: output to NAME_nN_rROUND.txt, exit status to .status.
failed=0
run() {
  local name=$1 n=$2 out
  shift 2
  out=$raw/${name}_n${n}_r$round.txt
  log "round $round of $rounds: $name, $n ranks: $*"
  timeout -k 10 "$run_timeout" "$@" >"$out" 2>&1 </dev/null
  local status=$?
  echo "$status" >"$out.status"
  if [[ $status -ne 0 ]]; then
    log "$name, $n ranks: exit status $status (see $out)"
    [[ $status -eq 2 ]] && grep -q "not supported" "$out" || failed=1
  fi
}
sizes=(-b "$min" -e "$max" -f "$factor" -n "$iters" -w "$warmup")
for round in $(seq 1 "$rounds"); do
  for n in "${rank_list[@]}"; do
    run plexus "$n" "$bin/plexus-run" -n "$n" -- "$bin/plexus-bench" "$coll" "${sizes[@]}" \
      ${algo:+-a "$algo"}
    run plexus_reg "$n" "$bin/plexus-run" -n "$n" -- "$bin/plexus-bench" "$coll" "${sizes[@]}" \
      -R 1 ${algo:+-a "$algo"}
    for peer in "${peer_list[@]}"; do
      case $peer in
        gloo)
          [[ -x $peer_bin/gloo_bench ]] || { log "no gloo_bench; skipped"; continue; }
          store=$(mktemp -d "$raw/gloo_store.XXXXXX")
          run gloo "$n" "$bin/plexus-run" -n "$n" -- "$peer_bin/gloo_bench" "$coll" -s "$store" \
            "${sizes[@]}"
          rm -rf "$store" ;;
        openmpi)
          [[ -x $peer_bin/mpi_bench_openmpi ]] || { log "no mpi_bench_openmpi; skipped"; continue; }
          run openmpi "$n" mpirun.openmpi --oversubscribe --allow-run-as-root -np "$n" \
            "$peer_bin/mpi_bench_openmpi" "$coll" "${sizes[@]}" ;;
        mpich)
          [[ -x $peer_bin/mpi_bench_mpich ]] || { log "no mpi_bench_mpich; skipped"; continue; }
          run mpich "$n" mpiexec.mpich -n "$n" "$peer_bin/mpi_bench_mpich" "$coll" "${sizes[@]}" ;;
        *) log "unknown peer '$peer' (gloo, openmpi, mpich)"; exit 2 ;;
      esac
    done
  done
done

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) (after the runs)" >>"$raw/machine.txt"

# 5. The table, the plot and the docs.
python3 "$root/perf/compare/make_report.py" --raw "$raw" --collective "$coll" --ranks "$ranks" \
  --docs "$docs" || exit 1
grep -h "Out of bounds values" "$raw"/*_n*_r*.txt | grep -v " 0 OK" >/dev/null && failed=1
exit $failed
