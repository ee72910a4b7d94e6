#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# hiredis_tls.sh DIR - a hiredis with TLS (hiredis_ssl, hiredis 1.x), for the
# fleet store's TLS tests only, where the system's hiredis has none (Debian
# 12 ships 0.14.1). Built from Debian 13 (trixie)'s source package
# (debian_source.sh: apt-get source through a private apt state in DIR)
# into DIR/prefix as static libraries (-fPIC: a shared libbreaker_redis may
# link them). Nothing is installed on the system and
# nothing outside DIR is written. CMake finds it with
# -DBREAKER_TEST_HIREDIS_TLS=DIR/prefix (tests/fleet/production.cmake).
#
# A second run finds DIR/prefix complete and does nothing. Exit 0 when the
# prefix is there; 1 (saying why) when it could not be made: the TLS tests
# are then reported as skipped, never as passed.
set -euo pipefail

dir=${1:?usage: hiredis_tls.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
prefix=$dir/prefix
if pkg-config --atleast-version=1.0 hiredis 2> /dev/null && pkg-config --exists hiredis_ssl; then
  echo "hiredis_tls: the system's hiredis has TLS: nothing to build"
  exit 0
fi
if [ -e "$prefix/lib/libhiredis_ssl.a" ] && [ -e "$prefix/include/hiredis/hiredis_ssl.h" ]; then
  exit 0
fi
for tool in make cc; do
  if ! command -v "$tool" > /dev/null; then
    echo "hiredis_tls: $tool not found" >&2
    exit 1
  fi
done
if [ ! -e /usr/include/openssl/ssl.h ]; then
  echo "hiredis_tls: OpenSSL's headers not found (libssl-dev)" >&2
  exit 1
fi
orig=$("$(dirname "$0")/debian_source.sh" hiredis "$dir")
version=$(basename "$orig" | sed -e 's/^hiredis_//' -e 's/\.orig\.tar\..*$//')
case $version in
  1.*) ;;
  *)
    echo "hiredis_tls: trixie's hiredis is $version, not 1.x" >&2
    exit 1
    ;;
esac

# Upstream's own Makefile, as Debian's package builds it (its patches
# change the install paths and the tests, not the library). LIBRARY_PATH
# is the Makefile's install directory, and also a compiler variable some
# environments export: named here, so that an exported one is not taken.
build=$dir/build
rm -rf "$build"
mkdir -p "$build"
tar -xf "$orig" -C "$build" --strip-components=1
make -C "$build" -s USE_SSL=1 OPTIMIZATION=-O2 static > "$dir/build.log" 2>&1 || {
  echo "hiredis_tls: building hiredis $version failed (see $dir/build.log)" >&2
  exit 1
}
make -C "$build" -s USE_SSL=1 PREFIX="$prefix" LIBRARY_PATH=lib install >> "$dir/build.log" 2>&1 || {
  echo "hiredis_tls: installing hiredis $version into $prefix failed (see $dir/build.log)" >&2
  exit 1
}
# Static only: the tests link these, never a second libhiredis.so.
rm -f "$prefix"/lib/libhiredis*.so*
echo "hiredis_tls: hiredis $version with TLS in $prefix"
