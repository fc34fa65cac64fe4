#!/usr/bin/env bash
# install_test.sh - `cmake --install` into a temporary prefix, moved afterwards (an install must
# be relocatable), then, outside the tree: the layout (comm/install/install.cmake), each public
# header compiled alone as C99 and as C++17, and two consumers of tests/install/consumer/
# allreduce_check.c, one built by CMake with find_package(Plexus) and one by the C compiler with
# `pkg-config --cflags --libs plexus`, each run as 2 ranks by the installed plexus-run.
# Usage: install_test.sh BUILD_DIR LIBDIR   (LIBDIR: CMAKE_INSTALL_LIBDIR, e.g. lib)
set -euo pipefail
build=$(cd "$1" && pwd)
libdir=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/plexus-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/stage" >"$tmp/install.log" || {
  cat "$tmp/install.log"; fail "cmake --install $build"; }
mv "$tmp/stage" "$tmp/prefix"
prefix=$(cd "$tmp/prefix" && pwd -P)
echo "installed into $tmp/stage, moved to $prefix"

for path in include/plexus/plexus.h include/plexus/plugin.h \
    "$libdir/libplexus.so" "$libdir/libplexus.so.0" "$libdir/libplexus.so.0.1.0" \
    "$libdir/plexus/plugins/libplexus_plugin_D.so" "$libdir/plexus/plugins/libplexus_plugin_zero3.so" \
    "$libdir/cmake/Plexus/PlexusConfig.cmake" "$libdir/cmake/Plexus/PlexusConfigVersion.cmake" \
    "$libdir/cmake/Plexus/PlexusTargets.cmake" "$libdir/pkgconfig/plexus.pc" \
    bin/plexus-run bin/plexus-train bin/plexus-info share/doc/plexus/c-abi.md share/doc/plexus/README.md; do
  [[ -e $prefix/$path ]] || fail "the install lacks $path"
done
soname=$(readelf -d "$prefix/$libdir/libplexus.so.0.1.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == libplexus.so.0 ]] || fail "SONAME is '$soname', expected libplexus.so.0"
# No path of the build tree may leak into what was installed.
if grep -rlF "$build" "$prefix/$libdir/cmake" "$prefix/$libdir/pkgconfig"; then
  fail "the CMake or pkg-config files above name the build tree $build"
fi
info=$(env -u PLEXUS_PLUGIN_PATH "$prefix/bin/plexus-info")
grep -qx "plugins: D P T ckpt offload zero1 zero2 zero3" <<<"$info" ||
  fail "plexus-info from the install found other plugins: $info"
grep -qF "plugin path: $prefix/$libdir/plexus/plugins" <<<"$info" ||
  fail "plexus-info from the install does not search $prefix/$libdir/plexus/plugins: $info"
echo "layout, SONAME and plugin folder: ok"

for header in plexus.h plugin.h; do
  echo "#include <plexus/$header>" >"$tmp/alone.c"
  cp "$tmp/alone.c" "$tmp/alone.cpp"
  ${CC:-cc} -std=c99 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" \
    "$tmp/alone.c" || fail "$header does not compile alone as C99"
  ${CXX:-c++} -std=c++17 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only \
    -I"$prefix/include" "$tmp/alone.cpp" || fail "$header does not compile alone as C++17"
done
echo "headers alone as C99 and C++17: ok"

run_two_ranks() {  # name program
  local out
  out=$(timeout 120 env -u PLEXUS_PLUGIN_PATH "$prefix/bin/plexus-run" -n 2 -- "$2" 2>&1) || {
    echo "$out"; fail "$1: 2 ranks failed"; }
  for rank in 0 1; do
    grep -qF "rank $rank of 2: allreduce of 1000 float32 and int64 elements correct" <<<"$out" ||
      { echo "$out"; fail "$1: rank $rank did not report correct values"; }
  done
  echo "$1: 2 ranks correct"
}

cmake -S "$here/consumer" -B "$tmp/cmake-consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER_LAUNCHER= >"$tmp/consumer.log" 2>&1 || {
  cat "$tmp/consumer.log"; fail "configuring the find_package consumer"; }
grep -qF "Plexus 0.1.0 from $prefix/$libdir/cmake/Plexus, plugins in $prefix/$libdir/plexus/plugins" \
  "$tmp/consumer.log" || { cat "$tmp/consumer.log"; fail "find_package(Plexus) found another Plexus"; }
cmake --build "$tmp/cmake-consumer" >>"$tmp/consumer.log" 2>&1 || {
  cat "$tmp/consumer.log"; fail "building the find_package consumer"; }
run_two_ranks "find_package(Plexus) consumer" "$tmp/cmake-consumer/allreduce_check"

export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[[ $(pkg-config --modversion plexus) == 0.1.0 ]] || fail "pkg-config --modversion plexus"
pc_libdir=$(pkg-config --variable=libdir plexus)
[[ $(cd "$pc_libdir" && pwd -P) == $(cd "$prefix/$libdir" && pwd -P) ]] ||
  fail "plexus.pc's libdir $pc_libdir is not $prefix/$libdir"
# shellcheck disable=SC2046  # pkg-config prints several words
${CC:-cc} -std=c99 -Wall -Werror "$here/consumer/allreduce_check.c" -o "$tmp/pc-consumer" \
  $(pkg-config --cflags --libs plexus) -Wl,-rpath,"$pc_libdir" || fail "building the pkg-config consumer"
run_two_ranks "pkg-config consumer" "$tmp/pc-consumer"
echo "install test passed"
