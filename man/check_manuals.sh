#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the manual pages (ctest -L manuals).
#
#   check_manuals.sh build SCDOC MAN_DIR
#       Every man/*.scd page builds: scdoc exits 0 and writes a non-empty
#       page, which then renders without warnings with `man -l` if man is
#       installed, else with groff or mandoc if one is, else scdoc's own
#       check is all there is.
#   check_manuals.sh coverage SCDOC MAN_DIR HEADER... [--optional HEADER...]
#       Every function the headers declare with BREAKER_API is named in at
#       least one page, and every function a page names with () exists.
#       The headers after --optional (a library's that is not built, such as
#       redis.h without hiredis) need not be covered, but a page may name
#       their functions.
#   check_manuals.sh links SCDOC MAN_TREE HEADER...
#       Every function the headers declare with BREAKER_API resolves with
#       `man -w -M MAN_TREE 3 NAME` (the build's manual tree, man3/ in it)
#       to a page, not to a dangling link, and that page's SYNOPSIS
#       declares it.
#   check_manuals.sh options SCDOC MAN_DIR BREAKER_BINARY
#       Every command of `breaker --help` and every option of it and of
#       `breaker simulate|replay|exec|status --help` is in breaker(1).
set -u
mode=$1
scdoc=$2
man_dir=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Build every page into $work; the roff pages' paths on stdout.
build_pages() {
  local src page
  for src in "$man_dir"/*.scd; do
    page=$work/$(basename "$src" .scd)
    if ! "$scdoc" <"$src" >"$page" 2>"$work/err"; then
      fail "scdoc $(basename "$src"): $(cat "$work/err")"
      continue
    fi
    if [ ! -s "$page" ]; then
      fail "scdoc $(basename "$src"): empty output"
      continue
    fi
    echo "$page"
  done
}

# Render one page as text; warnings go to $work/warn.
render() {
  local page=$1
  if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings -E UTF-8 -l "$page" 2>"$work/warn" | col -b
  elif command -v groff >/dev/null 2>&1; then
    groff -man -Tutf8 -ww -t "$page" 2>"$work/warn" | col -b
  elif command -v mandoc >/dev/null 2>&1; then
    mandoc -T utf8 -W warning "$page" 2>"$work/warn" | col -b
  else
    : >"$work/warn"
    cat "$page"
  fi
}

# The functions declared with BREAKER_API: comments and preprocessor lines
# removed, declarations joined, then the name before the first '('.
api_functions() {
  awk '
  {
    line = $0; out = ""
    while (length(line) > 0) {
      if (in_comment) {
        i = index(line, "*/")
        if (i == 0) { line = "" } else { line = substr(line, i + 2); in_comment = 0 }
      } else {
        i = index(line, "/*")
        if (i == 0) { out = out line; line = "" }
        else { out = out substr(line, 1, i - 1) " "; line = substr(line, i + 2); in_comment = 1 }
      }
    }
    if (out !~ /^[ \t]*#/) printf "%s ", out
  }' "$@" | grep -o 'BREAKER_API[^(;]*(' |
  sed -E 's/[[:space:]]*\($//; s/.*[^A-Za-z0-9_]//' | sort -u
}

case $mode in
build)
  pages=$(build_pages)
  [ -n "$pages" ] || fail "no page built from $man_dir/*.scd"
  if command -v man >/dev/null 2>&1; then renderer="man -l"
  elif command -v groff >/dev/null 2>&1; then renderer=groff
  elif command -v mandoc >/dev/null 2>&1; then renderer=mandoc
  else renderer="none (scdoc only)"; fi
  for page in $pages; do
    name=$(basename "$page")
    text=$(render "$page")
    if [ -s "$work/warn" ]; then
      fail "$renderer $name: warnings:"
      sed 's/^/    /' "$work/warn"
    fi
    lines=$(printf '%s\n' "$text" | grep -c .)
    # The page names itself under NAME: "breaker_registry - ...".
    printf '%s\n' "$text" | grep -q "^ *${name%.*} - " ||
      fail "$name: no NAME line '${name%.*} - ...' in the rendered page"
    [ "$lines" -ge 20 ] || fail "$name: renders to only $lines lines"
    echo "$name: built and rendered with $renderer, $lines lines"
  done
  ;;
coverage)
  [ $# -gt 0 ] || { echo "usage: $0 coverage SCDOC MAN_DIR HEADER... [--optional HEADER...]"; exit 2; }
  required=()
  optional=()
  seen_optional=0
  for arg in "$@"; do
    if [ "$arg" = --optional ]; then seen_optional=1
    elif [ "$seen_optional" -eq 1 ]; then optional+=("$arg")
    else required+=("$arg"); fi
  done
  [ "${#required[@]}" -gt 0 ] || { echo "usage: $0 coverage SCDOC MAN_DIR HEADER... [--optional HEADER...]"; exit 2; }
  funcs=$(api_functions "${required[@]}")
  known=$funcs
  if [ "${#optional[@]}" -gt 0 ]; then
    known=$(printf '%s\n%s\n' "$funcs" "$(api_functions "${optional[@]}")" | sort -u)
  fi
  count=$(printf '%s\n' "$funcs" | grep -c .)
  [ "$count" -ge 50 ] || fail "found only $count BREAKER_API functions in ${required[*]}; has the header layout changed?"
  pages=$(build_pages)
  # The pages' text without roff font changes and zero-width escapes, so that
  # \fBbreaker_acquire\fR() reads breaker_acquire().
  for page in $pages; do sed -e 's/\\f[BIRP]//g' -e 's/\\&//g' "$page"; done >"$work/all"
  missing=0
  for f in $funcs; do
    if ! grep -qw -e "$f" "$work/all"; then
      fail "$f is declared with BREAKER_API but named in no manual page"
      missing=$((missing + 1))
    fi
  done
  echo "$count BREAKER_API functions, $((count - missing)) named in the pages"
  # The other way: a breaker_xxx() a page names must be declared (page
  # references such as breaker_registry(3) are not calls).
  for f in $(sed 's/([0-9])//g' "$work/all" | grep -o 'breaker_[a-z0-9_]*(' | tr -d '(' | sort -u); do
    printf '%s\n' "$known" | grep -qx -e "$f" || fail "a page names $f(), which no header declares"
  done
  ;;
links)
  [ $# -gt 0 ] || { echo "usage: $0 links SCDOC MAN_TREE HEADER..."; exit 2; }
  command -v man >/dev/null 2>&1 || { echo "FAIL: man (man-db) is not installed"; exit 1; }
  tree=$man_dir
  funcs=$(api_functions "$@")
  count=$(printf '%s\n' "$funcs" | grep -c .)
  [ "$count" -ge 50 ] || fail "found only $count BREAKER_API functions in $*"
  resolved=0
  for f in $funcs; do
    path=$(man -w -M "$tree" 3 "$f" 2>/dev/null) || { fail "man -w $f: no manual entry in $tree"; continue; }
    # Installed pages may be compressed (Debian's are gzipped).
    text() { case $1 in *.gz) gzip -dc "$1" ;; *) cat "$1" ;; esac; }
    if text "$path" | head -n 1 | grep -q '^\.so '; then
      fail "man -w $f: $path is a link man does not follow (its target is missing)"
      continue
    fi
    # The SYNOPSIS of the page it reached declares it.
    text "$path" | awk '/^\.SH SYNOPSIS/ { on = 1; next } /^\.SH / { on = 0 } on' |
      sed -e 's/\\f[BIRP]//g' -e 's/\\&//g' | grep -q -e "$f(" ||
      { fail "man -w $f gives $(basename "$path"), whose SYNOPSIS does not declare it"; continue; }
    resolved=$((resolved + 1))
  done
  pages=$(find "$tree"/man3 -name 'breaker*.3*' | wc -l)
  echo "$count BREAKER_API functions, $resolved resolved by man -w to the page that declares them ($pages pages and links in man3)"
  ;;
options)
  [ $# -eq 1 ] || { echo "usage: $0 options SCDOC MAN_DIR BREAKER_BINARY"; exit 2; }
  tool=$1
  build_pages >/dev/null
  page=$work/breaker.1
  [ -s "$page" ] || fail "breaker.1 did not build"
  sed -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\-/-/g' "$page" >"$work/text"
  checked=0
  for cmd in "" simulate replay exec status; do
    # Option lines of the help: "  -c, --config FILE  ...", "      --svg FILE".
    opts=$("$tool" $cmd --help | sed -n 's/^ \{2,\}\(-[-a-zA-Z]\)/\1/p' | sed 's/  .*//' |
      tr ',' '\n' | sed -n 's/^ *\(--*[a-zA-Z][-a-zA-Z]*\).*/\1/p' | sort -u)
    [ -n "$opts" ] || fail "breaker $cmd --help: no options found"
    for opt in $opts; do
      grep -qE -e "(^|[^-a-zA-Z])$opt([^-a-zA-Z]|\$)" "$work/text" ||
        fail "breaker.1 does not mention 'breaker $cmd $opt'"
      checked=$((checked + 1))
    done
  done
  for c in $("$tool" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p'); do
    grep -qE "^\.SS breaker $c( |\$)" "$work/text" || fail "breaker.1 has no section for 'breaker $c'"
    checked=$((checked + 1))
  done
  echo "$checked options and commands of the help checked against breaker.1"
  ;;
*)
  echo "usage: $0 build|coverage|links|options SCDOC MAN_DIR [HEADER...|BREAKER_BINARY]"
  exit 2
  ;;
esac

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "ok"
