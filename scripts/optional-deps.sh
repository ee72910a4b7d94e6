#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every optional dependency drops only its own feature. This builds the
# project with each one hidden in turn, then with all of them hidden at once,
# each build with -Werror, and runs `make demo` on each build, then the tests
# that only a build without some dependency has (ctest label "without"). .ci/run runs it
# first, every run, since the machine it runs on has every dependency.
# Usage: scripts/optional-deps.sh [NAME...]   (no NAME: each in turn, then all)
#        scripts/optional-deps.sh --list      (the names, one a line)
# The builds stay in build/without-NAME (build/without-all), so a second run
# only rebuilds what changed.
#
# How a dependency is hidden, on a machine that has it installed: CMake finds
# each one through pkg-config, so the build's pkg-config sees a directory of
# its own (PKG_CONFIG_LIBDIR) holding every module but the hidden one; and
# every header of its Debian package is shadowed, at its path under the
# system's include directories, by a header that is an #error. A source that
# includes one outside its feature's guard then fails as it would on a
# machine without the package. Nothing is uninstalled.
set -euo pipefail
cd "$(dirname "$0")/.."

# One line per optional dependency: a name, its pkg-config module, its Debian
# package (whose headers are shadowed), and the feature it brings (README.md's
# "Optional dependencies" table says the same, checked by tests/docs/).
optional=(
  "hiredis   hiredis        libhiredis-dev        the fleet store (libbreaker_redis) and the command's --redis options"
  "lua       lua5.1         liblua5.1-0-dev       the in-process Redis (src/store/redis/inproc/) and its tests"
  "libcurl   libcurl        libcurl4-openssl-dev  libbreaker_curl and the examples http_client and curl_get"
  "libpq     libpq          libpq-dev             libbreaker_pq and the example pq_query"
  "grpc      grpc++         libgrpc++-dev         the live test of include/breaker/grpc.hpp (the classifier needs none)"
  "microhttpd libmicrohttpd libmicrohttpd-dev     the example metrics_server"
  "jansson   jansson        libjansson-dev        the test that parses the JSON exports back"
  "cmocka    cmocka         libcmocka-dev         the unit tests"
)

if [ "${1:-}" = --list ]; then
  for row in "${optional[@]}"; do
    read -r name module pkg feature <<<"$row"
    printf '%s\t%s\t%s\t%s\n' "$name" "$module" "$pkg" "$feature"
  done
  exit 0
fi

multiarch=$(gcc -print-multiarch 2>/dev/null || true)
# The build's own architecture: a package may be installed for others too.
arch=$(dpkg --print-architecture)
system_includes=(/usr/include)
if [ -n "$multiarch" ]; then system_includes=("/usr/include/$multiarch" /usr/include); fi

# hide DIR ROW...: in DIR, pkgconfig/ with every module but the rows', and
# include/ with a failing copy of each header of the rows' packages.
hide() {
  local dir=$1
  shift
  rm -rf "$dir/pkgconfig" "$dir/include"
  mkdir -p "$dir/pkgconfig" "$dir/include"
  local hidden_modules=() row name module pkg feature
  for row in "$@"; do
    read -r name module pkg feature <<<"$row"
    hidden_modules+=("$module")
    # A package that is not installed is hidden already.
    dpkg-query -W -f='${Status}' "$pkg:$arch" 2>/dev/null | grep -q "install ok installed" || continue
    local header base rel
    while read -r header; do
      for base in "${system_includes[@]}"; do
        case "$header" in
        "$base"/*)
          rel=${header#"$base"/}
          mkdir -p "$dir/include/$(dirname "$rel")"
          printf '#error "%s is hidden from this build (scripts/optional-deps.sh): <%s>"\n' \
            "$name" "$rel" >"$dir/include/$rel"
          break
          ;;
        esac
      done
    done < <(dpkg -L "$pkg:$arch" | grep -E '\.(h|hpp|hh|inc)$' || true)
  done
  local pcdir pc
  IFS=: read -r -a pcdirs <<<"$(pkg-config --variable pc_path pkg-config)"
  for pcdir in "${pcdirs[@]}"; do
    for pc in "$pcdir"/*.pc; do
      [ -e "$pc" ] || continue
      local m
      m=$(basename "$pc" .pc)
      [ -e "$dir/pkgconfig/$m.pc" ] && continue # the first in the path wins
      if printf '%s\n' "${hidden_modules[@]}" | grep -qxF "$m"; then continue; fi
      ln -s "$pc" "$dir/pkgconfig/$m.pc"
    done
  done
}

# build_without LABEL ROW...: configure and build with the rows hidden, then
# make demo and the "without" tests on that build.
build_without() {
  local label=$1
  shift
  local build="build/without-$label" started=$SECONDS
  echo "== optional-deps: without $label"
  mkdir -p "$build"
  hide "$PWD/$build/hidden" "$@"
  # CFLAGS and CXXFLAGS seed the build's flags when it is first configured:
  # the failing headers come after the project's own -I and before the
  # system's directories.
  if ! env -u PKG_CONFIG_PATH PKG_CONFIG_LIBDIR="$PWD/$build/hidden/pkgconfig" \
    CFLAGS="-I$PWD/$build/hidden/include" CXXFLAGS="-I$PWD/$build/hidden/include" \
    make --no-print-directory demo BUILD="$build" CMAKE_FLAGS="-DBREAKER_WERROR=ON" \
    >"$build/log" 2>&1 ||
    ! (cd "$build" && ctest --output-on-failure -L without) >>"$build/log" 2>&1; then
    tail -n 60 "$build/log"
    echo "optional-deps: FAILED without $label (the whole log: $build/log)" >&2
    return 1
  fi
  # What the build said it left out, to show that the hiding worked.
  grep -E 'not found|not built' "$build/log" | sed 's/^-- /   /' || true
  echo "   configured, built (-Werror) and ran make demo in $((SECONDS - started)) s"
}

rows=()
if [ $# -eq 0 ]; then
  rows=("${optional[@]}")
else
  for want in "$@"; do
    found=
    for row in "${optional[@]}"; do
      read -r name _ <<<"$row"
      if [ "$name" = "$want" ]; then
        rows+=("$row")
        found=1
      fi
    done
    if [ -z "$found" ] && [ "$want" != all ]; then
      echo "optional-deps: no optional dependency '$want' (see --list)" >&2
      exit 2
    fi
  done
fi
failed=0
for row in "${rows[@]}"; do
  read -r name _ <<<"$row"
  build_without "$name" "$row" || failed=1
done
if [ $# -eq 0 ] || printf '%s\n' "$@" | grep -qxF all; then
  build_without all "${optional[@]}" || failed=1
fi
exit $failed
