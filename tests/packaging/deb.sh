#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages (debian/): build them from a copy of the source tree
# with dpkg-buildpackage -us -uc -b, check them with lintian --fail-on
# error, unpack them into a temporary root, and build and run consumers
# against that root only: the C and C++ consumers through pkg-config, and
# the integration examples through find_package(breaker COMPONENTS curl pq)
# in CMake. The tool runs from the root too.
#
# Usage: deb.sh SOURCE_DIR [WORK_DIR]    (WORK_DIR: kept for inspection;
#                                          default a temporary directory)
set -euo pipefail
src=$(cd "$1" && pwd)
if [ -n "${2:-}" ]; then
  work=$2
  rm -rf "$work"
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
for tool in dpkg-buildpackage dh lintian; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not found (scripts/deps/check/debian.txt)"; exit 1; }
done

# The tree as git sees it (tracked and untracked, not ignored): no build
# directories. The packages land beside it, in $work.
tree=$work/breaker-0.1.0
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$src" ls-files -co --exclude-standard -z | (cd "$src" && xargs -0 tar cf - --no-recursion) |
    tar xf - -C "$tree"
else
  (cd "$src" && tar cf - --exclude=./build .) | tar xf - -C "$tree"
fi

echo "== dpkg-buildpackage -us -uc -b"
start=$(date +%s)
(cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=${JOBS:-2}" \
  dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
  tail -60 "$work/build.log"
  echo "FAIL: dpkg-buildpackage (log: $work/build.log)"
  exit 1
}
echo "built in $(($(date +%s) - start)) s:"
# A function added to a library and not yet to its debian/*.symbols file:
# the build warns (a function that disappears fails it). Show it here.
if grep -q "dpkg-gensymbols: warning: some new symbols" "$work/build.log"; then
  echo "NOTE: new exported functions: add them to debian/*.symbols:"
  grep -E '^\+ [a-z_0-9]+@Base' "$work/build.log" || true
fi
(cd "$work" && ls -1 ./*.deb)

echo "== lintian --fail-on error"
lintian --fail-on error --no-tag-display-limit "$work"/*.changes || {
  echo "FAIL: lintian reports errors"
  exit 1
}

echo "== unpack into a temporary root"
root=$work/root
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$root"; done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=$root/usr/lib/$multiarch
export LD_LIBRARY_PATH=$lib
status=0
expect() { # expect FILE PATTERN: FILE exists in the root
  [ -e "$root/$1" ] || { echo "FAIL: no $1 in the packages"; status=1; }
}
expect usr/include/breaker.h
expect usr/include/breaker/curl.h
expect usr/include/breaker/pq.h
expect usr/include/breaker/grpc.h
expect usr/lib/$multiarch/libbreaker.so
expect usr/lib/$multiarch/pkgconfig/breaker.pc
expect usr/lib/$multiarch/cmake/breaker/breakerConfig.cmake
expect usr/bin/breaker
expect usr/share/man/man1/breaker.1.gz
expect usr/share/man/man3/breaker.3.gz
expect usr/share/bash-completion/completions/breaker

echo "== consumers through pkg-config"
export PKG_CONFIG_PATH=$lib/pkgconfig
flags=$(pkg-config --cflags --libs breaker)
cc -std=c11 -Wall -Wextra -Werror "$src/tests/packaging/consumer.c" $flags -o "$work/consumer_c"
"$work/consumer_c" || status=1
c++ -std=c++17 -Wall -Wextra -pedantic -Werror "$src/tests/cpp/consumer.cpp" $flags -o "$work/consumer_cpp"
"$work/consumer_cpp" || status=1

echo "== the integration examples through find_package(breaker COMPONENTS curl pq)"
proj=$work/examples
mkdir -p "$proj"
cp "$src/examples/curl_get.c" "$src/examples/pq_query.c" "$src/examples/grpc_status.c" "$proj/"
cat >"$proj/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(consumer_examples C)
find_package(breaker 0.1 REQUIRED COMPONENTS curl pq)
find_package(PkgConfig REQUIRED)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(PQ REQUIRED IMPORTED_TARGET libpq)
add_executable(grpc_status grpc_status.c)
target_link_libraries(grpc_status PRIVATE breaker::breaker)
add_executable(curl_get curl_get.c)
target_link_libraries(curl_get PRIVATE breaker::curl PkgConfig::CURL)
add_executable(pq_query pq_query.c)
target_link_libraries(pq_query PRIVATE breaker::pq PkgConfig::PQ)
CMAKE
cmake -S "$proj" -B "$proj/build" -DCMAKE_PREFIX_PATH="$root/usr" >"$work/cmake.log" 2>&1 &&
  cmake --build "$proj/build" >>"$work/cmake.log" 2>&1 || {
  cat "$work/cmake.log"
  echo "FAIL: the examples do not build against the packages"
  exit 1
}
"$proj/build/grpc_status" | grep -E "^UNAVAILABLE +failure" >/dev/null || { echo "FAIL: grpc_status"; status=1; }
# Port 1 on the loopback: nothing listens, connections are refused.
out=$("$proj/build/curl_get" http://127.0.0.1:1/ 4)
echo "$out"
echo "$out" | grep -q '^REJECTED_OPEN curl=-1' || { echo "FAIL: curl_get did not open"; status=1; }
# Each binary resolves its libraries from the root, not from a build tree.
for bin in "$proj/build/curl_get" "$proj/build/pq_query" "$root/usr/bin/breaker"; do
  ldd "$bin" | grep -E 'libbreaker' | grep -v "$lib" && { echo "FAIL: $bin uses a libbreaker outside the root"; status=1; }
done

echo "== the tool"
"$root/usr/bin/breaker" --help >/dev/null || { echo "FAIL: breaker --help"; status=1; }

[ $status -eq 0 ] && echo "deb: all checks passed"
exit $status
