#!/bin/sh
# Install lull from a build tree into a scratch prefix, then build and run
# tests/consumer as an outside project would: with CMake's find_package(lull)
# and with the Makefile (pkg-config lull).
#
#   check-package.sh BUILD_DIR WORK_DIR CONSUMER_SRC_DIR
set -eu
build=$1
work=$2
src=$3

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"

pc=$(find "$prefix" -name lull.pc | head -n 1)
lib=$(find "$prefix" -name 'liblull.so*' | head -n 1)
[ -n "$pc" ] || { echo "check-package: lull.pc was not installed" >&2; exit 1; }
[ -n "$lib" ] || { echo "check-package: liblull.so was not installed" >&2; exit 1; }
# Built with USDT probes (sys/sdt.h found): the installed library carries
# every probe doc/observability.md lists (issue 12).
if command -v readelf >/dev/null 2>&1 && readelf -n "$build/lib/liblull.so" 2>/dev/null | grep -q 'Provider: lull'; then
    echo "== USDT probes of the installed library"
    sh "$src/../usdt_probes.sh" "$src/../../doc/observability.md" "$lib"
fi

LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

echo "== CMake consumer (find_package(lull))"
cmake -S "$src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake-configure.log"
cmake --build "$work/cmake-build"
(cd "$work/cmake-build" && ctest --output-on-failure --no-tests=error)

echo "== Makefile consumer (pkg-config lull)"
mkdir -p "$work/make-build"
cp "$src/bad_input.c" "$src/torture.c" "$src/handles.c" "$src/Makefile" "$work/make-build/"
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
make -C "$work/make-build"
(cd "$work/make-build" && ./bad_input && ./torture 2 && ./handles 20000)
echo "== consumer package: ok"
