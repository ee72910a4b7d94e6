#!/bin/sh
# SPDX-License-Identifier: MIT
# The `breaker` examples of README.md and docs/cli.md, run as they are
# written (every example a document shows is run by a test). Each case reads the
# lines from the document at test time, so an example that stops working, or
# whose shown output no longer matches, fails here. Only what cannot run in a
# test is replaced: a cron schedule, the job a crontab line runs, a URL,
# node_exporter's directory.
# Usage: cli_doc_examples.sh CASE BREAKER_BINARY SOURCE_DIR
set -u
case_name=$1
bk=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BREAKER_STORE="$tmp/b.store"
fail() { echo "FAIL: $case_name: $*"; exit 1; }
# The examples name `breaker` and files under examples/: both from here.
mkdir "$tmp/bin" && ln -s "$bk" "$tmp/bin/breaker" && ln -s "$src/examples" "$tmp/examples"
PATH=$tmp/bin:$PATH
cd "$tmp" || exit 1

# code_lines DOC: the lines inside the document's fenced blocks.
code_lines() { awk '/^```/ { inb = !inb; next } inb' "$1"; }

# crontab_line DOC: its `breaker exec` crontab line without --redis.
crontab_line() {
  code_lines "$1" | grep '^[*/0-9,-]* [*/0-9,-]* [*/0-9,-]* [*/0-9,-]* [*/0-9,-]* breaker exec ' |
    grep -v -- '--redis' | head -n 1
}

# shown_output DOC COMMAND: the lines a "$ COMMAND" example of DOC shows
# under it, up to the next "$ " line or the end of its block.
shown_output() {
  awk -v cmd="\$ $2" '
    /^```/ { if (inb && on) exit; inb = !inb; next }
    inb && $0 == cmd { on = 1; next }
    inb && on && /^\$ / { exit }
    inb && on { print }' "$1"
}

# check_shown DOC COMMAND: run COMMAND (standard output and error together)
# and find every line DOC shows for it, in order; "..." stands for lines
# the document leaves out.
check_shown() {
  shown_output "$1" "$2" >"$tmp/want"
  [ -s "$tmp/want" ] || fail "$1: no output shown for '\$ $2'"
  sh -c "$2" >"$tmp/got" 2>&1
  while IFS= read -r line; do
    [ "$line" = "..." ] && continue
    n=$(grep -n -F -x -- "$line" "$tmp/got" | head -n 1 | cut -d: -f1)
    [ -n "$n" ] || fail "$1: '\$ $2' no longer prints: $line"
    sed "1,${n}d" "$tmp/got" >"$tmp/rest" && mv "$tmp/rest" "$tmp/got"
  done <"$tmp/want"
}

# figures FILE: the figures a text quotes, numbers with their unit as the
# tables print them (19129, 3m25s, 49.2%, 18.9s).
figures() { grep -oE '[0-9][0-9.]*([a-z]+[0-9][0-9.]*)*[a-z%]*' "$1" | sed 's/\.$//' | sort -u; }
# check_figures DOC PROSE_FILE OUTPUT_FILE: every figure of PROSE_FILE is a
# word of OUTPUT_FILE (the commands' outputs, and the scenario they ran).
check_figures() {
  tr -s ' \t(),;:~' '\n' <"$3" | sort -u >"$tmp/words"
  [ -s "$tmp/words" ] || fail "$1: no output to check the figures against"
  for f in $(figures "$2"); do
    grep -qxF -e "$f" "$tmp/words" ||
      fail "$1: the text quotes $f, which the table it describes does not print"
  done
}

case $case_name in
crontab_example_stops_after_three_failures)
  # README's and docs/cli.md's crontab line: three failures in a row stop
  # the runs (exit 75, nothing started). `open=1h` alone used to fail the
  # configuration (exit 1, as the job's own failure would) and never run.
  for doc in "$src/README.md" "$src/docs/cli.md"; do
    line=$(crontab_line "$doc")
    [ -n "$line" ] || fail "$doc: no crontab example"
    job=$(echo "$line" | cut -d' ' -f6- | sed 's/ -- .*$//')
    rm -f "$BREAKER_STORE"
    for i in 1 2 3; do
      sh -c "$job -- sh -c 'touch ran.$i; exit 1'"; st=$?
      [ "$st" -eq 1 ] || fail "$doc: run $i exited $st, expected the job's 1: $job"
      [ -e "ran.$i" ] || fail "$doc: run $i did not start the job"
    done
    sh -c "$job -- touch ran.4" 2>"$tmp/err"; st=$?
    [ "$st" -eq 75 ] || fail "$doc: the fourth run exited $st, expected 75"
    [ ! -e ran.4 ] || fail "$doc: the fourth run started the job"
    # An hour, and up to open_jitter (20%) more.
    grep -q 'next attempt allowed in \(6[0-9]\|7[0-2]\)m' "$tmp/err" ||
      fail "$doc: the refusal does not say an hour: $(cat "$tmp/err")"
    rm -f ran.*
  done
  ;;
readme_demo_table_is_what_make_demo_prints)
  # The table of "What the demo shows" is the second part of make demo
  # (scripts/demo.sh runs `breaker simulate --svg demo.svg`, the same run),
  # row for row; and every figure the lines under it quote is in it.
  check_shown "$src/README.md" "breaker simulate"
  breaker simulate >"$tmp/out" 2>&1 && breaker simulate --print-scenario >>"$tmp/out" ||
    fail "breaker simulate"
  awk '/^```/ { inb = !inb; next } /^### What the demo shows/ { on = 1 } on && /^All of these figures/ { exit }
       on && !inb && /^- / { p = 1 } p && !inb { print }' "$src/README.md" >"$tmp/prose"
  [ "$(grep -c '^- ' "$tmp/prose")" -ge 3 ] || fail "README.md: the lines under the demo's table are gone"
  check_figures README.md "$tmp/prose" "$tmp/out"
  ;;
cli_comparison_table_figures_are_what_simulate_prints)
  # docs/cli.md's comparison table and its variants are checked row for row
  # by cli_shown_outputs_are_what_the_commands_print; here the figures its
  # explanation quotes must be in them.
  sed -n '/^### The comparison table/,/^### One abusive caller/p' "$src/docs/cli.md" >"$tmp/section"
  : >"$tmp/out"
  code_lines "$tmp/section" | sed -n 's/^\$ //p' >"$tmp/cmds"
  [ "$(wc -l <"$tmp/cmds")" -ge 2 ] || fail "docs/cli.md: the comparison table's commands are gone"
  while IFS= read -r cmd; do sh -c "$cmd" >>"$tmp/out" 2>&1 || fail "'$cmd' failed"; done <"$tmp/cmds"
  breaker simulate --print-scenario >>"$tmp/out"
  awk '/^```/ { inb = !inb; next } /^How to read it/ { on = 1 } on && !inb { print }' \
    "$tmp/section" >"$tmp/prose"
  [ -s "$tmp/prose" ] || fail "docs/cli.md: 'How to read it' is gone"
  check_figures docs/cli.md "$tmp/prose" "$tmp/out"
  ;;
readme_lists_every_optional_dependency)
  # README's "Optional dependencies" table has a row for each dependency
  # scripts/optional-deps.sh hides (by its Debian package), and no other.
  sed -n '/^## Optional dependencies/,/^## /p' "$src/README.md" |
    sed -n 's/^| [^|]* | `\([^`]*\)` |.*/\1/p' | sort >"$tmp/readme"
  bash "$src/scripts/optional-deps.sh" --list | cut -f3 | sort >"$tmp/script"
  [ -s "$tmp/script" ] || fail "scripts/optional-deps.sh --list printed nothing"
  cmp -s "$tmp/readme" "$tmp/script" || {
    diff "$tmp/script" "$tmp/readme"
    fail "README.md's optional dependencies differ from scripts/optional-deps.sh (< script, > README)"
  }
  ;;
readme_fleet_table_is_what_simulate_prints)
  check_shown "$src/README.md" "breaker simulate examples/scenarios/fleet.ini"
  ;;
cli_shown_outputs_are_what_the_commands_print)
  # A trace whose header the replay refuses, for the example that shows it.
  printf 'ts,latency_minutes,status\n1700000000,12,200\n' >calls.csv
  code_lines "$src/docs/cli.md" | sed -n 's/^\$ //p' | while IFS= read -r cmd; do
    check_shown "$src/docs/cli.md" "$cmd"
  done || exit 1
  ;;
cli_quick_start_runs)
  cp "$src/tests/tools/data/outage.csv" calls.csv
  printf '[breaker tuned]\nwindow = 10s\nopen = 5s\n' >breakers.ini
  # The block that starts with the built-in scenario.
  code_lines "$src/docs/cli.md" | sed -n '/^breaker simulate  *# the built-in scenario$/,/^breaker keys /p' |
    sed 's/ *#.*$//' >"$tmp/cmds"
  [ "$(wc -l <"$tmp/cmds")" -ge 5 ] || fail "the quick start is gone: $(cat "$tmp/cmds")"
  while IFS= read -r cmd; do
    case $cmd in *--watch*) continue ;; esac # runs until stopped: cli_store_ops.sh
    sh -c "$cmd" >"$tmp/out" 2>"$tmp/err" || fail "'$cmd' exited $?: $(cat "$tmp/err")"
  done <"$tmp/cmds"
  ;;
cli_script_example_says_what_happened)
  # The script of "Shared breakers for commands", run as written against a
  # real HTTP server on 127.0.0.1 (tests/support/http_test_server.py), its
  # URL the only change. 25 answers 404 (the request's fault): "failed", yet
  # never counted, so the breaker stays closed and a healthy URL still goes
  # through ("done"; curl -f's 22 counted them: 25 404s opened it). Then 503s
  # (the server's fault) open it, and the script prints the refusal's line.
  code_lines "$src/docs/cli.md" | sed -n '/^if breaker exec api /,/^fi$/p' >"$tmp/script.sh"
  [ -s "$tmp/script.sh" ] || fail "the script example is gone"
  mkfifo "$tmp/srv.in"
  python3 "$src/tests/support/http_test_server.py" <"$tmp/srv.in" >"$tmp/srv.out" &
  srv=$!
  exec 3>"$tmp/srv.in"
  trap 'exec 3>&-; wait "$srv"; rm -rf "$tmp"' EXIT
  i=0
  until grep -q '^port ' "$tmp/srv.out"; do
    i=$((i + 1)); [ "$i" -lt 500 ] || fail "the HTTP server did not start"; sleep 0.02
  done
  port=$(sed -n 's/^port //p' "$tmp/srv.out")
  sed "s|https://api.example/x|http://127.0.0.1:$port/x|" "$tmp/script.sh" >"$tmp/run.sh"
  # mode M: the server answers M from now on (its reply line says so).
  mode() {
    n=$(wc -l <"$tmp/srv.out")
    echo "mode $1" >&3
    i=0
    until [ "$(wc -l <"$tmp/srv.out")" -gt "$n" ]; do
      i=$((i + 1)); [ "$i" -lt 500 ] || fail "the HTTP server did not answer"; sleep 0.02
    done
  }
  mode 404
  for r in $(seq 25); do
    out=$(sh "$tmp/run.sh" 2>/dev/null)
    [ "$out" = "failed" ] || fail "404, run $r: '$out'"
  done
  breaker status api --json | grep -q '"state": "closed"' || fail "404s opened the breaker"
  mode ok
  out=$(sh "$tmp/run.sh" 2>/dev/null)
  [ "$out" = "done" ] || fail "healthy after the 404s: '$out'"
  mode 503
  for r in $(seq 20); do sh "$tmp/run.sh" >/dev/null 2>&1; done
  out=$(sh "$tmp/run.sh" 2>/dev/null)
  [ "$out" = "api breaker open: skipped" ] || fail "after the 503s: '$out'"
  ;;
cli_prometheus_crontab_writes_the_file)
  line=$(code_lines "$src/docs/cli.md" | grep 'breaker status --prometheus >' | head -n 1)
  [ -n "$line" ] || fail "no textfile-collector example"
  breaker exec api -- true || fail "exec"
  cmd=$(echo "$line" | cut -d' ' -f6- | sed "s|/var/lib/node_exporter|$tmp|g")
  sh -c "$cmd" || fail "'$cmd' exited $?"
  grep -q '^breaker_state{breaker="api"} 0$' "$tmp/breaker.prom" || fail "no breaker_state in the file"
  ;;
*)
  fail "unknown case"
  ;;
esac
exit 0
