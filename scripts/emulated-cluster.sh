#!/usr/bin/env bash
# emulated-cluster.sh - runs a command as the ranks of an emulated cluster on this machine: K
# network namespaces are the hosts, each joined by a veth pair to a bridge that lives in one more
# namespace of the run (nothing of the machine's own network changes), each host link shaped with
# tc tbf in both directions, M ranks started in each host with the PLEXUS_* launcher variables.
#
#   scripts/emulated-cluster.sh --hosts 2 --ranks-per-host 2 [--rate 2gbit] [--timeout 300] \
#       -- build/bin/plexus-bench allreduce -b 16M -e 64M
#
#          plx<pid>h0 (198.18.0.1)        plx<pid>h1 (198.18.0.2)      hosts: ranks 0..M-1, M..2M-1
#          eth0 [tbf RATE]                eth0 [tbf RATE]              host -> bridge shaping
#            |                              |
#          v0 [tbf RATE] ---- br0 ---- v1 [tbf RATE]                   bridge -> host shaping
#                        plx<pid>br (the bridge's namespace)
#
# --rails R gives every host R such links, one network each (as the NICs of a rail-aligned
# cluster): rail r is eth<r> in each host (198.18.r.<k+1>/24), v<k>r<r> on bridge br<r>, each
# shaped alike. The ranks then get PLEXUS_FI_NICS=eth0,...,eth<R-1> instead of FI_TCP_IFACE, so
# Plexus spreads each host's ranks over the rails, and when the ranks are done the script prints
# the bytes each host's rails carried ("emulated-cluster: host K rail R (ethR): tx N bytes,
# rx M bytes").
#
# Every rank gets PLEXUS_RANK, PLEXUS_WORLD_SIZE, PLEXUS_LOCAL_RANK, PLEXUS_LOCAL_WORLD_SIZE,
# PLEXUS_MASTER_ADDR=198.18.0.1 (host 0), PLEXUS_MASTER_PORT, PLEXUS_HOST_ID=host<k>,
# PLEXUS_FI_PROVIDER=tcp and FI_TCP_IFACE=eth0 (libfabric's tcp provider then lists only the host's
# veth address, so traffic between hosts crosses the shaped links; ranks of one host reach each
# other through that address inside their namespace, unshaped, as on a real host). A PLEXUS_*,
# FI_* or UCX_* variable already set in the caller's environment is kept, except the per-rank ones.
# PLEXUS_CACHE_DIR defaults to a folder of the run, so cost-model figures measured on one rate are
# never reused on another. OPENBLAS_NUM_THREADS and OMP_NUM_THREADS default to cores / ranks.
#
# Output lines carry a "[R] " prefix (--no-prefix: none). The script waits for every rank up to
# --timeout seconds; after the first rank fails the others get 15 s to exit on their own. Ranks
# still running then (or at the timeout, or on SIGINT/SIGTERM/SIGHUP to the script) get SIGTERM
# to their process group, SIGKILL 5 s later; only processes this script started are signalled (and,
# last, whatever still runs inside the run's own namespaces). Every namespace, link and qdisc it
# created is removed on exit, whatever the cause; once clean-up has begun, further SIGINT/SIGTERM/
# SIGHUP are ignored so that it always completes.
#
# Exit status: 0 when every rank exited 0; else the first failing rank's status (128 + signal for
# a signal); 124 on timeout; 130/143/129 on SIGINT/SIGTERM/SIGHUP; 2 for bad usage; 77 when this
# machine cannot emulate (no permission to create namespaces, no veth, bridge or tbf): tests skip
# on 77.
set -euo pipefail

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  cat >&2 <<'EOF'
options:
  --hosts K             number of emulated hosts (1..200)
  --ranks-per-host M    ranks per host (1..64), or a comma list with one count per host (3,2)
  --rate R              tbf rate of every host link, tc syntax: 2gbit (default), 500mbit, ...;
                        1mbit..1000gbit, or 0 or none: unshaped
  --timeout S           seconds before the ranks are killed (1..86400, default 300)
  --port P              PLEXUS_MASTER_PORT (default 29500; the namespaces are new, so it is free)
  --queue-ms Q          tbf queue ("latency"), milliseconds of the rate (default 20)
  --burst-us B          tbf burst, microseconds of the rate (default 2000; at least 128 KiB)
  --rails R             links (NICs) per host, one network each (1..8, default 1)
  --no-prefix           do not prefix output lines with "[R] "
EOF
  exit 2
}

die_usage() { echo "emulated-cluster: $*" >&2; exit 2; }

hosts=""
ranks_spec=""
rate="2gbit"
timeout_s=300
port=29500
queue_ms=20
burst_us=2000
prefix=1
rails=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts) [[ $# -ge 2 ]] || usage; hosts="$2"; shift 2 ;;
    --ranks-per-host) [[ $# -ge 2 ]] || usage; ranks_spec="$2"; shift 2 ;;
    --rate) [[ $# -ge 2 ]] || usage; rate="$2"; shift 2 ;;
    --timeout) [[ $# -ge 2 ]] || usage; timeout_s="$2"; shift 2 ;;
    --port) [[ $# -ge 2 ]] || usage; port="$2"; shift 2 ;;
    --queue-ms) [[ $# -ge 2 ]] || usage; queue_ms="$2"; shift 2 ;;
    --burst-us) [[ $# -ge 2 ]] || usage; burst_us="$2"; shift 2 ;;
    --rails) [[ $# -ge 2 ]] || usage; rails="$2"; shift 2 ;;
    --no-prefix) prefix=0; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    *) die_usage "unknown option '$1' (the command follows --)" ;;
  esac
done
[[ $# -ge 1 ]] || die_usage "no command given after --"
[[ -n "$ranks_spec" ]] || die_usage "--ranks-per-host is required"

# Numbers are whole decimal strings (leading zeros allowed, read as decimal), bounded before any
# arithmetic, so nothing overflows or reads as octal: check_int OPTION VALUE MIN MAX VAR.
check_int() {
  local digits=$2
  [[ "$digits" =~ ^[0-9]+$ ]] || die_usage "$1 '$2' is not a whole decimal number in $3..$4"
  digits=${digits#"${digits%%[!0]*}"}
  [[ -n "$digits" ]] || digits=0
  [[ ${#digits} -le 15 ]] && (( digits >= $3 && digits <= $4 )) ||
    die_usage "$1 '$2' not in $3..$4"
  printf -v "$5" '%s' "$digits"
}

# Ranks per host: one count for every host, or one per host.
[[ -z "$hosts" ]] || check_int --hosts "$hosts" 1 200 hosts
[[ "$ranks_spec" =~ ^[0-9]+(,[0-9]+)*$ ]] ||
  die_usage "--ranks-per-host '$ranks_spec' is not a count in 1..64 or a comma list of them"
IFS=',' read -r -a per_host <<< "$ranks_spec"
if [[ ${#per_host[@]} -gt 1 ]]; then
  [[ ${#per_host[@]} -le 200 ]] || die_usage "--ranks-per-host lists ${#per_host[@]} hosts (at most 200)"
  [[ -z "$hosts" || "$hosts" == "${#per_host[@]}" ]] ||
    die_usage "--hosts $hosts but --ranks-per-host lists ${#per_host[@]} counts"
  hosts=${#per_host[@]}
else
  [[ -n "$hosts" ]] || die_usage "--hosts is required"
  per_host=()
  for ((k = 0; k < hosts; ++k)); do per_host+=("$ranks_spec"); done
fi
for ((k = 0; k < hosts; ++k)); do
  check_int --ranks-per-host "${per_host[k]}" 1 64 "per_host[$k]"
done
check_int --timeout "$timeout_s" 1 86400 timeout_s
check_int --port "$port" 1 65535 port
check_int --queue-ms "$queue_ms" 1 1000 queue_ms
check_int --burst-us "$burst_us" 1 1000000 burst_us
check_int --rails "$rails" 1 8 rails

# The rate in bytes per second, for the tbf burst (tc's units: k = 1000); 1mbit..1000gbit.
rate_bytes_per_s=0
if [[ "$rate" != "0" && "$rate" != "none" ]]; then
  [[ "$rate" =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] ||
    die_usage "--rate '$rate' is not <number>bit|kbit|mbit|gbit, 0 or none"
  unit=${BASH_REMATCH[2]}
  case "$unit" in
    bit) scale=1 ;; kbit) scale=1000 ;; mbit) scale=1000000 ;; gbit) scale=1000000000 ;;
  esac
  rate_num=${BASH_REMATCH[1]#"${BASH_REMATCH[1]%%[!0]*}"}
  [[ -n "$rate_num" ]] || rate_num=0
  [[ ${#rate_num} -le 13 ]] && (( rate_num <= 1000000000000 / scale )) ||
    die_usage "--rate '$rate' above 1000gbit"
  rate_bytes_per_s=$(( rate_num * scale / 8 ))
  [[ "$rate_bytes_per_s" -ge 125000 ]] || die_usage "--rate '$rate' below 1mbit"
  rate="${rate_num}${unit}"  # tc gets the number in plain decimal
  # tc keeps the burst in 32 bits: --burst-us of the rate must stay below 4 GiB.
  (( rate_bytes_per_s / 1000 * burst_us / 1000 <= 4294967295 )) ||
    die_usage "--burst-us $burst_us at --rate $rate makes a tbf burst of" \
      "$(( rate_bytes_per_s / 1000 * burst_us / 1000 )) bytes, above tc's 4294967295"
fi

world=0
for m in "${per_host[@]}"; do world=$((world + m)); done

# ---------------------------------------------------------------------------------------------
# Clean-up: always, on every exit path. Ranks first (they keep the namespaces alive), then the
# links (their qdiscs go with them), the bridge and the namespaces, in reverse order of creation.
# Every name is recorded before it is created, and clean-up also sweeps every namespace named
# plx<pid>br / plx<pid>h<k> and every /tmp/plx<pid>.XXXXXX of this run, so a signal at any point of
# set-up leaves nothing. Clean-up runs once, to the end: INT/TERM/HUP are ignored from its start.
run_id="plx$$"
bridge_ns="${run_id}br"
created_ns=()      # namespaces, in creation order (recorded before `ip netns add`)
created_links=()   # "ns link" pairs created in the bridge namespace (recorded before creation)
rank_pids=()
declare -A done_pid=()  # ranks already reaped: never signalled again (their pid may be reused)
timer=""          # the script's own sleep that bounds the wait
run_dir=""
cleaning=0

signal_ranks() {  # signal_ranks SIG: to each live rank's process group (each rank is a session)
  local pid
  for pid in "${rank_pids[@]}"; do
    [[ -n "$pid" && -z "${done_pid[$pid]:-}" ]] || continue
    if kill -0 "$pid" 2>/dev/null; then
      kill "-$1" -- "-$pid" 2>/dev/null || kill "-$1" "$pid" 2>/dev/null || true
    fi
  done
}

any_rank_alive() {
  local pid
  for pid in "${rank_pids[@]}"; do
    [[ -n "$pid" && -z "${done_pid[$pid]:-}" && -e "/proc/$pid" ]] &&
      [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != "Z" ]] && return 0
  done
  return 1
}

stop_ranks() {  # SIGTERM, then SIGKILL 5 s later (polled in 0.2 s sleeps)
  any_rank_alive || return 0
  signal_ranks TERM
  local i
  for ((i = 0; i < 25; ++i)); do any_rank_alive || return 0; sleep 0.2; done
  echo "emulated-cluster: rank(s) still running 5 s after SIGTERM; sending SIGKILL" >&2
  signal_ranks KILL
  for ((i = 0; i < 25; ++i)); do any_rank_alive || return 0; sleep 0.2; done
}

our_namespaces() {  # this run's namespaces that exist now: plx<pid>br, plx<pid>h<k>
  ip netns list 2>/dev/null | awk -v re="^${run_id}(br|h[0-9]+)\$" '$1 ~ re {print $1}' || true
}

cleanup() {
  trap '' INT TERM HUP    # from here on, a signal neither interrupts nor restarts the clean-up
  [[ "$cleaning" == 1 ]] && return 0
  cleaning=1
  if [[ -n "$timer" ]]; then kill "$timer" 2>/dev/null || true; fi
  stop_ranks || true
  local i entry ns pid
  local -A seen=()
  local all_ns=()
  for ns in "${created_ns[@]}" $(our_namespaces); do
    [[ -n "${seen[$ns]:-}" ]] && continue
    seen[$ns]=1
    all_ns+=("$ns")
  done
  # Whatever still runs inside the run's namespaces (a rank's escaped descendant, a rank started
  # as the signal came) was started by this run's ranks: SIGKILL it before the namespaces go.
  for ns in "${all_ns[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
      [[ "$pid" =~ ^[0-9]+$ && "$pid" != $$ ]] && kill -KILL "$pid" 2>/dev/null || true
    done
  done
  for ((i = ${#created_links[@]} - 1; i >= 0; --i)); do
    entry=${created_links[i]}
    ip -n "${entry% *}" link del "${entry#* }" 2>/dev/null || true
  done
  for ((i = ${#all_ns[@]} - 1; i >= 0; --i)); do
    ns=${all_ns[i]}
    [[ -e "/run/netns/$ns" || -e "/var/run/netns/$ns" ]] || continue
    ip netns del "$ns" 2>/dev/null || ip netns del "$ns" 2>/dev/null ||
      echo "emulated-cluster: could not delete namespace $ns" >&2
  done
  for ns in $(our_namespaces); do  # a last sweep by name
    ip netns del "$ns" 2>/dev/null || echo "emulated-cluster: could not delete namespace $ns" >&2
  done
  [[ -z "$run_dir" ]] || rm -rf "$run_dir" || true
  local d
  for d in /tmp/"${run_id}".??????; do
    [[ -d "$d" ]] && rm -rf "$d" 2>/dev/null || true
  done
  return 0
}

on_signal() {
  # A signal while the clean-up already runs (from the EXIT trap, before its `trap ''` took
  # effect) returns to it, so that it completes; otherwise clean up and exit with 128 + signal.
  [[ "$cleaning" == 1 ]] && return 0
  trap '' INT TERM HUP
  echo "emulated-cluster: $1 received; stopping the ranks and removing the cluster" >&2
  cleanup
  exit "$2"
}
trap cleanup EXIT
trap 'on_signal SIGINT 130' INT
trap 'on_signal SIGTERM 143' TERM
trap 'on_signal SIGHUP 129' HUP

cannot_emulate() {  # exit 77: this machine cannot host the cluster (tests skip)
  echo "emulated-cluster: cannot emulate a cluster here: $*" >&2
  exit 77
}

# ---------------------------------------------------------------------------------------------
# The cluster.
command -v ip >/dev/null || cannot_emulate "'ip' (iproute2) not found"
[[ "$rate_bytes_per_s" == 0 ]] || command -v tc >/dev/null || cannot_emulate "'tc' not found"

make_ns() {
  local err
  created_ns+=("$1")  # recorded first: a signal right after `ip netns add` still removes it
  if ! err=$(ip netns add "$1" 2>&1); then
    cannot_emulate "ip netns add $1: ${err:-failed} (needs root or CAP_SYS_ADMIN + CAP_NET_ADMIN)"
  fi
  ip -n "$1" link set lo up || cannot_emulate "ip -n $1 link set lo up failed"
}

# tbf on one device: burst --burst-us of the rate (default 2 ms; at least 128 KiB, above a 64 KiB
# GSO packet), a queue of --queue-ms (default 20 ms).
shape() {  # shape NS DEV
  [[ "$rate_bytes_per_s" == 0 ]] && return 0
  local burst=$(( rate_bytes_per_s / 1000 * burst_us / 1000 ))
  [[ "$burst" -ge 131072 ]] || burst=131072
  local err
  err=$(ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst "$burst" \
        latency "${queue_ms}ms" 2>&1) ||
    cannot_emulate "tc qdisc add dev $2 (in $1) tbf rate $rate: $err"
}

make_ns "$bridge_ns"
for ((r = 0; r < rails; ++r)); do
  created_links+=("$bridge_ns br$r")
  ip -n "$bridge_ns" link add "br$r" type bridge || cannot_emulate "no bridge support"
  ip -n "$bridge_ns" link set "br$r" up
done

# The bridge-side end of host k's rail r: v<k> for rail 0 (as with one rail), v<k>r<r> after.
bridge_port() { if [[ "$2" == 0 ]]; then echo "v$1"; else echo "v$1r$2"; fi; }

for ((k = 0; k < hosts; ++k)); do
  host_ns="${run_id}h$k"
  make_ns "$host_ns"
  for ((r = 0; r < rails; ++r)); do
    port_name=$(bridge_port "$k" "$r")
    created_links+=("$bridge_ns $port_name")
    ip -n "$bridge_ns" link add "$port_name" type veth peer name "eth$r" netns "$host_ns" ||
      cannot_emulate "no veth support"
    ip -n "$bridge_ns" link set "$port_name" master "br$r"
    ip -n "$bridge_ns" link set "$port_name" up
    ip -n "$host_ns" addr add "198.18.$r.$((k + 1))/24" dev "eth$r"
    ip -n "$host_ns" link set "eth$r" up
    shape "$host_ns" "eth$r"
    shape "$bridge_ns" "$port_name"
  done
done
# With several rails the tcp provider must list every eth<r> (no FI_TCP_IFACE), and Plexus keeps
# to them (PLEXUS_FI_NICS) instead of loopback or the first interface.
rail_env=(FI_TCP_IFACE="${FI_TCP_IFACE:-eth0}" FI_SOCKETS_IFACE="${FI_SOCKETS_IFACE:-eth0}")
if [[ "$rails" -gt 1 ]]; then
  nics="eth0"
  for ((r = 1; r < rails; ++r)); do nics+=",eth$r"; done
  rail_env=(-u FI_TCP_IFACE -u FI_SOCKETS_IFACE PLEXUS_FI_NICS="${PLEXUS_FI_NICS:-$nics}")
fi

run_dir=$(mktemp -d "/tmp/${run_id}.XXXXXX")
# Compute threads per rank by topology::threads_per_rank's rule (physical cores over the ranks
# sharing them, at least 1), with every emulated host on this one machine: the usable hardware
# threads over the threads per core, over the whole world.
cores=$(nproc 2>/dev/null || echo 1)
smt=$(lscpu 2>/dev/null | awk -F: '/^Thread\(s\) per core/ { gsub(/ /, "", $2); print $2 }')
[[ "$smt" =~ ^[1-9][0-9]*$ ]] && cores=$(( cores / smt ))
threads=$(( cores / world )); [[ "$threads" -ge 1 ]] || threads=1
echo "emulated-cluster: ${hosts} hosts (${per_host[*]} ranks), ${rails} rail(s), rate ${rate}," \
     "namespaces ${run_id}h0..${run_id}h$((hosts - 1)), bridge in ${bridge_ns}" >&2

# ---------------------------------------------------------------------------------------------
# The ranks: each a session of its own (setsid), started by pid; output through a prefixer.
prefix_lines() {  # prefix_lines RANK: copies stdin line by line with "[RANK] "
  if [[ "$prefix" == 1 ]]; then sed -u "s/^/[$1] /"; else cat; fi
}

declare -A rank_of_pid=()
rank=0
for ((k = 0; k < hosts; ++k)); do
  for ((l = 0; l < per_host[k]; ++l)); do
    ip netns exec "${run_id}h$k" setsid env "${rail_env[@]}" \
      PLEXUS_RANK="$rank" PLEXUS_WORLD_SIZE="$world" \
      PLEXUS_LOCAL_RANK="$l" PLEXUS_LOCAL_WORLD_SIZE="${per_host[k]}" \
      PLEXUS_MASTER_ADDR=198.18.0.1 PLEXUS_MASTER_PORT="$port" \
      PLEXUS_HOST_ID="host$k" \
      PLEXUS_FI_PROVIDER="${PLEXUS_FI_PROVIDER:-tcp}" \
      UCX_NET_DEVICES="${UCX_NET_DEVICES:-eth0}" \
      PLEXUS_CACHE_DIR="${PLEXUS_CACHE_DIR:-$run_dir/cache}" \
      OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-$threads}" \
      OMP_NUM_THREADS="${OMP_NUM_THREADS:-$threads}" \
      "$@" </dev/null > >(prefix_lines "$rank") 2> >(prefix_lines "$rank" >&2) &
    rank_pids+=("$!")
    rank_of_pid[$!]=$rank
    rank=$((rank + 1))
  done
done

# Waits without spinning: `wait -n` on the ranks and one timer process, which the script also
# started. After a failure the timer is replaced by a 15 s grace timer.
sleep "$timeout_s" >/dev/null 2>&1 & timer=$!
status=0
failed_rank=""
timed_out=0
left=$world
while [[ "$left" -gt 0 ]]; do
  waiting=()
  for pid in "${rank_pids[@]}"; do [[ -n "${done_pid[$pid]:-}" ]] || waiting+=("$pid"); done
  finished=""
  rc=0
  # A rank that bash has already reaped (it ended while the script was busy) is not reported by
  # `wait -n` again: collect it by its pid (bash keeps its status) instead of waiting for the timer.
  for pid in "${waiting[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      finished=$pid
      wait "$pid" 2>/dev/null || rc=$?
      break
    fi
  done
  [[ -n "$finished" ]] || wait -n -p finished "${waiting[@]}" "$timer" || rc=$?
  if [[ -z "$finished" ]]; then  # nothing left to wait for (a trapped signal exits in on_signal)
    [[ "$rc" == 127 ]] && break
    continue
  fi
  if [[ "$finished" == "$timer" ]]; then
    if [[ -z "$failed_rank" ]]; then
      echo "emulated-cluster: timeout after ${timeout_s} s; stopping $left rank(s)" >&2
      timed_out=1
    else
      echo "emulated-cluster: $left rank(s) still running 15 s after rank $failed_rank failed;" \
           "stopping them" >&2
    fi
    stop_ranks
    timer=""
    break
  fi
  done_pid[$finished]=1
  left=$((left - 1))
  if [[ "$rc" -ne 0 && -z "$failed_rank" ]]; then
    failed_rank=${rank_of_pid[$finished]}
    status=$rc
    echo "emulated-cluster: rank $failed_rank exited with status $rc" >&2
    if [[ "$left" -gt 0 ]]; then
      kill "$timer" 2>/dev/null || true
      wait "$timer" 2>/dev/null || true
      sleep 15 >/dev/null 2>&1 & timer=$!
    fi
  fi
done
if [[ -n "$timer" ]]; then
  kill "$timer" 2>/dev/null || true
  wait "$timer" 2>/dev/null || true
fi
# Reap what was stopped, and give the prefixers up to 5 s to flush the last lines.
for pid in "${rank_pids[@]}"; do
  [[ -n "${done_pid[$pid]:-}" ]] || wait "$pid" 2>/dev/null || true
done
for ((i = 0; i < 50; ++i)); do pgrep -P $$ >/dev/null || break; sleep 0.1; done
if [[ "$timed_out" == 1 && "$status" == 0 ]]; then status=124; fi
if [[ "$rails" -gt 1 ]]; then  # what each rail carried (the kernel's counters of each eth<r>)
  for ((k = 0; k < hosts; ++k)); do
    for ((r = 0; r < rails; ++r)); do
      stats="/sys/class/net/eth$r/statistics"
      tx=$(ip netns exec "${run_id}h$k" cat "$stats/tx_bytes" 2>/dev/null || echo "?")
      rx=$(ip netns exec "${run_id}h$k" cat "$stats/rx_bytes" 2>/dev/null || echo "?")
      echo "emulated-cluster: host $k rail $r (eth$r): tx $tx bytes, rx $rx bytes" >&2
    done
  done
fi
exit "$status"
