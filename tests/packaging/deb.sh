#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages (debian/): build them from a copy of the source tree
# with dpkg-buildpackage -us -uc -b, check them with lintian --fail-on
# error, unpack them into a temporary root, and build and run consumers
# against that root only: the C and C++ consumers through pkg-config, shared
# and static (-static, from libbreaker-dev's archives, with exactly what
# pkg-config --static prints, for breaker and breaker-redis), the
# integration examples through pkg-config (breaker-curl, breaker-pq) and
# through find_package(breaker COMPONENTS curl pq) in CMake. The tool runs
# from the root too, and every function resolves with man -w in its manual
# pages. The packaged .pc files say prefix=/usr (plain system
# paths, which pkg-config leaves out of its output); the consumers use a
# copy of them pointed at the root.
#
# Usage: deb.sh SOURCE_DIR [WORK_DIR]    (WORK_DIR: kept for inspection;
#                                          default a temporary directory)
set -euo pipefail
src=$(cd "$1" && pwd)
if [ -n "${2:-}" ]; then
  rm -rf "$2"
  mkdir -p "$2"
  work=$(cd "$2" && pwd) # dpkg-buildpackage runs elsewhere: an absolute path
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
symbols_status=0
if grep -q "dpkg-gensymbols: warning: some new symbols" "$work/build.log"; then
  echo "FAIL: new exported functions: add them to debian/*.symbols (tests/packaging/symbols.sh):"
  grep -E '^\+ [a-z_0-9]+@Base' "$work/build.log" || true
  symbols_status=1
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
status=$symbols_status
expect() { # expect FILE PATTERN: FILE exists in the root
  [ -e "$root/$1" ] || { echo "FAIL: no $1 in the packages"; status=1; }
}
expect usr/include/breaker.h
expect usr/include/breaker/curl.h
expect usr/include/breaker/pq.h
expect usr/include/breaker/grpc.h
expect usr/lib/$multiarch/libbreaker.so
dev_files=$(dpkg-deb -c "$work"/libbreaker-dev_*.deb)
for l in breaker breaker_redis breaker_curl breaker_pq; do
  expect usr/lib/$multiarch/lib$l.a
  # The archives are libbreaker-dev's.
  echo "$dev_files" | grep "/usr/lib/$multiarch/lib$l\.a\$" >/dev/null ||
    { echo "FAIL: lib$l.a is not in libbreaker-dev"; status=1; }
done
for pc in breaker breaker-redis breaker-curl breaker-pq; do
  expect usr/lib/$multiarch/pkgconfig/$pc.pc
done
expect usr/lib/$multiarch/cmake/breaker/breakerConfig.cmake
expect usr/bin/breaker
expect usr/share/man/man1/breaker.1.gz
expect usr/share/man/man3/breaker.3.gz
expect usr/share/bash-completion/completions/breaker

echo "== the packaged .pc files: plain system paths"
for pc in "$lib"/pkgconfig/*.pc; do
  grep -q '^prefix=/usr$' "$pc" || { echo "FAIL: $(basename "$pc"): prefix is not /usr"; status=1; }
  if grep -q -e 'pcfiledir' -e '\.\.' "$pc"; then
    echo "FAIL: $(basename "$pc") is relative to its own place:"
    cat "$pc"
    status=1
  fi
done
# Installed in /usr, the include and library directories are the system's:
# pkg-config prints neither (it printed
# -I/usr/lib/<triplet>/pkgconfig/../../../include).
out=$(PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR= pkg-config --cflags breaker)
[ -z "$(echo "$out" | tr -d ' ')" ] || { echo "FAIL: pkg-config --cflags breaker: '$out'"; status=1; }
for pc in breaker-redis breaker-curl breaker-pq; do
  grep -q '^Requires: breaker = ' "$lib/pkgconfig/$pc.pc" ||
    { echo "FAIL: $pc.pc does not require breaker"; status=1; }
done
grep -q '^Requires.private: hiredis$' "$lib/pkgconfig/breaker-redis.pc" || { echo "FAIL: breaker-redis.pc"; status=1; }
grep -q '^Requires.private: libcurl$' "$lib/pkgconfig/breaker-curl.pc" || { echo "FAIL: breaker-curl.pc"; status=1; }
grep -q '^Requires.private: libpq$' "$lib/pkgconfig/breaker-pq.pc" || { echo "FAIL: breaker-pq.pc"; status=1; }

# The same files, pointed at the temporary root rather than /usr.
pcroot=$work/pkgconfig-root
mkdir -p "$pcroot"
for pc in "$lib"/pkgconfig/*.pc; do
  sed "s|^prefix=/usr\$|prefix=$root/usr|" "$pc" >"$pcroot/$(basename "$pc")"
done
export PKG_CONFIG_PATH=$pcroot

echo "== consumers through pkg-config: shared"
flags=$(pkg-config --cflags --libs breaker)
cc -std=c11 -Wall -Wextra -Werror "$src/tests/packaging/consumer.c" $flags -o "$work/consumer_c"
"$work/consumer_c" || status=1
c++ -std=c++17 -Wall -Wextra -pedantic -Werror "$src/tests/cpp/consumer.cpp" $flags -o "$work/consumer_cpp"
"$work/consumer_cpp" || status=1
cc -std=c11 -Wall -Wextra -Werror "$src/examples/curl_get.c" \
  $(pkg-config --cflags --libs breaker-curl libcurl) -o "$work/curl_get_pc" || status=1
cc -std=c11 -Wall -Wextra -Werror "$src/examples/pq_query.c" \
  $(pkg-config --cflags --libs breaker-pq libpq) -o "$work/pq_query_pc" || status=1
for bin in consumer_c curl_get_pc pq_query_pc; do
  # (grep without -q: under pipefail, a grep that stops early fails ldd.)
  ldd "$work/$bin" | grep "libbreaker\.so.* => $lib/" >/dev/null ||
    { echo "FAIL: $bin: not the root's libbreaker.so"; status=1; }
done

echo "== consumers through pkg-config --static: linked -static from libbreaker-dev's archives"
# Exactly the flags pkg-config --static prints, in its order: a static link
# takes each library once, left to right, so a wrong order fails here.
for want in "breaker consumer.c" "breaker-redis consumer-redis/consumer_redis.c"; do
  set -- $want
  flags=$(pkg-config --cflags --libs --static "$1")
  echo "  pkg-config --libs --static $1: $(echo "$flags" | sed "s|$root|ROOT|g")"
  out=$work/static_$(basename "$2" .c)
  if cc -std=c11 -Wall -Wextra -Werror -static "$src/tests/packaging/$2" $flags -o "$out" \
    2>"$work/static.log"; then
    # Linker notes about getaddrinfo or dlopen in a static glibc program are
    # not errors; the program must be static and run.
    file "$out" | grep 'statically linked' >/dev/null || { echo "FAIL: $out is not static"; status=1; }
    "$out" >/dev/null || { echo "FAIL: $out does not run"; status=1; }
  else
    cat "$work/static.log"
    echo "FAIL: a static consumer of $1 does not link with pkg-config --static's flags"
    status=1
  fi
done

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
echo "$out" | grep '^REJECTED_OPEN curl=-1' >/dev/null || { echo "FAIL: curl_get did not open"; status=1; }
# Each binary resolves its libraries from the root, not from a build tree.
for bin in "$proj/build/curl_get" "$proj/build/pq_query" "$root/usr/bin/breaker"; do
  ldd "$bin" | grep -E 'libbreaker' | grep -v "$lib" && { echo "FAIL: $bin uses a libbreaker outside the root"; status=1; }
done

echo "== every function's manual page, from the packages (man -w)"
bash "$src/man/check_manuals.sh" links none "$root/usr/share/man" \
  "$root/usr/include/breaker.h" "$root"/usr/include/breaker/*.h || status=1

echo "== the tool"
"$root/usr/bin/breaker" --help >/dev/null || { echo "FAIL: breaker --help"; status=1; }

[ $status -eq 0 ] && echo "deb: all checks passed"
exit $status
