#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-musl: the library and the breaker tool built statically with
# musl-gcc (as in an Alpine container), and the core, store-file and
# registry tests run against it.
# The tests need cmocka built for musl, which Debian does not ship: this
# script fetches Debian's source of cmocka (apt-get source, through a private
# sources list, so the machine's apt configuration is not changed) and builds
# it with musl-gcc into BUILD_DIR/cmocka, once. On musl the library runs the
# thread-owned stripes (no rseq registration: musl makes none), which
# test_cpu_stripes checks; test_no_alloc reports itself skipped (it counts
# allocations through glibc's allocator or a sanitizer's).
# Usage: scripts/check-musl.sh [BUILD_DIR]   (default build/musl)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(mkdir -p "${1:-build/musl}" && cd "${1:-build/musl}" && pwd)
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

./scripts/install-deps.sh musl

# ---- cmocka for musl, in a private prefix: static only (libcmocka.a).
prefix=$build/cmocka
if [ ! -f "$prefix/lib/libcmocka.a" ]; then
  src=$build/cmocka-src
  rm -rf "$src" "$prefix"
  mkdir -p "$src/apt/lists/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "http://deb.debian.org/debian bookworm main" >"$src/apt/sources.list"
  apt_src=(-o Dir::Etc::SourceList="$src/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$src/apt/lists")
  apt-get "${apt_src[@]}" update -qq
  (cd "$src" && apt-get "${apt_src[@]}" source -qq cmocka)
  tree=$(ls -d "$src"/cmocka-*/ | head -n1)
  CC=musl-gcc cmake -S "$tree" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DWITH_STATIC_LIB=ON \
    -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
  cmake --build "$src/build" -j "$jobs" >/dev/null
  cmake --install "$src/build" >/dev/null
  # A static link looks for libcmocka.a; cmocka installs it as libcmocka-static.a.
  rm -f "$prefix"/lib/libcmocka.so*
  ln -sf libcmocka-static.a "$prefix/lib/libcmocka.a"
fi

# ---- The library, the tool and the tests: static executables. pkg-config
# sees the musl cmocka only (the machine's other -dev packages are glibc's),
# also when the build step configures again.
export PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig
CC=musl-gcc cmake -S . -B "$build/breaker" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREAKER_WERROR=ON -DCMAKE_EXE_LINKER_FLAGS=-static \
  -DBREAKER_BUILD_EXAMPLES=OFF -DBREAKER_BUILD_BENCH=OFF
cmake --build "$build/breaker" -j "$jobs"
# What was built is what was meant: static, and against musl.
for exe in "$build/breaker/tools/breaker" "$build/breaker/tests/test_closed"; do
  if ! LC_ALL=C readelf -d "$exe" | grep -q 'no dynamic section'; then
    echo "check-musl: $exe is not a static executable" >&2
    exit 1
  fi
done
"$build/breaker/tools/breaker" --version
cd "$build/breaker"
ctest --output-on-failure -j "$jobs" -L 'area:(core|store|registry)$'
