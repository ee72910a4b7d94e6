#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every way a user consumes libbreaker, end to end, as ctest's test
# packaging_consumers:
#   1. build and install the library and the `breaker` tool twice, static and
#      shared, each into its own prefix (configured for another prefix, so
#      nothing may remember the configured one);
#   2. CMake find_package(breaker) from each prefix: a C and a C++ program;
#      and which requested versions the package accepts (0.x: same minor);
#   3. pkg-config from each prefix, linking with exactly the flags it prints,
#      also after the static tree was moved elsewhere (a relocatable .pc);
#      breaker-redis.pc too;
#   4. FetchContent (add_subdirectory) into a parent with no build type;
#   5. the installed `breaker` tool runs from the shared prefix, finding
#      libbreaker through its RUNPATH ($ORIGIN/../lib), and the SONAME is
#      libbreaker.so.MAJOR.MINOR while the major version is 0.
# Builds are kept in WORK_DIR and reused: a second run only rebuilds what
# changed.
# Usage: consumers.sh SOURCE_DIR WORK_DIR [C_COMPILER] [GENERATOR]
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
cc=${3:-cc}
gen=${4:-Unix Makefiles}
jobs=$(nproc 2>/dev/null || echo 2)
here=$src/tests/packaging
mkdir -p "$work"
work=$(cd "$work" && pwd)

# Sanitizer and test settings of the enclosing build must not leak in.
unset CFLAGS CXXFLAGS LDFLAGS PKG_CONFIG_PATH CMAKE_PREFIX_PATH
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

step() { printf '\n== %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
quiet() { # run a command, show its output only when it fails
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    fail "$*"
  fi
  rm -f "$log"
}

h=$src/include/breaker.h
major=$(sed -n 's/^#define BREAKER_VERSION_MAJOR \([0-9]*\)$/\1/p' "$h")
minor=$(sed -n 's/^#define BREAKER_VERSION_MINOR \([0-9]*\)$/\1/p' "$h")
patch=$(sed -n 's/^#define BREAKER_VERSION_PATCH \([0-9]*\)$/\1/p' "$h")
version=$major.$minor.$patch

# ---- 1. Two install trees.
for variant in static shared; do
  shared=OFF
  if [ $variant = shared ]; then shared=ON; fi
  step "build and install the $variant library and tool"
  quiet cmake -S "$src" -B "$work/build-$variant" -G "$gen" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=$shared \
    -DCMAKE_INSTALL_PREFIX=/nonexistent/configured-prefix \
    -DBREAKER_BUILD_TESTS=OFF -DBREAKER_BUILD_EXAMPLES=OFF -DBREAKER_BUILD_BENCH=OFF \
    -DBREAKER_BUILD_TOOLS=ON
  quiet cmake --build "$work/build-$variant" -j "$jobs"
  rm -rf "$work/prefix-$variant"
  quiet cmake --install "$work/build-$variant" --prefix "$work/prefix-$variant"
  (cd "$work/prefix-$variant" && find . -type f -o -type l | sort | sed 's/^/  /')
done
libdir_of() { # the install's library directory (lib, lib64 or lib/<triplet>)
  dirname "$(find "$1" -name 'breaker.pc' -path '*/pkgconfig/*')" | xargs dirname
}
[ -z "$(find "$work/prefix-static" -name 'libbreaker.so*')" ] || fail "static tree has a .so"
[ -z "$(find "$work/prefix-shared" -name 'libbreaker.a')" ] || fail "shared tree has a .a"

# ---- 2. CMake find_package().
for variant in static shared; do
  prefix=$work/prefix-$variant
  step "find_package(breaker $major.$minor) from the $variant prefix: C and C++"
  quiet cmake -S "$here/consumer-cmake" -B "$work/cmake-$variant" -G "$gen" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DBREAKER_WANT="$major.$minor"
  quiet cmake --build "$work/cmake-$variant" -j "$jobs"
  "$work/cmake-$variant/consumer_c"
  "$work/cmake-$variant/consumer_cpp"
done

# The fleet store, when the builds found hiredis: installed with its header
# and its export set (find_package(breaker COMPONENTS redis), breaker::redis);
# without hiredis neither is installed.
for variant in static shared; do
  prefix=$work/prefix-$variant
  if pkg-config --exists hiredis 2>/dev/null; then
    step "find_package(breaker COMPONENTS redis) from the $variant prefix"
    [ -n "$(find "$prefix" -name 'libbreaker_redis.*')" ] || fail "$variant tree has no libbreaker_redis"
    quiet cmake -S "$here/consumer-redis" -B "$work/redis-$variant" -G "$gen" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix"
    quiet cmake --build "$work/redis-$variant" -j "$jobs"
    "$work/redis-$variant/consumer_redis"
    if [ "$variant" = shared ]; then
      # Both shared libraries, and one libbreaker.so: the fleet store links
      # the core instead of carrying a copy of it.
      deps=$(env -u LD_LIBRARY_PATH ldd "$work/redis-$variant/consumer_redis")
      [ "$(echo "$deps" | grep -c 'libbreaker\.so')" = 1 ] || fail "consumer_redis: not one libbreaker.so"
      echo "$deps" | grep -q 'libbreaker_redis\.so' || fail "consumer_redis: no libbreaker_redis.so"
      [ -z "$(nm -D --defined-only "$prefix"/lib*/libbreaker_redis.so | grep -w 'breaker_acquire')" ] ||
        fail "libbreaker_redis.so defines breaker_acquire: a second copy of the core"
    fi
  else
    [ -z "$(find "$prefix" -name 'redis.h')" ] || fail "$variant tree has redis.h without its library"
  fi
done

step "find_package(breaker VERSION): which requests $version satisfies"
accepts() { # accepts REQUEST yes|no
  local out
  out=$(cmake -S "$here/consumer-version" -B "$work/version" -G "$gen" \
    -DCMAKE_PREFIX_PATH="$work/prefix-static" -DBREAKER_WANT="$1" 2>&1 | grep "breaker $1:") ||
    fail "no answer for $1"
  echo "  $out"
  case "$2:$out" in
    yes:*": FOUND $version") ;;
    no:*": NOT FOUND") ;;
    *) fail "find_package(breaker $1) should say $2 to $version" ;;
  esac
}
accepts "$major.$minor" yes
accepts "$version" yes
accepts "$major.$((minor + 1))" no
accepts "$((major + 1)).0" no
if [ "$major" -eq 0 ] && [ "$minor" -gt 0 ]; then
  # 0.x: a minor may break the ABI, so an older minor's request is refused.
  accepts "0.$((minor - 1)).1" no
fi
rm -rf "$work/version"

# ---- 3. pkg-config, with exactly the flags it prints.
pc_build() { # pc_build NAME PREFIX [extra link flags]: build and run consumer.c and consumer.cpp
  local name=$1 prefix=$2
  shift 2
  local pcdir cflags libs
  pcdir=$(libdir_of "$prefix")/pkgconfig
  cflags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags breaker)
  libs=$(PKG_CONFIG_PATH=$pcdir pkg-config --libs breaker)
  [ "$(PKG_CONFIG_PATH=$pcdir pkg-config --modversion breaker)" = "$version" ] ||
    fail "pkg-config --modversion is not $version"
  # The prefix pkg-config computes is the tree the file is in, wherever that is.
  [ "$(cd "$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=prefix breaker)" && pwd)" = \
    "$(cd "$prefix" && pwd)" ] || fail "pkg-config prefix is not $prefix"
  echo "  cflags: $cflags"
  echo "  libs:   $libs $*"
  # shellcheck disable=SC2086 # the flags are words
  "$cc" -std=c11 -Wall -Wextra -Werror "$here/consumer.c" $cflags $libs "$@" -o "$work/pc-$name"
  # shellcheck disable=SC2086
  c++ -std=c++17 -Wall -Wextra -pedantic -Werror "$src/tests/cpp/consumer.cpp" $cflags $libs \
    "$@" -o "$work/pc-$name-cpp"
  "$work/pc-$name"
  "$work/pc-$name-cpp"
}
step "pkg-config: the static prefix (pkg-config --libs alone must link it)"
pc_build static "$work/prefix-static"
step "pkg-config: the shared prefix"
pc_build shared "$work/prefix-shared" -Wl,-rpath,"$(libdir_of "$work/prefix-shared")"
# The fleet store's own .pc (breaker-redis: requires breaker, and hiredis
# publicly for a static library, privately for a shared one): its flags
# alone link a program that uses both libraries.
if pkg-config --exists hiredis 2>/dev/null; then
  for variant in static shared; do
    step "pkg-config breaker-redis: the $variant prefix"
    pcdir=$(libdir_of "$work/prefix-$variant")/pkgconfig
    flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs breaker-redis)
    echo "  flags: $flags"
    rpath=
    if [ $variant = shared ]; then rpath=-Wl,-rpath,$(libdir_of "$work/prefix-shared"); fi
    # shellcheck disable=SC2086 # the flags are words
    "$cc" -std=c11 -Wall -Wextra -Werror "$here/consumer-redis/consumer_redis.c" $flags $rpath \
      -o "$work/pc-redis-$variant"
    "$work/pc-redis-$variant"
  done
fi
step "pkg-config: the static prefix moved elsewhere after install"
rm -rf "$work/moved"
mkdir -p "$work/moved"
cp -a "$work/prefix-static" "$work/moved/somewhere-else"
pc_build moved "$work/moved/somewhere-else"
rm -rf "$work/moved"

# ---- 4. FetchContent / add_subdirectory, in a parent without a build type.
step "FetchContent: a parent project with no CMAKE_BUILD_TYPE"
quiet cmake -S "$here/consumer-fetchcontent" -B "$work/fetchcontent" -G "$gen" \
  -DCMAKE_C_COMPILER="$cc" -DBREAKER_SOURCE="$src"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/fetchcontent/CMakeCache.txt")
[ -z "$type" ] || fail "the parent's CMAKE_BUILD_TYPE became '$type'"
echo "  CMAKE_BUILD_TYPE stays empty; no tests, tools or examples of breaker's"
quiet cmake --build "$work/fetchcontent" -j "$jobs"
"$work/fetchcontent/consumer_c"

# ---- 5. The shared install's tool and SONAME.
step "the installed breaker tool runs from the shared prefix"
tool=$work/prefix-shared/bin/breaker
lib=$(libdir_of "$work/prefix-shared")
runpath=$(readelf -d "$tool" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p; s/.*(RPATH).*\[\(.*\)\]/\1/p')
echo "  RUNPATH: $runpath"
# shellcheck disable=SC2016 # a literal $ORIGIN
case "$runpath" in
  '$ORIGIN/'*) ;;
  *) fail "breaker has no \$ORIGIN-relative RUNPATH" ;;
esac
resolved=$(env -u LD_LIBRARY_PATH ldd "$tool" | sed -n 's/^[[:space:]]*libbreaker\.so[^ ]* => \([^ ]*\).*/\1/p')
echo "  libbreaker resolves to: $resolved"
if [ -z "$resolved" ] ||
  [ "$(cd "$(dirname "$resolved")" && pwd -P)" != "$(cd "$lib" && pwd -P)" ]; then
  fail "breaker does not load $lib's libbreaker"
fi
env -u LD_LIBRARY_PATH "$tool" --version
soname=$(readelf -d "$lib/libbreaker.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "  SONAME: $soname"
want=libbreaker.so.$major
if [ "$major" -eq 0 ]; then want=libbreaker.so.0.$minor; fi
[ "$soname" = "$want" ] || fail "SONAME is $soname, expected $want (docs/abi.md)"

step "packaging: every consumer built and ran"
