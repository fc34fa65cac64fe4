#!/usr/bin/env bash
# train-moby-dick.sh - the README's main job: set up, fetch Moby-Dick, train a small GPT on it
# with 4 data-parallel processes over Plexus's own allreduce (placement D4), draw its loss and
# tokens/s against step (checkpoints/moby_dick_loss.png, with gnuplot), then sample from it.
# Extra arguments go to plexus-train (e.g. --steps 200).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --main-job
scripts/fetch-data.sh
BIN=${BUILD_DIR:-build}/bin
CKPT=checkpoints/moby_dick.ckpt
mkdir -p checkpoints  # --plot wants its folder to exist before training starts
"$BIN/plexus-run" -n 4 -- "$BIN/plexus-train" --placement D4 --data data/moby_dick.txt \
  --checkpoint "$CKPT" --plot checkpoints/moby_dick_loss.png --time-limit 600 "$@"
echo
echo "=== Sampling from $CKPT ==="
"$BIN/plexus-train" --sample --checkpoint "$CKPT" --prompt "Call me Ishmael. " --tokens 500 \
  --temperature 0.8
