#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# valkey_server.sh DIR - a valkey-server, for running the fleet store's
# tests against Valkey (make check-valkey), where Debian 12 has none: built
# from Debian 13 (trixie)'s source package (debian_source.sh) with its
# bundled dependencies, TLS on, the C library's malloc (the fleet's tests
# need no jemalloc), into DIR/valkey-server. Nothing is installed on the
# system. A second run finds it built and does nothing. Prints the
# program's path; exit 1, saying why, when it could not be made.
set -euo pipefail

dir=${1:?usage: valkey_server.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -x "$dir/valkey-server" ]; then
  echo "$dir/valkey-server"
  exit 0
fi
for tool in make cc; do
  if ! command -v "$tool" > /dev/null; then
    echo "valkey_server: $tool not found" >&2
    exit 1
  fi
done
orig=$("$(dirname "$0")/debian_source.sh" valkey "$dir")
build=$dir/build
rm -rf "$build"
mkdir -p "$build"
tar -xf "$orig" -C "$build" --strip-components=1
jobs=$(nproc 2> /dev/null || echo 2)
if ! make -C "$build" -j "$jobs" MALLOC=libc BUILD_TLS=yes valkey-server > "$dir/build.log" 2>&1; then
  echo "valkey_server: building $(basename "$orig") failed (see $dir/build.log)" >&2
  exit 1
fi
cp "$build/src/valkey-server" "$dir/valkey-server"
echo "$dir/valkey-server"
