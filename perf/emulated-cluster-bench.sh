#!/usr/bin/env bash
# emulated-cluster-bench.sh - hierarchical against flat ring allreduce on an emulated cluster
# (scripts/emulated-cluster.sh: hosts are network namespaces, each host link shaped by tc tbf),
# against the link bound of the hierarchical scheme (issue 7, acceptance 1).
#
#   perf/emulated-cluster-bench.sh                      # 2 hosts x 2 ranks, 2gbit, 16M..128M
#   perf/emulated-cluster-bench.sh -k 3 -m 2 -e 64M     # other layouts (K >= 2 equal hosts)
#   BUILD_DIR=build-rel perf/emulated-cluster-bench.sh -c 4M
#
# Runs plexus-bench allreduce (float32 sum, every result checked) once with
# PLEXUS_ALGO=allreduce:hierarchical and once with allreduce:ring, and prints per size the
# out-of-place busbw of each, the hierarchical link bound, the percentage of it reached and the
# ratio hierarchical / ring. The bound: with K hosts of M ranks (n = K*M) each host link carries
# 2(K-1)/K of the buffer each way under the hierarchical scheme, and busbw counts 2(n-1)/n of it,
# so busbw <= rate * ((n-1)/n) / ((K-1)/K): 1.5 x the link rate on 2 x 2 (the flat ring's bound
# is 1.0 x). The rate is tbf's, which counts Ethernet, IP and TCP headers too: the payload can
# reach about 1448/1514 = 95.6% of it.
#
# Exit status: 0 when both runs finished with no wrong element (whatever the figures), 1
# otherwise, 2 for bad usage, 77 when the machine cannot emulate a cluster (no permission for
# namespaces), 130/143/129 on SIGINT/SIGTERM/SIGHUP (passed on to the running cluster first).
set -euo pipefail
cd "$(dirname "$0")/.."

hosts=2
per_host=2
rate=2gbit
minbytes=16M
maxbytes=128M
iters=10
warmup=2
chunk=""
timeout_s=600
usage() {
  cat >&2 <<'EOF'
usage: perf/emulated-cluster-bench.sh [-k HOSTS] [-m RANKS_PER_HOST] [-r RATE] [-b MIN] [-e MAX]
                                      [-n ITERS] [-w WARMUP] [-c CHUNK_BYTES] [-t TIMEOUT_S]
  defaults: -k 2 -m 2 -r 2gbit -b 16M -e 128M -n 10 -w 2, PLEXUS_CHUNK_BYTES unset (1 MiB),
  -t 600 seconds per run; BUILD_DIR (default build) holds bin/plexus-bench
EOF
  exit 2
}
while getopts "k:m:r:b:e:n:w:c:t:h" opt; do
  case "$opt" in
    k) hosts=$OPTARG ;; m) per_host=$OPTARG ;; r) rate=$OPTARG ;; b) minbytes=$OPTARG ;;
    e) maxbytes=$OPTARG ;; n) iters=$OPTARG ;; w) warmup=$OPTARG ;; c) chunk=$OPTARG ;;
    t) timeout_s=$OPTARG ;; *) usage ;;
  esac
done
die_usage() { echo "emulated-cluster-bench: $*" >&2; exit 2; }
check_int() {  # check_int OPTION VALUE MIN MAX VAR: a whole decimal number in MIN..MAX
  local digits=$2
  [[ "$digits" =~ ^[0-9]+$ ]] || die_usage "$1 '$2' is not a whole decimal number in $3..$4"
  digits=${digits#"${digits%%[!0]*}"}
  [[ -n "$digits" ]] || digits=0
  [[ ${#digits} -le 15 ]] && (( digits >= $3 && digits <= $4 )) || die_usage "$1 '$2' not in $3..$4"
  printf -v "$5" '%s' "$digits"
}
# The bound needs at least two hosts (one host has no host link) and equal hosts.
check_int -k "$hosts" 2 200 hosts
[[ "$per_host" != *,* ]] ||
  die_usage "-m '$per_host': give one count for every host (the link bound assumes equal hosts;" \
            "scripts/emulated-cluster.sh runs uneven layouts)"
check_int -m "$per_host" 1 64 per_host
check_int -n "$iters" 1 1000000 iters
check_int -w "$warmup" 0 1000000 warmup
check_int -t "$timeout_s" 1 86400 timeout_s
[[ "$rate" =~ ^([0-9]+)(mbit|gbit)$ ]] || die_usage "-r '$rate': give <N>mbit or <N>gbit"
unit=${BASH_REMATCH[2]}
if [[ "$unit" == mbit ]]; then check_int -r "${BASH_REMATCH[1]}" 1 1000000 rate_num
else check_int -r "${BASH_REMATCH[1]}" 1 1000 rate_num; fi
rate="${rate_num}${unit}"
rate_gbytes_per_s=$(python3 -c "print(${rate_num} * (1e-3 if '$unit' == 'mbit' else 1.0) / 8)")

BUILD_DIR=${BUILD_DIR:-build}
bench="$BUILD_DIR/bin/plexus-bench"
[[ -x "$bench" ]] || { echo "no $bench: build the plexus-bench target first" >&2; exit 1; }
out_dir=$(mktemp -d /tmp/plexus-emulated-bench.XXXXXX)
trap 'rm -rf "$out_dir"' EXIT

CHILD_SIGNALS_NAME=emulated-cluster-bench
# shellcheck source=perf/lib/child_signals.sh
source perf/lib/child_signals.sh

[[ -n "$chunk" ]] && export PLEXUS_CHUNK_BYTES="$chunk"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "$(nproc) cores; ${hosts} hosts x ${per_host} ranks, tbf ${rate}," \
     "PLEXUS_CHUNK_BYTES=${PLEXUS_CHUNK_BYTES:-default}"
status=0
for algo in hierarchical ring; do
  cmd=(scripts/emulated-cluster.sh --hosts "$hosts" --ranks-per-host "$per_host" --rate "$rate"
       --timeout "$timeout_s" -- "$bench" allreduce -b "$minbytes" -e "$maxbytes" -f 2
       -n "$iters" -w "$warmup" -J "$out_dir/$algo.json")
  echo "# PLEXUS_ALGO=allreduce:$algo ${cmd[*]}"
  run_child "$out_dir/$algo.log" "allreduce:$algo" env PLEXUS_ALGO="allreduce:$algo" \
    "${cmd[@]}" || status=1
done
[[ "$status" == 0 ]] || exit 1

python3 - "$out_dir" "$hosts" "$per_host" "$rate_gbytes_per_s" <<'EOF'
import json, sys
out_dir, k, m, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
n = k * m
bound = rate * ((n - 1) / n) / ((k - 1) / k)
runs = {a: json.load(open(f"{out_dir}/{a}.json")) for a in ("hierarchical", "ring")}
rows = {a: {r["size"]: r for r in runs[a]["results"]} for a in runs}
wrong = 0
print(f"# link {rate:.3f} GB/s; hierarchical bound {bound:.3f} GB/s busbw "
      f"({bound / rate:.2f} x link); busbw out of place, GB/s")
print(f"{'size (B)':>12} {'hier busbw':>11} {'ring busbw':>11} {'bound':>7} "
      f"{'% bound':>8} {'hier/ring':>10} {'algorithms':>28}")
met = True
for size in sorted(rows["hierarchical"]):
    h, r = rows["hierarchical"][size], rows["ring"].get(size)
    if r is None:
        continue
    hb, rb = h["out_of_place"]["bus_bw"], r["out_of_place"]["bus_bw"]
    for row in (h, r):
        for half in ("out_of_place", "in_place"):
            wrong += int(row[half]["nwrong"]) if str(row[half]["nwrong"]).isdigit() else 0
    pct = 100 * hb / bound
    ratio = hb / rb if rb > 0 else float("inf")
    met = met and pct >= 80 and ratio >= 1.2
    algos = h["out_of_place"]["algorithm"] + "/" + r["out_of_place"]["algorithm"].split(":")[-1]
    print(f"{size:>12} {hb:>11.3f} {rb:>11.3f} {bound:>7.3f} {pct:>7.1f}% {ratio:>10.2f} "
          f"{algos:>28}")
print("# acceptance (>= 80% of bound and >= 1.2 x ring at every size): "
      f"{'met' if met else 'missed'}; #wrong {wrong}")
sys.exit(1 if wrong else 0)
EOF
