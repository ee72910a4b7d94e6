#!/usr/bin/env bash
# SPDX licence identifiers in the project's source files.
#   scripts/spdx.sh           add "SPDX-License-Identifier: MIT" to every
#                             tracked source file that has no SPDX line
#   scripts/spdx.sh --check   list the files without one; exit 1 if any
# Source files: *.c *.h *.cpp *.hpp (/* ... */ on the first line), *.cmake,
# *.cmake.in, CMakeLists.txt, Makefile, *.sh and *.py (# ..., after a "#!"
# line and a Python coding line if there are). A file that already names any
# SPDX licence in its first 10 lines is left alone. Only files git tracks are
# considered, as they are in the working tree.
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

id="SPDX-License-Identifier: MIT"
mode=add
case "${1:-}" in
  --check) mode=check ;;
  "") ;;
  *)
    echo "usage: scripts/spdx.sh [--check]" >&2
    exit 2
    ;;
esac

comment_for() { # the line to add to file $1, or nothing for other files
  case "$1" in
    *.c | *.h | *.cpp | *.hpp) printf '/* %s */' "$id" ;;
    *.cmake | *.cmake.in | */CMakeLists.txt | CMakeLists.txt | */Makefile | Makefile | *.sh | *.py)
      printf '# %s' "$id"
      ;;
  esac
}

# How many leading lines must stay first: a "#!" line, then (Python) a coding
# line (PEP 263 allows it on the first or second line only).
keep_lines() {
  local n=0
  if head -n 1 "$1" | grep -q '^#!'; then n=1; fi
  if sed -n "$((n + 1))p" "$1" | grep -Eq '^[ \t]*#.*coding[:=]'; then n=$((n + 1)); fi
  echo "$n"
}

missing=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue # deleted in the working tree
  line=$(comment_for "$f")
  [ -n "$line" ] || continue
  if head -n 10 "$f" | grep -q 'SPDX-License-Identifier:'; then continue; fi
  missing+=("$f")
  [ $mode = add ] || continue
  n=$(keep_lines "$f")
  tmp=$(mktemp)
  {
    head -n "$n" "$f"
    printf '%s\n' "$line"
    tail -n +"$((n + 1))" "$f"
  } >"$tmp"
  cat "$tmp" >"$f" # keeps the file's mode
  rm -f "$tmp"
done < <(git ls-files -z)

if [ $mode = check ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    echo "spdx: ${#missing[@]} file(s) without an SPDX-License-Identifier line" \
      "(scripts/spdx.sh adds \"$id\"):" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
  fi
  echo "spdx: every source file has an SPDX-License-Identifier line"
else
  echo "spdx: added \"$id\" to ${#missing[@]} file(s)"
fi
