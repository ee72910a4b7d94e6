#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The public headers from C++: compile tests/cpp/consumer.cpp (every public
# header and the optional breaker/breaker.hpp) with g++ and with clang++ under
# -std=c++17 -Wall -Wextra -pedantic -Werror, link each against this build's
# libbreaker and run it.
#
# Usage: run.sh SOURCE_DIR LIBRARY LINK_DRIVER [SANITIZERS]
#   LIBRARY      this build's libbreaker.a or libbreaker.so
#   LINK_DRIVER  the C++ driver of the compiler that built the library (its
#                sanitizer runtime must link the program); each compiler's
#                object is linked by it, so clang++'s object links against a
#                gcc-sanitized library too
#   SANITIZERS   the build's BREAKER_SANITIZER (empty for none)
set -euo pipefail
src=$1 lib=$2 driver=$3 san=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

link_flags=("$lib" -lpthread -lm)
case "$lib" in
  *.so*) link_flags=(-L"$(dirname "$lib")" "-Wl,-rpath,$(dirname "$lib")" -lbreaker -lpthread -lm) ;;
esac
san_flags=()
if [ -n "$san" ]; then san_flags=(-fsanitize="$san" -fno-omit-frame-pointer); fi

status=0
for cxx in g++ clang++; do
  if ! command -v "$cxx" >/dev/null; then
    echo "FAIL: $cxx not found (make deps installs it: scripts/deps/check/packaging.txt)" >&2
    status=1
    continue
  fi
  echo "== $cxx -std=c++17 -Wall -Wextra -pedantic -Werror"
  # The compiler that built the library also instruments the program.
  cflags=()
  if [ "$cxx" = "$(basename "$driver")" ]; then cflags=("${san_flags[@]}"); fi
  "$cxx" -std=c++17 -Wall -Wextra -pedantic -Werror -g "${cflags[@]}" -I"$src/include" \
    -c "$src/tests/cpp/consumer.cpp" -o "$work/consumer-$cxx.o"
  "$driver" "${san_flags[@]}" "$work/consumer-$cxx.o" "${link_flags[@]}" -o "$work/consumer-$cxx"
  "$work/consumer-$cxx" || status=1
done
exit $status
