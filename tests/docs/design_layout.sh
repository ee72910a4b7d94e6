#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/design.md's "Layout of src/" draws the tree as it is: every file it
# names exists, and every file under include/ and src/ is named there.
# Usage: design_layout.sh <source dir>
set -euo pipefail
src=${1:?source dir}
doc="$src/docs/design.md"
drawn=$(mktemp)
real=$(mktemp)
trap 'rm -f "$drawn" "$real"' EXIT
# The first code block after the heading: a root ("include/", "src/") at
# column 0, then one entry a line, "├── name" or "└── name" four columns
# deeper per level.
awk '
  /^## Layout of `src\/`/ { section = 1; next }
  section && /^```/ { if (inblock) exit; inblock = 1; next }
  !inblock { next }
  /^[a-z]+\/$/ { root = $1; depth = 0; path[0] = root; next }
  {
    line = $0 # the drawing made one byte a column, so that columns count
    gsub(/│/, "|", line)
    gsub(/├── |└── /, "+-- ", line)
    i = index(line, "+-- ")
    if (i == 0) next
    level = int((i - 1) / 4) + 1
    rest = substr(line, i + 4)
    split(rest, word, " ")
    name = word[1]
    path[level] = name
    full = ""
    for (l = 0; l < level; l++) full = full path[l]
    if (name ~ /\/$/) next
    print full name
  }' "$doc" | sort >"$drawn"
(cd "$src" && find include src -type f | sort) >"$real"
if [ ! -s "$drawn" ]; then
  echo "design_layout.sh: no tree under \"Layout of src/\" in $doc" >&2
  exit 1
fi
status=0
missing=$(comm -13 "$drawn" "$real")
stale=$(comm -23 "$drawn" "$real")
if [ -n "$missing" ]; then
  echo "files not named in docs/design.md's layout:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  status=1
fi
if [ -n "$stale" ]; then
  echo "named in docs/design.md's layout but not in the tree:" >&2
  echo "$stale" | sed 's/^/  /' >&2
  status=1
fi
[ $status -eq 0 ] && echo "design.md layout: $(wc -l <"$drawn") files, the tree as it is"
exit $status
