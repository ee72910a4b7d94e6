#!/bin/sh
# SPDX-License-Identifier: MIT
# README's "Platforms" section matches what CI runs: every "tested" or
# "expected to work" row names a make target, and each named target exists
# in the Makefile and .ci/run runs it.
# Usage: readme_platforms.sh SOURCE_DIR
set -eu
src=$1
section=$(sed -n '/^## Platforms$/,/^## /p' "$src/README.md")
[ -n "$section" ] || { echo "README.md: no '## Platforms' section" >&2; exit 1; }
fail=0
rows=$(printf '%s\n' "$section" | grep -E '^\| (tested|expected to work) \|' || true)
[ -n "$rows" ] || { echo "README.md, Platforms: no 'tested' row" >&2; exit 1; }
printf '%s\n' "$rows" | while IFS= read -r row; do
  printf '%s\n' "$row" | grep -q '`make check' ||
    { echo "README.md, Platforms: a row names no make target: $row" >&2; exit 1; }
done || fail=1
named=$(printf '%s\n' "$section" | grep -o '`make check[a-z0-9-]*`' | tr -d '`' | sort -u)
for t in $(printf '%s\n' "$named" | sed 's/^make //'); do
  grep -q "^$t:" "$src/Makefile" || { echo "README.md, Platforms: no Makefile target $t" >&2; fail=1; }
  grep -q "^make $t " "$src/.ci/run" || { echo "README.md, Platforms: .ci/run does not run $t" >&2; fail=1; }
done
[ "$fail" -eq 0 ] && echo "README.md, Platforms: $(printf '%s\n' "$named" | wc -l) make targets, all in the Makefile and .ci/run"
exit "$fail"
