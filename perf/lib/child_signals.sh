# shellcheck shell=bash
# child_signals.sh - sourced by the perf scripts that run scripts/emulated-cluster.sh one run at
# a time (emulated-cluster-bench.sh, simulator-validation.sh). SIGINT, SIGTERM and SIGHUP are
# passed on to the running child (by pid) as SIGTERM (a background job ignores SIGINT), which
# stops its ranks and removes its namespaces; the script then exits 130, 143 or 129.
#
#   CHILD_SIGNALS_NAME=my-script        # the name the message on a signal starts with
#   run_child LOG WHAT COMMAND [ARGS...]
#       COMMAND in the background, stdout and stderr to LOG, waited for; its status in $child_rc.
#       Status 77 (the machine cannot emulate a cluster) prints LOG and exits 77; another failure
#       prints "# WHAT failed (status N):" and LOG's last lines, and returns 1.

child=""
child_rc=0
on_signal() {
  trap '' INT TERM HUP
  echo "${CHILD_SIGNALS_NAME:-perf}: $1 received; stopping the emulated cluster" >&2
  if [[ -n "$child" ]]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  exit "$2"
}
trap 'on_signal SIGINT 130' INT
trap 'on_signal SIGTERM 143' TERM
trap 'on_signal SIGHUP 129' HUP

run_child() {
  local log=$1 what=$2
  shift 2
  child_rc=0
  # In the background and waited for, so that a signal reaches on_signal at once.
  "$@" > "$log" 2>&1 &
  child=$!
  wait "$child" || child_rc=$?
  child=""
  if [[ "$child_rc" == 77 ]]; then cat "$log" >&2; exit 77; fi
  if [[ "$child_rc" != 0 ]]; then
    echo "# $what failed (status $child_rc):" >&2
    tail -20 "$log" >&2
    return 1
  fi
}
