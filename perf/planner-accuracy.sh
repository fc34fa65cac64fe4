#!/usr/bin/env bash
# planner-accuracy.sh - how close the placement planner's predictions (plexus-train --placement
# auto, docs/placement.md) come to what its chosen plan then measures, on this machine.
#
# For each of five model sizes on RANKS ranks (default 4) it runs three jobs: optimize speed with
# the default budget (the host's memory over its ranks), optimize speed with a budget of half
# that plan's predicted peak (so the planner must trade), and optimize memory. Each job trains
# STEPS steps (default 8) of its chosen plan with --memory-report and --metrics-file. It prints
# a Markdown table: the plan, its predicted and measured per-rank peak (the largest rank, device
# and host pools together, as --device cpu compares them with the budget) and step time (the
# median of the steps after the first two), and the errors. The issue's bounds: peaks within
# 15%, step times within 30%. Figures depend on the machine and its load; run it on an idle one.
#
# Usage: perf/planner-accuracy.sh [BUILD_DIR]   (default build; needs plexus-run, plexus-train
# and the plugins built, and data/moby_dick.txt: scripts/fetch-data.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RANKS=${RANKS:-4}
STEPS=${STEPS:-8}
DATA=${DATA:-data/moby_dick.txt}
[[ -x $BUILD/bin/plexus-train && -x $BUILD/bin/plexus-run ]] ||
  { echo "planner-accuracy: build $BUILD/bin/plexus-train and plexus-run first" >&2; exit 2; }
[[ -f $DATA ]] || { echo "planner-accuracy: no $DATA (scripts/fetch-data.sh)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# n_layer n_embd n_head seq_len batch
MODELS=("4 64 4 64 16" "6 128 4 128 16" "8 128 8 128 32" "4 256 8 128 32" "12 192 6 64 24")

# run NAME OPTIMIZE BUDGET(bytes or "") L C H T G: one job; prints its table row's fields.
run() {
  local name=$1 optimize=$2 budget=$3 L=$4 C=$5 H=$6 T=$7 G=$8
  local dir=$WORK/$name
  mkdir -p "$dir"
  local extra=()
  [[ -n $budget ]] && extra=(--memory-per-rank "$budget")
  timeout 900 "$BUILD/bin/plexus-run" -n "$RANKS" "$BUILD/bin/plexus-train" --data "$DATA" \
    --placement auto --optimize "$optimize" "${extra[@]}" --n-layer "$L" --n-embd "$C" \
    --n-head "$H" --seq-len "$T" --batch-size "$G" --steps "$STEPS" --val-every 0 \
    --checkpoint "" --log-every 1000 --metrics-file "$dir/metrics.jsonl" \
    --memory-report "$dir/memory{rank}.json" > "$dir/log" 2>&1 ||
    { echo "planner-accuracy: $name failed:" >&2; tail -5 "$dir/log" >&2; return 1; }
  python3 - "$dir" "$name" "$optimize" "$budget" <<'PY'
import glob, json, re, statistics, sys
d, name, optimize, budget = sys.argv[1:]
line = next(l for l in open(d + "/log") if "plexus-train: planned:" in l)
m = re.search(r"placement (\S+) microbatches (\d+) predicted_peak_bytes (\d+) "
              r"predicted_step_s ([0-9.]+)", line)
plan, mb, ppeak, pstep = m.group(1), int(m.group(2)), float(m.group(3)), float(m.group(4))
peak = 0
for f in glob.glob(d + "/memory*.json"):
    mem = json.load(open(f))["memory"]
    peak = max(peak, mem["device"]["peak_total"] + mem["host"]["peak_total"])
steps = [json.loads(l)["step_s"] for l in open(d + "/metrics.jsonl")][2:]
step = statistics.median(steps)
mib = lambda b: f"{b / 2**20:.2f} MiB"
budget_text = mib(float(budget)) if budget else "host / ranks"
print(f"| {name} | {optimize} | {budget_text} | `{plan}` M{mb} | {mib(ppeak)} | {mib(peak)} | "
      f"{100 * (ppeak - peak) / peak:+.1f}% | {pstep * 1e3:.1f} ms | {step * 1e3:.1f} ms | "
      f"{100 * (pstep - step) / step:+.1f}% |")
print(f"PEAK {ppeak:.0f}", file=open(d + "/peak", "w"))
PY
}

echo "| model (layers x dims x heads, seq, batch) | optimize | budget | chosen plan | predicted peak | measured peak | error | predicted step | measured step | error |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for model in "${MODELS[@]}"; do
  read -r L C H T G <<< "$model"
  name="${L}x${C}x${H}, ${T}, ${G}"
  run "$name" speed "" "$L" "$C" "$H" "$T" "$G"
  fast_peak=$(awk '{print $2}' "$WORK/$name/peak")
  run "$name " speed "$(( ${fast_peak%.*} / 2 ))" "$L" "$C" "$H" "$T" "$G"
  run "$name  " memory "" "$L" "$C" "$H" "$T" "$G"
done
echo
echo "$RANKS ranks on $(nproc) cores ($(uname -m)), $STEPS steps each, $(date -u +%Y-%m-%d)."
