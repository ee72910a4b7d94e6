#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian symbols files (debian/*.symbols) against what the built shared
# libraries export, both ways (ctest packaging_symbols, make check's shared
# build). dpkg-gensymbols only warns about a function added to a library and
# not to its symbols file (the package's dependencies then understate what a
# program needs); this fails instead, naming the lines to add or remove.
# Each library is matched to its file by its SONAME, the file's first word,
# so a new SONAME without a renamed file (and package) fails too.
# Usage: symbols.sh SOURCE_DIR LIBRARY.so...
set -euo pipefail
src=$1
shift
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
version=$(sed -n '1s/^[^(]*(\([^)-]*\).*/\1/p' "$src/debian/changelog")
for lib in "$@"; do
  soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ -n "$soname" ] || { fail "$lib has no SONAME"; continue; }
  file=$(grep -l "^$soname " "$src"/debian/*.symbols || true)
  if [ -z "$file" ]; then
    fail "$soname: no debian/*.symbols file starts with it (a new SONAME needs a new package)"
    continue
  fi
  exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)
  listed=$(sed -n 's/^ \([^@ ]*\)@Base .*/\1/p' "$file" | sort -u)
  missing=$(comm -23 <(echo "$exported") <(echo "$listed"))
  extra=$(comm -13 <(echo "$exported") <(echo "$listed"))
  for s in $missing; do
    fail "$soname exports $s, which $(basename "$file") does not list: add ' $s@Base $version'"
  done
  for s in $extra; do
    fail "$(basename "$file") lists $s, which $soname does not export"
  done
  echo "$soname: $(echo "$exported" | grep -c .) exported functions, $(echo "$listed" | grep -c .) listed in $(basename "$file")"
done
if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "the symbols files match the exports"
