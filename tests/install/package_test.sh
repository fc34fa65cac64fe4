#!/usr/bin/env bash
# package_test.sh - builds the Debian packages with scripts/package.sh (a CPU-only build of its
# own in PACKAGE_BUILD_DIR), checks what `dpkg-deb -c` lists and what `dpkg-deb -I` says each
# package depends on, extracts all of them into a temporary root (`dpkg-deb -x`) and runs the
# extracted plexus-info, plexus-run and plexus-train (2 ranks, a few steps of the main job's
# training) and the NumPy binding from there, with no PLEXUS_PLUGIN_PATH or LD_LIBRARY_PATH.
# Usage: package_test.sh SOURCE_DIR PACKAGE_BUILD_DIR TEXT_FILE
set -euo pipefail
source_dir=$(cd "$1" && pwd)
package_build=$2
text=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
tmp=$(mktemp -d /tmp/plexus-package-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -s $text ]] || fail "no training text at $text (scripts/fetch-data.sh fetches it)"

DEB_BUILD_DIR=$package_build "$source_dir/scripts/package.sh" >"$tmp/package.log" 2>&1 || {
  tail -50 "$tmp/package.log"; fail "scripts/package.sh"; }
version=0.1.0
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
lib=usr/lib/$multiarch
deb() {  # python3-plexus holds only Python files: Architecture all
  if [[ $1 == python3-plexus ]]; then echo "$package_build/${1}_${version}_all.deb"
  else echo "$package_build/${1}_${version}_${arch}.deb"; fi
}
for p in libplexus0 libplexus-dev plexus-tools python3-plexus; do
  [[ -s $(deb "$p") ]] || fail "scripts/package.sh made no $(deb "$p")"
done

contents() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | sed 's|^\./||'; }
expect_files() {  # package path...
  local package=$1 listing
  shift
  listing=$(contents "$package")
  for path in "$@"; do
    grep -qx "$path" <<<"$listing" || { echo "$listing"; fail "$package lacks $path"; }
  done
}
expect_files libplexus0 "$lib/libplexus.so.0" "$lib/libplexus.so.0.1.0" \
  "$lib/plexus/plugins/libplexus_plugin_D.so" "$lib/plexus/plugins/libplexus_plugin_P.so" \
  "$lib/plexus/plugins/libplexus_plugin_T.so" "$lib/plexus/plugins/libplexus_plugin_zero1.so"
expect_files libplexus-dev usr/include/plexus/plexus.h usr/include/plexus/plugin.h \
  "$lib/libplexus.so" "$lib/cmake/Plexus/PlexusConfig.cmake" \
  "$lib/cmake/Plexus/PlexusConfigVersion.cmake" "$lib/pkgconfig/plexus.pc" \
  usr/share/doc/plexus/c-abi.md
expect_files plexus-tools usr/bin/plexus-run usr/bin/plexus-train usr/bin/plexus-bench \
  usr/bin/plexus-info
expect_files python3-plexus usr/lib/python3/dist-packages/plexus/__init__.py
# The library is only in libplexus0, the headers only in libplexus-dev.
contents plexus-tools | grep -q "libplexus.so" && fail "plexus-tools carries a copy of libplexus"
contents libplexus0 | grep -q "include/" && fail "libplexus0 carries headers"
echo "dpkg-deb -c: layout ok"

depends() { dpkg-deb -f "$(deb "$1")" Depends; }
expect_depends() {  # package dependency...
  local package=$1 line
  shift
  line=$(depends "$package")
  for dep in "$@"; do
    grep -qE "(^|, )$dep( |,|$)" <<<"$line" || fail "$package: Depends '$line' lacks $dep"
  done
  echo "$package Depends: $line"
}
expect_depends libplexus0 libfabric1 libucx0 libhwloc15 libssl3 libfmt9 libstdc\\+\\+6 libc6
expect_depends libplexus-dev "libplexus0 \\(= $version\\)"
expect_depends plexus-tools "libplexus0 \\(= $version\\)" libopenblas0 libhwloc15
expect_depends python3-plexus "libplexus0 \\(= $version\\)" python3-numpy
[[ $(dpkg-deb -f "$(deb libplexus0)" Section) == libs ]] || fail "libplexus0 is not in section libs"
# DEBIAN/shlibs, for dpkg-shlibdeps of packages that link -lplexus.
dpkg-deb -e "$(deb libplexus0)" "$tmp/control"
[[ $(cat "$tmp/control/shlibs" 2>/dev/null) == "libplexus 0 libplexus0 (>= $version)" ]] ||
  fail "libplexus0's DEBIAN/shlibs is '$(cat "$tmp/control/shlibs" 2>/dev/null)'"
for p in libplexus0 libplexus-dev plexus-tools python3-plexus; do
  [[ $(dpkg-deb -f "$(deb "$p")" Description | head -1) != "$(dpkg-deb -f "$(deb libplexus0)" \
       Description | head -1)" || $p == libplexus0 ]] || fail "$p has libplexus0's synopsis"
done
echo "dpkg-deb -I: dependencies ok"

root=$tmp/root
for p in libplexus0 libplexus-dev plexus-tools python3-plexus; do dpkg-deb -x "$(deb "$p")" "$root"; done
root=$(cd "$root" && pwd -P)
clean_env=(env -u PLEXUS_PLUGIN_PATH -u LD_LIBRARY_PATH -u PYTHONPATH)
info=$("${clean_env[@]}" "$root/usr/bin/plexus-info")
grep -qx "plugins: D P T ckpt offload zero1 zero2 zero3" <<<"$info" || fail "plexus-info: $info"
grep -qF "plugin path: $root/$lib/plexus/plugins" <<<"$info" ||
  fail "the extracted plexus-info does not look beside its libplexus: $info"
echo "extracted plexus-info finds the plugins in $root/$lib/plexus/plugins"

cd "$tmp"
out=$(timeout 300 "${clean_env[@]}" "$root/usr/bin/plexus-run" -n 2 -- "$root/usr/bin/plexus-train" \
  --placement D2+zero1 --data "$text" --steps 4 --checkpoint "$tmp/run.ckpt" 2>&1) || {
  echo "$out"; fail "the extracted plexus-run and plexus-train"; }
grep -qE "step +4/4 \| loss [0-9.]+" <<<"$out" || { echo "$out"; fail "training did not reach step 4"; }
grep -q "validation loss" <<<"$out" || { echo "$out"; fail "no validation loss"; }
[[ -s $tmp/run.ckpt ]] || fail "no checkpoint at $tmp/run.ckpt"
echo "extracted plexus-run + plexus-train (D2+zero1, 4 steps): ok"
grep -E "step +4/4" <<<"$out"

out=$("${clean_env[@]}" PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c '
import numpy as np, plexus
print(plexus.__file__)
with plexus.Communicator.from_env() as comm:
    x = np.arange(5, dtype=np.float32)
    print(comm.size, comm.allreduce(x).tolist())
' 2>&1) || { echo "$out"; fail "the extracted NumPy binding"; }
grep -qx "$root/usr/lib/python3/dist-packages/plexus/__init__.py" <<<"$out" ||
  { echo "$out"; fail "python imported another plexus package"; }
grep -qx "1 \[0.0, 1.0, 2.0, 3.0, 4.0\]" <<<"$out" || { echo "$out"; fail "NumPy allreduce"; }
echo "extracted NumPy binding: ok"
echo "package test passed"
