#!/usr/bin/env bash
# compare-torch.sh - torch.distributed on Plexus beside Gloo (perf/torch/torch_bench.py).
#
#   perf/torch/compare-torch.sh [--quick] [--out OUT.txt] [torch_bench.py options ...]
#
#   --quick     a one-minute look: -f 4 -n 10 -w 2 --lat-iters 500
#   --out FILE  also write the whole output to FILE
#   (default)   the full sweep: 4 KiB..64 MiB by 2, 2 and 4 ranks, -n 20 -w 5, 2 rounds,
#               2000-call 4 KiB all_reduce latency, summary also as Markdown
#
# Runs /usr/bin/python3 (a python with torch; override with PYTHON=...) with
# PYTHONPATH=BUILD_DIR/python (default build/, where the build puts plexus_torch).
# Exit status: torch_bench.py's (0 all worlds finished with no wrong element, 1 otherwise,
# 2 bad usage or plexus_torch missing).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
python=${PYTHON:-/usr/bin/python3}
preset=(-r 2 --markdown)
out=""
args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) preset=(-f 4 -n 10 -w 2 --lat-iters 500); shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
               "$python" "$here/torch_bench.py" --help; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ ! -d $build_dir/python/plexus_torch ]]; then
  echo "compare-torch.sh: $build_dir/python/plexus_torch not built (BUILD_DIR=...)" >&2
  exit 2
fi
"$python" -c 'import torch' 2>/dev/null || {
  echo "compare-torch.sh: $python has no torch (PYTHON=...)" >&2; exit 2; }
export PYTHONPATH=$build_dir/python${PYTHONPATH:+:$PYTHONPATH}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
cmd=("$python" "$here/torch_bench.py" "${preset[@]}" "${args[@]}")
if [[ -n $out ]]; then
  "${cmd[@]}" | tee "$out"
  exit "${PIPESTATUS[0]}"
fi
exec "${cmd[@]}"
