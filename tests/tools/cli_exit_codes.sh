#!/bin/sh
# SPDX-License-Identifier: MIT
# The exit statuses of every `breaker` command (breaker(1), EXIT STATUS):
# the tool's own failures are the <sysexits.h> numbers, the same for every
# subcommand, so that none looks like a status `breaker exec` passes on from
# its COMMAND; and the messages behind them speak the command line's words.
# Usage: cli_exit_codes.sh CASE BREAKER_BINARY DATA_DIR
set -u
case_name=$1
bk=$2
data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BREAKER_STORE="$tmp/b.store"
fail() { echo "FAIL: $case_name: $*"; exit 1; }
expect() { # expect STATUS COMMAND...: run, check the exit status
  want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  [ "$got" -eq "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "'$*' exited $got, expected $want"; }
}
err_has() { grep -q -- "$1" "$tmp/err" || fail "stderr lacks '$1': $(cat "$tmp/err")"; }
printf '0,0.010,ok\n1,0.010,ok\n' >"$tmp/t.csv"
printf '[breaker b]\nfailure_rate = 2\n' >"$tmp/bad.ini"
"$bk" exec made -- true || fail "cannot make the store"

case $case_name in
usage_errors_are_64_in_every_command)
  expect 64 "$bk"
  expect 64 "$bk" frobnicate
  expect 64 "$bk" simulate --bogus
  expect 64 "$bk" simulate --duration soon
  expect 64 "$bk" replay --bogus "$tmp/t.csv"
  expect 64 "$bk" replay
  expect 64 "$bk" exec made --bogus -- true
  expect 64 "$bk" exec made true
  expect 64 "$bk" exec made --timeout 0 -- true
  expect 64 "$bk" status --bogus
  expect 64 "$bk" status made extra
  expect 64 "$bk" ls --json
  expect 64 "$bk" open
  expect 64 "$bk" close made extra
  expect 64 "$bk" reset --bogus made
  ;;
configuration_errors_are_78_in_every_command)
  # A bad value, one that fails validation, a -c file: never 1 or 2, which
  # a COMMAND such as false or grep returns.
  expect 78 "$bk" exec x -b 'failure_rate=2' -- true
  expect 78 "$bk" exec x -b 'open=10s,open_max=5s' -- true
  expect 78 "$bk" exec x -b 'nonsense' -- true
  expect 78 "$bk" exec b -c "$tmp/bad.ini" -- true
  expect 78 "$bk" simulate -b 'x:failure_rate=2'
  expect 78 "$bk" simulate -s 'open=soon'
  expect 78 "$bk" replay -b 'x:open=10s,open_max=5s' "$tmp/t.csv"
  expect 78 "$bk" replay -c "$tmp/bad.ini" "$tmp/t.csv"
  # A replay enforces: shadow mode would hide what it is asked (also by -s).
  expect 78 "$bk" replay -b 'x:shadow=yes' "$tmp/t.csv"
  grep -q "breaker 'x': shadow = yes: a replay already refuses nothing" "$tmp/err" ||
    fail "no reason given for refusing shadow = yes: $(cat "$tmp/err")"
  expect 78 "$bk" replay -s 'shadow=yes' "$tmp/t.csv"
  printf '[scenario]\nworkers = 0\n' >"$tmp/s.ini"
  expect 78 "$bk" simulate "$tmp/s.ini"
  # None of them ran the command or made the breaker.
  expect 0 "$bk" ls
  grep -q '^x$' "$tmp/out" && fail "a refused configuration made the breaker"
  ;;
missing_inputs_are_66)
  expect 66 "$bk" simulate "$tmp/none.ini"
  expect 66 "$bk" replay "$tmp/none.csv"
  expect 66 "$bk" replay -c "$tmp/none.ini" "$tmp/t.csv"
  expect 66 "$bk" exec x -c "$tmp/none.ini" -- true
  expect 66 "$bk" status --store "$tmp/none.store"
  expect 66 "$bk" ls --store "$tmp/none.store"
  expect 66 "$bk" open nosuch
  expect 66 "$bk" status nosuch
  # A directory where a file is read: it cannot be read, 66 too (replay said
  # 65, "read error"), with the system's reason.
  mkdir "$tmp/dir"
  expect 66 "$bk" replay "$tmp/dir"
  err_has "^breaker replay: $tmp/dir: Is a directory$"
  expect 66 "$bk" simulate "$tmp/dir"
  err_has "^breaker simulate: $tmp/dir: Is a directory$"
  expect 66 "$bk" replay -c "$tmp/dir" "$tmp/t.csv"
  # A store in a directory that does not exist: the directory is named
  # (not "no breaker exec has used it yet"); exec cannot create it: 73.
  expect 66 "$bk" status --store "$tmp/nodir/x.store"
  err_has "^breaker status: no store at $tmp/nodir/x.store: no directory $tmp/nodir$"
  expect 73 "$bk" exec x --store "$tmp/nodir/x.store" -- true
  err_has "^breaker exec: cannot create the store $tmp/nodir/x.store: no directory $tmp/nodir$"
  ;;
bad_data_output_and_store_errors_have_their_own_codes)
  expect 65 "$bk" replay "$data/malformed.csv"
  : >"$tmp/empty.csv"
  expect 65 "$bk" replay --fail-empty "$tmp/empty.csv"
  expect 73 "$bk" simulate --svg "$tmp/no/such/dir/x.svg"
  if [ -w /dev/full ]; then
    expect 74 sh -c '"$0" status >/dev/full' "$bk"
    err_has "^breaker status: writing the output"
  fi
  echo junk >"$tmp/junk.store"
  chmod 600 "$tmp/junk.store"
  expect 74 "$bk" status --store "$tmp/junk.store"
  # The library's message names the file; the tool does not again.
  [ "$(grep -o "$tmp/junk.store" "$tmp/err" | wc -l)" -eq 1 ] ||
    fail "the path said other than once: $(cat "$tmp/err")"
  expect 74 "$bk" exec x --store "$tmp/junk.store" -- true
  ;;
exec_keeps_75_124_127_and_the_command_own)
  expect 0 "$bk" exec p -- true
  expect 1 "$bk" exec p -- false
  expect 2 "$bk" exec p -- sh -c 'exit 2'
  expect 127 "$bk" exec p -- "$tmp/no-such-command"
  expect 124 "$bk" exec p --timeout 50ms -- sleep 10
  expect 1 "$bk" exec t -b 'trip=consecutive,failure_threshold=1,open=1h' -- false
  expect 75 "$bk" exec t -- true
  expect 9 "$bk" exec t --refused-exit 9 -- true
  ;;
open_alone_means_it)
  # The crontab example of README and docs/cli.md: open=1h, open_max unset.
  expect 0 "$bk" exec nightly -b 'trip=consecutive,failure_threshold=3,open=1h' -- true
  expect 0 "$bk" status nightly --prometheus
  grep -q 'open_seconds="3600",open_max_seconds="3600"' "$tmp/out" ||
    fail "open_max did not follow open: $(grep config_info "$tmp/out")"
  # A shorter open leaves the default open_max (5m) alone; an open_max
  # given is kept, and checked.
  expect 0 "$bk" exec short -b 'open=10s' -- true
  expect 0 "$bk" status short --prometheus
  grep -q 'open_seconds="10",open_max_seconds="300"' "$tmp/out" ||
    fail "open_max changed: $(grep config_info "$tmp/out")"
  expect 0 "$bk" exec both -b 'open=1h,open_max=2h' -- true
  expect 78 "$bk" exec worse -b 'open_max=1m,open=1h' -- true
  # In the command line's words, with durations for people.
  err_has "^breaker exec: breaker 'worse': open_max: must be >= open (1h), got 1m$"
  ;;
huge_durations_saturate)
  # now + timeout wrapped: the command was killed at once (124) and a
  # failure recorded; the duration was printed as "0m".
  expect 0 "$bk" exec h --timeout 18446744073709551615ns -- sleep 0.2
  err_has "note: h: --timeout 307445734m34s is longer"
  grep -q ' 0m ' "$tmp/err" && fail "a duration wrapped: $(cat "$tmp/err")"
  expect 0 "$bk" status h --json
  grep -q '"failures": 0' "$tmp/out" || fail "a failure recorded: $(cat "$tmp/out")"
  # The simulation's clock too: a call that times out after 2^64-1 ns ends
  # at the end of time, not just before it started. With no breaker, the
  # first 4 calls into the dead dependency hold the 4 workers for good and
  # every later request is shed (the wrapped sum freed them at once: 1007
  # calls reached it, 494 timed out).
  printf '[scenario]\nduration = 20s\nworkers = 4\nrate = 50\n[phase a]\nkind = down\nduration = 10s\n[phase b]\nkind = healthy\nduration = 10s\n' >"$tmp/h.ini"
  expect 0 "$bk" simulate --timeout 18446744073709551615ns "$tmp/h.ini"
  grep -q '^calls that reached the dependency  *4$' "$tmp/out" ||
    fail "reached: $(grep 'reached the dependency' "$tmp/out")"
  grep -q '^failed slowly: waited for the timeout  *4$' "$tmp/out" ||
    fail "timed out: $(grep 'waited for the timeout' "$tmp/out")"
  ;;
status_says_which_file_it_read)
  expect 0 "$bk" status
  [ "$(head -n 1 "$tmp/out")" = "Store $BREAKER_STORE" ] || fail "first line: $(head -n 1 "$tmp/out")"
  # The JSON and Prometheus forms stay what they are.
  expect 0 "$bk" status --json
  [ "$(head -c 1 "$tmp/out")" = "[" ] || fail "json: $(head -n 1 "$tmp/out")"
  ;;
help_paragraphs_end_with_a_newline)
  # The store paragraph of exec's help ran into the next one.
  expect 0 "$bk" exec --help
  grep -B 1 '^If breaker exec itself is killed' "$tmp/out" | head -n 1 | grep -q '^$' ||
    fail "no blank line before 'If breaker exec itself': $(grep -B 1 '^If breaker' "$tmp/out")"
  for c in simulate replay keys exec status ls open close reset; do
    expect 0 "$bk" help "$c"
    [ "$(tail -c 1 "$tmp/out" | od -An -c | tr -d ' ')" = '\n' ] || fail "help $c: no final newline"
  done
  ;;
store_file_permissions_are_74_not_77)
  # A store FILE that cannot be trusted or opened is a store that cannot be
  # used: 74 (EX_IOERR) in every command, with the library's reason. 77
  # (EX_NOPERM) is the default store DIRECTORY's alone (cli_store_ops.sh,
  # default_dir_must_be_private): --store and BREAKER_STORE name a file the
  # user chose, whose directory is not checked.
  every_store_command() { # every_store_command WHY PATH [as_user]: 74 and WHY everywhere
    why=$1 f=$2; shift 2
    for c in "exec made" "status" "status made" "ls" "open made" "close made" "reset made"; do
      if [ "${c%% *}" = exec ]; then
        rm -f "$tmp/ran"
        expect 74 "$@" "$bk" $c --store "$f" -- touch "$tmp/ran"
        [ ! -e "$tmp/ran" ] || fail "exec ran its command on $f"
      else
        expect 74 "$@" "$bk" $c --store "$f"
      fi
      err_has "$why"
    done
  }
  cp "$BREAKER_STORE" "$tmp/shared.store"
  chmod 0666 "$tmp/shared.store"
  every_store_command "writable by group or others (mode 666" "$tmp/shared.store"
  chmod 0620 "$tmp/shared.store"
  every_store_command "writable by group or others (mode 620" "$tmp/shared.store"
  # What to fix, not the library's BREAKER_STORE_ALLOW_SHARED (no option sets it).
  err_has "a store file must be this user's and writable by no one else)"
  ! grep -q ALLOW_SHARED "$tmp/err" || fail "names a flag the command line cannot set: $(cat "$tmp/err")"
  if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    # Another user's file, and one this user may not open at all.
    u=$((4000000 + $$ % 1000000))
    cp "$BREAKER_STORE" "$tmp/theirs.store" && chown 65534 "$tmp/theirs.store"
    every_store_command "owned by uid 65534, not this user" "$tmp/theirs.store"
    chmod 0711 "$tmp"
    cp "$BREAKER_STORE" "$tmp/closed.store" && chown "$u" "$tmp/closed.store"
    chmod 0000 "$tmp/closed.store"
    every_store_command "open: Permission denied" "$tmp/closed.store" \
      setpriv --reuid "$u" --regid "$u" --clear-groups
  else
    echo "note: not root (or no setpriv): the owner and unreadable-file rows are not run"
  fi
  ;;
*)
  fail "unknown case"
  ;;
esac
exit 0
