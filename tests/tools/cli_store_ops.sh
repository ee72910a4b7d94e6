#!/bin/sh
# SPDX-License-Identifier: MIT
# What operators and supervisors see of a store's breakers, with real
# processes (tools/ops/): `breaker status
# --prometheus` and `--watch`, the signals `breaker exec` passes on, and the
# checks on the default store directory.
#
# Usage: cli_store_ops.sh CASE BREAKER_BINARY [PROMTOOL] [METRIC_SAMPLE]
#   METRIC_SAMPLE: tests/test_ops_metric_sample, which prints every family
#   the library's exporter writes.
#
# Never sleeps for a state: states come from forced transitions or from
# open=1h, and every wait for another process is a bounded polling loop.
# Exit 77 (skipped) when the case cannot run here (see default_dir_*).
set -u
case_name=$1
bk=$2
promtool=${3:-}
sample=${4:-}
tmp=$(mktemp -d)
pids=
cleanup() {
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export BREAKER_STORE="$tmp/b.store"
# Who an operator's control records: the real uid's name, whatever $USER says.
me=$(id -un)
fail() { echo "FAIL: $case_name: $*"; exit 1; }
expect() { # expect STATUS COMMAND...: run, check the exit status
  want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  [ "$got" -eq "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "'$*' exited $got, expected $want"; }
}
# eventually COMMAND...: true once COMMAND succeeds, polled every 20ms for
# at most 10s (the bound is for a broken build, not for timing).
eventually() {
  i=0
  until "$@"; do
    i=$((i + 1))
    [ "$i" -lt 500 ] || return 1
    sleep 0.02
  done
}
# The state letter of process $1 (R, S, T, Z...), empty when it is gone.
proc_state() { sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null; }
# gone PID: the process has ended (a zombie waiting for its reaper counts).
gone() {
  st=$(proc_state "$1")
  [ -z "$st" ] || [ "$st" = Z ]
}
stopped() { [ "$(proc_state "$1")" = T ]; }
# The exit status of the background job $1, once it has ended.
status_of() { wait "$1"; }
# The value of the series $1 (exact, labels included) in file $2.
value() { sed -n "s/^$1 //p" "$2"; }

# A store with one breaker of each kind: timed (a histogram), tripped
# (consecutive, open for an hour), forced open, with failures and ignores.
make_store() {
  expect 0 "$bk" exec timed -b 'slow_call=1s' -- true
  expect 1 "$bk" exec timed -- false
  expect 1 "$bk" exec tripped -b 'trip=consecutive,failure_threshold=1,open=1h,open_max=1h' -- false
  expect 75 "$bk" exec tripped -- true
  expect 0 "$bk" exec forced -b 'trip=count_window,window_size=10,min_calls=5,ramp=30s' -- true
  expect 0 "$bk" open forced
  expect 75 "$bk" exec forced -- true
  expect 127 "$bk" exec plain -- "$tmp/no-such-command"
}

case $case_name in
prometheus_passes_promtool)
  [ -n "$promtool" ] || fail "no promtool given"
  make_store
  expect 0 "$bk" status --prometheus
  cp "$tmp/out" "$tmp/all.prom"
  "$promtool" check metrics <"$tmp/all.prom" >"$tmp/lint" 2>&1 ||
    { cat "$tmp/lint" "$tmp/all.prom"; fail "promtool rejected the output"; }
  [ "$(value 'breaker_state{breaker="tripped"}' "$tmp/all.prom")" = 1 ] || fail "tripped: not open (1)"
  [ "$(value 'breaker_state{breaker="forced"}' "$tmp/all.prom")" = 3 ] || fail "forced: not 3"
  [ "$(value 'breaker_next_probe_seconds{breaker="forced"}' "$tmp/all.prom")" = +Inf ] ||
    fail "forced: next probe not +Inf"
  [ "$(value 'breaker_calls_total{breaker="timed",outcome="failure"}' "$tmp/all.prom")" = 1 ] ||
    fail "timed: failures not 1"
  [ "$(value 'breaker_calls_total{breaker="plain",outcome="ignored"}' "$tmp/all.prom")" = 1 ] ||
    fail "plain: ignored not 1"
  [ "$(value 'breaker_rejected_calls_total{breaker="forced",reason="forced_open"}' "$tmp/all.prom")" = 1 ] ||
    fail "forced: forced_open rejections not 1"
  [ "$(value 'breaker_store_transitions_total{breaker="tripped"}' "$tmp/all.prom")" = 1 ] ||
    fail "tripped: transitions not 1"
  [ "$(value 'breaker_call_duration_seconds_count{breaker="timed",outcome="success"}' "$tmp/all.prom")" = 1 ] ||
    fail "timed: no duration histogram"
  grep -q '^breaker_call_duration_seconds_bucket{breaker="tripped"' "$tmp/all.prom" &&
    fail "an untimed breaker has a histogram"
  grep -q '^breaker_config_info{breaker="tripped",trip="consecutive",failure_threshold="1",.*open_seconds="3600",' \
    "$tmp/all.prom" || fail "tripped: stored limits not in breaker_config_info"
  grep -q '^breaker_build_info{version="[0-9.]*"} 1$' "$tmp/all.prom" || fail "no build info"
  # Sorted by name, as the library sorts them.
  [ "$(sed -n 's/^breaker_state{breaker="\(.*\)"} .*/\1/p' "$tmp/all.prom" | tr '\n' ' ')" = \
    "forced plain timed tripped " ] || fail "not sorted by name"
  # NAME: only that breaker, still valid.
  expect 0 "$bk" status tripped --prometheus
  "$promtool" check metrics <"$tmp/out" >"$tmp/lint" 2>&1 ||
    { cat "$tmp/lint"; fail "promtool rejected the output for one NAME"; }
  [ "$(grep -c '^breaker_state{' "$tmp/out")" -eq 1 ] || fail "NAME: not one breaker"
  # Usage errors.
  expect 64 "$bk" status --prometheus --json
  expect 64 "$bk" status --prometheus --watch
  ;;
prometheus_uses_the_library_names)
  # Every family written has the library exporter's name, TYPE and HELP,
  # but for the two the library has no equal; and every per-breaker family
  # of the library is written, but for those a store does not keep (and the
  # probe durations, written only for breakers that have probed; the fleet
  # handle's families are not per breaker).
  [ -n "$sample" ] || fail "no metric sample program given"
  make_store
  expect 0 "$bk" status --prometheus
  "$sample" >"$tmp/lib.prom" || fail "$sample failed"
  grep '^# \(HELP\|TYPE\) ' "$tmp/out" |
    grep -v ' breaker_store_transitions_total \| breaker_call_duration_seconds ' >"$tmp/ours"
  [ "$(grep -c '^# TYPE' "$tmp/ours")" -ge 20 ] || fail "too few families: $(cat "$tmp/ours")"
  while IFS= read -r line; do
    grep -qxF -e "$line" "$tmp/lib.prom" || fail "not as the library writes it: $line"
  done <"$tmp/ours"
  sed -n 's/^# TYPE \(breaker_[a-z_]*\) .*/\1/p' "$tmp/lib.prom" |
    grep -v '^breaker_\(bulkhead\|retry_budget\|executor\|registry\|fleet\)_' |
    grep -vx 'breaker_transitions_total\|breaker_flapping\|breaker_probe_duration_seconds' \
      >"$tmp/lib.families"
  while read -r fam; do
    grep -q "^# TYPE $fam " "$tmp/out" || fail "the library's $fam is not written"
  done <"$tmp/lib.families"
  ;;
watch_sees_transitions_of_other_processes)
  expect 0 "$bk" exec w -- true
  "$bk" status --watch --interval 20ms --count 3 >"$tmp/watch" 2>"$tmp/watch.err" &
  wp=$!
  pids="$wp"
  # The table first: the watch has its baseline.
  eventually grep -q '^w  *closed  *1 ' "$tmp/watch" || fail "no table: $(cat "$tmp/watch" "$tmp/watch.err")"
  expect 0 "$bk" open w
  eventually grep -q ' w closed -> forced_open generation 2$' "$tmp/watch" ||
    fail "open not seen: $(cat "$tmp/watch")"
  # A breaker another process creates meanwhile.
  expect 0 "$bk" exec w2 -- true
  eventually grep -q ' w2 new -> closed generation 1$' "$tmp/watch" ||
    fail "new breaker not seen: $(cat "$tmp/watch")"
  expect 0 "$bk" reset w
  eventually grep -q ' w forced_open -> closed generation 3$' "$tmp/watch" ||
    fail "reset not seen: $(cat "$tmp/watch")"
  # --count 3: it stops by itself.
  eventually gone "$wp" || fail "--count 3 did not stop the watch"
  status_of "$wp" || fail "the watch exited $?: $(cat "$tmp/watch.err")"
  pids=
  # The store's path, the table, then every change line in the documented form.
  head -n 1 "$tmp/watch" | grep -q "^Store $BREAKER_STORE$" || fail "no path: $(cat "$tmp/watch")"
  sed 1,3d "$tmp/watch" | grep -v \
    '^[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]\{3\}Z [a-z0-9_.-]* [a-z_]* -> [a-z_]* generation [0-9]*$' &&
    fail "a line not of the documented form"
  [ "$(sed 1,3d "$tmp/watch" | wc -l)" -eq 3 ] || fail "not 3 lines: $(cat "$tmp/watch")"
  # Several transitions between two polls are counted, not lost: the watch
  # (of one NAME) is stopped while two happen, so they fall between polls.
  rm -f "$tmp/watch" # the first watch's table must not stand for this one's
  "$bk" status w --watch --interval 20ms >"$tmp/watch" 2>&1 &
  wp=$!
  pids="$wp"
  eventually grep -q '^w ' "$tmp/watch" || fail "no table for NAME"
  grep -q '^w2 ' "$tmp/watch" && fail "NAME: other breakers shown"
  kill -STOP "$wp"
  eventually stopped "$wp" || fail "SIGSTOP did not stop the watch"
  expect 0 "$bk" open w
  expect 0 "$bk" reset w
  kill -CONT "$wp"
  eventually grep -q ' w closed -> closed generation 5 (2 transitions)$' "$tmp/watch" ||
    fail "two transitions between polls: $(cat "$tmp/watch")"
  kill -TERM "$wp"
  status_of "$wp" || fail "SIGTERM: exit $?"
  pids=
  ;;
watch_stops_cleanly_on_signals)
  expect 0 "$bk" exec s -- true
  for sig in TERM INT HUP; do
    # A fresh file each round: the last round's table must not stand for
    # this watcher's (signalled before it blocks the signals).
    rm -f "$tmp/watch" "$tmp/watch.err"
    "$bk" status --watch --interval 10ms >"$tmp/watch" 2>"$tmp/watch.err" &
    wp=$!
    pids="$wp"
    eventually grep -q '^s ' "$tmp/watch" || fail "no table"
    kill -"$sig" "$wp"
    eventually gone "$wp" || fail "SIG$sig did not stop the watch"
    status_of "$wp" || fail "SIG$sig: exit $?, expected 0"
    pids=
    [ ! -s "$tmp/watch.err" ] || fail "SIG$sig: $(cat "$tmp/watch.err")"
    # No change, no line: the path and the table alone, whole.
    [ "$(wc -l <"$tmp/watch")" -eq 3 ] || fail "SIG$sig: output: $(cat "$tmp/watch")"
  done
  ;;
watch_usage_errors)
  expect 0 "$bk" exec u -- true
  expect 64 "$bk" status --count 1
  expect 64 "$bk" status --interval 1s
  expect 64 "$bk" status --watch --json
  expect 64 "$bk" status --watch --interval 0
  expect 64 "$bk" status --watch --interval soon
  grep -q 'expected a duration' "$tmp/err" || fail "--interval: no accepted forms said"
  expect 64 "$bk" status --watch --count 0
  expect 66 "$bk" status nosuch --watch
  expect 66 "$bk" status --watch --store "$tmp/none.store"
  ;;
exec_forwards_stop_signals_to_the_group)
  # SIGTERM to breaker exec reaches the whole process group (here a
  # grandchild too); the call counts as cancelled, not as a failure.
  "$bk" exec fwd -- sh -c 'sleep 300 & echo $! >"$1/grandchild.tmp"; mv "$1/grandchild.tmp" "$1/grandchild"; wait' \
    sh "$tmp" >"$tmp/exec.out" 2>&1 &
  ep=$!
  pids="$ep"
  eventually test -s "$tmp/grandchild" || fail "the command did not start"
  gc=$(cat "$tmp/grandchild")
  pids="$ep $gc"
  kill -TERM "$ep"
  status_of "$ep"; st=$?
  [ "$st" -eq 143 ] || fail "SIGTERM: exit $st, expected 143 (128 + SIGTERM)"
  eventually gone "$gc" || fail "the grandchild survived the forwarded SIGTERM"
  pids=
  # SIGINT as well (a background job of a script has it ignored: breaker
  # exec must still take it, and the command must not inherit the ignore).
  "$bk" exec fwd -- sh -c 'echo $$ >"$1/child.tmp"; mv "$1/child.tmp" "$1/child"; exec sleep 300' \
    sh "$tmp" >"$tmp/exec.out" 2>&1 &
  ep=$!
  pids="$ep"
  eventually test -s "$tmp/child" || fail "the command did not start"
  pids="$ep $(cat "$tmp/child")"
  kill -INT "$ep"
  status_of "$ep"; st=$?
  [ "$st" -eq 130 ] || fail "SIGINT: exit $st, expected 130 (128 + SIGINT)"
  pids=
  expect 0 "$bk" status fwd --prometheus
  [ "$(value 'breaker_cancelled_calls_total{breaker="fwd"}' "$tmp/out")" = 2 ] ||
    fail "not 2 cancelled calls: $(grep fwd "$tmp/out" | grep -v config)"
  [ "$(value 'breaker_calls_total{breaker="fwd",outcome="failure"}' "$tmp/out")" = 0 ] ||
    fail "a stopped call counted as a failure"
  ;;
exec_child_killed_by_signal_is_a_failure)
  # Killed by a signal breaker exec did not send: the dependency's doing.
  expect 137 "$bk" exec killed -- sh -c 'kill -KILL $$'
  expect 143 "$bk" exec killed -- sh -c 'kill -TERM $$'
  expect 0 "$bk" status killed --json
  grep -q '"failures": 2, "ignored": 0' "$tmp/out" || fail "not 2 failures: $(cat "$tmp/out")"
  # And they trip the breaker like any failure.
  expect 137 "$bk" exec killed2 -b 'trip=consecutive,failure_threshold=1,open=1h,open_max=1h' \
    -- sh -c 'kill -KILL $$'
  expect 75 "$bk" exec killed2 -- true
  ;;
default_dir_must_be_private)
  # The default directories: /run/breaker for root, checked in a private
  # mount namespace over an empty directory mounted on /run, and
  # /tmp/breaker-UID for a user that does not exist (its UID is free and
  # unique to this run). This needs root, unshare and setpriv.
  if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null ||
    ! unshare --mount --propagation private true 2>/dev/null; then
    echo "skipped: needs root, unshare --mount and setpriv"
    exit 77
  fi
  case $(readlink -f "$bk") in
  /run/*) echo "skipped: the binary is under /run, which the test mounts over"; exit 77 ;;
  esac
  mkdir "$tmp/run" || fail "mkdir"
  unshare --mount --propagation private sh -c \
    'mount --bind "$1/run" /run && exec sh "$2" default_dir_inside "$3"' sh "$tmp" "$0" "$bk"
  exit $?
  ;;
default_dir_inside)
  # (default_dir_must_be_private, in its namespace: /run is ours.)
  unset BREAKER_STORE XDG_RUNTIME_DIR
  u=$((4000000 + $$ % 1000000))
  trap 'cleanup; rm -rf "/tmp/breaker-$u"' EXIT
  # A directory the user may write, for the command's marker and its own.
  chmod 0711 "$tmp" && mkdir -m 1777 "$tmp/pub" || fail "mkdir"
  ran=$tmp/pub/ran
  # mode PATH: "MODE UID" of PATH.
  mode() { stat -c '%a %u' "$1"; }
  refused() { # refused WHY COMMAND...: exit 77 (EX_NOPERM), WHY said, the command not run
    why=$1; shift
    rm -f "$ran"
    expect 77 "$@"
    grep -q "store directory .* refused: $why" "$tmp/err" || fail "'$*': $(cat "$tmp/err")"
    grep -q 'use --store or BREAKER_STORE' "$tmp/err" || fail "no way out said: $(cat "$tmp/err")"
    [ ! -e "$ran" ] || fail "'$*' ran the command"
  }
  # root: /run/breaker is created 0700.
  expect 0 "$bk" exec d -- touch "$ran"
  [ "$(mode /run/breaker)" = "700 0" ] || fail "/run/breaker: $(mode /run/breaker)"
  [ -f /run/breaker/breakers.store ] || fail "no store in /run/breaker"
  chmod 0755 /run/breaker
  expect 0 "$bk" status d # readable by others is fine: only writing matters
  chown 65534 /run/breaker
  refused "owned by uid 65534, not by this user (uid 0)" "$bk" exec d -- touch "$ran"
  refused "owned by uid 65534" "$bk" status
  chown 0 /run/breaker && chmod 0777 /run/breaker
  refused "mode 0777: writable by group or others" "$bk" exec d -- touch "$ran"
  chmod 0775 /run/breaker
  refused "mode 0775: writable by group or others" "$bk" ls
  mv /run/breaker /run/elsewhere && chmod 0700 /run/elsewhere && ln -s elsewhere /run/breaker
  refused "a symbolic link" "$bk" exec d -- touch "$ran"
  # Another user: /tmp/breaker-UID, created 0700, and nothing else taken.
  as_user() { setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }
  d=/tmp/breaker-$u
  rm -rf "$d" "$ran"
  expect 0 as_user "$bk" exec d -- touch "$ran"
  [ -e "$ran" ] || fail "user: the command did not run"
  [ "$(mode "$d")" = "700 $u" ] || fail "$d: $(mode "$d")"
  chmod 0750 "$d"
  refused "mode 0750: open to group or others (must be 0700)" as_user "$bk" exec d -- touch "$ran"
  chmod 0700 "$d"
  expect 0 as_user "$bk" status d
  # The same store from a login shell (XDG_RUNTIME_DIR set) as from cron
  # (unset), and status says which file it read.
  mkdir -m 0700 "$tmp/pub/xdg" && chown "$u" "$tmp/pub/xdg"
  expect 0 as_user env XDG_RUNTIME_DIR="$tmp/pub/xdg" "$bk" status d
  grep -q "^Store $d/breakers.store$" "$tmp/out" || fail "login shell: $(cat "$tmp/out" "$tmp/err")"
  [ -z "$(ls -A "$tmp/pub/xdg")" ] || fail "a store in XDG_RUNTIME_DIR: $(ls -A "$tmp/pub/xdg")"
  # Made first by someone else (here root), even closed: not ours.
  rm -rf "$d" && mkdir -m 0700 "$d"
  refused "owned by uid 0, not by this user (uid $u)" as_user "$bk" exec d -- touch "$ran"
  mine=$tmp/pub/mine
  rm -rf "$d" && mkdir -m 0700 "$mine" && chown "$u" "$mine" && ln -s "$mine" "$d"
  refused "a symbolic link" as_user "$bk" exec d -- touch "$ran"
  # --store and BREAKER_STORE are the user's choice: not checked (here a
  # directory open to others, which the default path would refuse).
  chmod 0755 "$mine"
  expect 0 as_user "$bk" exec d --store "$mine/b.store" -- true
  expect 0 setpriv --reuid "$u" --regid "$u" --clear-groups env BREAKER_STORE="$mine/b.store" \
    "$bk" status d
  ;;
operator_opens_for_a_time_and_shadow_mode)
  # issue 25: `open --for D` (a timed open, reason operator) and `shadow NAME
  # on|off`, each seen at once by every process (each command below is one).
  expect 0 "$bk" exec api -b 'trip=consecutive,failure_threshold=1' -- true
  expect 0 "$bk" open api --for 1h
  grep -q '^api: open (generation 2) for 60m, then a probe$' "$tmp/out" || fail "open --for: $(cat "$tmp/out")"
  expect 75 "$bk" exec api -- true
  expect 0 "$bk" shadow api on
  grep -q '^api: open, shadow on (generation 2)$' "$tmp/out" || fail "shadow on: $(cat "$tmp/out")"
  ran=$tmp/ran
  expect 0 "$bk" exec api -- touch "$ran"
  [ -e "$ran" ] || fail "shadow mode refused the command"
  expect 0 "$bk" status api --json
  grep -q '"state": "open", "generation": 2,.*"shadow": true, "would_reject": 1}' "$tmp/out" ||
    fail "status --json: $(cat "$tmp/out")"
  expect 0 "$bk" status api
  grep -q '^api: shadow mode: refuses nothing; would have refused 1 calls (open 1, half_open 0, forced 0, ramp 0), of which 1 succeeded and 0 failed$' "$tmp/out" ||
    fail "status: $(cat "$tmp/out")"
  expect 0 "$bk" status --prometheus
  cp "$tmp/out" "$tmp/all.prom"
  [ "$(value 'breaker_shadow{breaker="api"}' "$tmp/all.prom")" = 1 ] || fail "breaker_shadow not 1"
  [ "$(value 'breaker_would_reject_calls_total{breaker="api",reason="open"}' "$tmp/all.prom")" = 1 ] ||
    fail "would_reject open not 1"
  [ "$(value 'breaker_timed_opens_total{breaker="api",reason="operator"}' "$tmp/all.prom")" = 1 ] ||
    fail "timed opens not 1"
  expect 0 "$bk" shadow api off
  expect 75 "$bk" exec api -- true
  # What is refused, and how.
  expect 64 "$bk" shadow api maybe
  expect 64 "$bk" shadow api
  grep -q "expected on or off after NAME" "$tmp/err" || fail "shadow NAME: $(cat "$tmp/err")"
  expect 64 "$bk" open api --for 0
  expect 64 "$bk" reset api --for 1h
  expect 0 "$bk" close api --for 30ms
  grep -q '^api: forced_closed (generation 3) for 30ms, then normal operation$' "$tmp/out" ||
    fail "close --for: $(cat "$tmp/out")"
  closed_again() { "$bk" status api >"$tmp/st" 2>&1 && grep -q '^api  *closed ' "$tmp/st"; }
  eventually closed_again || fail "close --for did not end: $(cat "$tmp/st")"
  expect 66 "$bk" shadow nosuch on
  # --why over a store: the control's text, for this process's transition.
  expect 0 "$bk" open api --why 'drill: failover test'
  grep -q "^api: forced_open (generation [0-9]*), by $me@.*: drill: failover test\$" "$tmp/out" ||
    fail "open --why: $(cat "$tmp/out")"
  expect 64 "$bk" reset api --why "$(printf 'two\nlines')"
  grep -q -- "--why: a control character at byte 4" "$tmp/err" || fail "--why: $(cat "$tmp/err")"
  expect 0 "$bk" reset api
  ;;
status_shows_who_forced_and_why)
  # The store file keeps the last operator control: `breaker status`, in
  # another process than the one that gave it, says who, why and since when.
  expect 0 "$bk" exec api -- true
  expect 0 "$bk" exec other -- true
  expect 0 "$bk" status
  grep -q '^api: ' "$tmp/out" && fail "a line before any control: $(cat "$tmp/out")"
  expect 0 "$bk" status api --json
  grep -q '"transitions": 0, "last_control": null, "shadow": false' "$tmp/out" ||
    fail "status --json before a control: $(cat "$tmp/out")"
  expect 0 "$bk" open api --why 'payment provider maintenance'
  t='20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z'
  expect 0 "$bk" status
  grep -q "^api: forced_open since $t by $me@[^ ]*: payment provider maintenance (generation 2)\$" "$tmp/out" ||
    fail "status: $(cat "$tmp/out")"
  grep -q '^other: ' "$tmp/out" && fail "a line for a breaker never controlled: $(cat "$tmp/out")"
  # The table's lines stay as they were.
  grep -q '^api  *forced_open  *2  until reset ' "$tmp/out" || fail "status table: $(cat "$tmp/out")"
  expect 0 "$bk" status api --json
  grep -q "\"last_control\": {\"action\": \"forced_open\", \"who\": \"$me@[^\"]*\", \"why\": \"payment provider maintenance\", \"at\": \"$t\", \"until\": null, \"generation\": 2}, \"shadow\": false" "$tmp/out" ||
    fail "status --json: $(cat "$tmp/out")"
  # A timed one has an end; a JSON consumer parses it.
  expect 0 "$bk" close api --for 1h --why 'drill "quoted"'
  expect 0 "$bk" status api
  grep -q "^api: forced_closed since $t until $t by $me@[^ ]*: drill \"quoted\" (generation 3)\$" "$tmp/out" ||
    fail "status after close --for: $(cat "$tmp/out")"
  expect 0 "$bk" status --json
  if command -v python3 >/dev/null 2>&1; then
    python3 -c '
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))}
c = rows["api"]["last_control"]
assert c["action"] == "forced_closed" and c["why"] == "drill \"quoted\"", c
assert c["generation"] == 3 and c["until"] > c["at"], c
assert rows["other"]["last_control"] is None, rows["other"]
' "$tmp/out" || fail "status --json does not parse: $(cat "$tmp/out")"
  fi
  # Who is the real uid's name and the host's, never $USER: not under
  # env -i (cron's environment: no USER, no LOGNAME), not with USER set to
  # someone else.
  expect 0 env -i BREAKER_STORE="$BREAKER_STORE" "$bk" close api --why 'from cron'
  expect 0 "$bk" status api
  grep -q "^api: forced_closed since $t by $me@$(uname -n): from cron (generation 4)\$" "$tmp/out" ||
    fail "status after env -i: $(cat "$tmp/out")"
  expect 0 env USER=mallory LOGNAME=mallory "$bk" open api --why 'claimed'
  expect 0 "$bk" status api
  grep -q "^api: forced_open since $t by $me@$(uname -n): claimed (generation 5)\$" "$tmp/out" ||
    fail "status after USER=mallory: $(cat "$tmp/out")"
  # A reset without --why: who only, "at" rather than "since".
  expect 0 "$bk" reset api
  expect 0 "$bk" status api
  grep -q "^api: reset at $t by $me@[^ ]* (generation 6)\$" "$tmp/out" || fail "status after reset: $(cat "$tmp/out")"
  # Text from the file reaches the terminal escaped: a C1 control (U+009B,
  # a terminal's CSI) the library's printable check lets through.
  expect 0 "$bk" open api --why "$(printf 'x\302\233[31my')"
  expect 0 "$bk" status api
  grep -q "by $me@[^ ]*: x"'\\xc2\\x9b\[31my (generation 7)$' "$tmp/out" ||
    fail "status does not escape the text: $(od -c "$tmp/out" | tail -5)"
  ;;
config_changes_the_limits_live)
  # issue 25: `breaker config NAME [key=value...]`, shown and changed live
  # for every process (each command is one), refusals named.
  expect 0 "$bk" exec api -b 'trip=consecutive,failure_threshold=5,open=1h' -- true
  expect 0 "$bk" config api
  grep -q '^api: configuration generation 1$' "$tmp/out" || fail "config: $(cat "$tmp/out")"
  grep -q '^failure_threshold=5$' "$tmp/out" || fail "config: $(cat "$tmp/out")"
  expect 0 "$bk" config api failure_threshold=1 open_jitter=0 open=90s
  grep -q '^api: configuration generation 1 -> 2: failure_threshold=1 open_jitter=0 open=90s$' "$tmp/out" ||
    fail "config change: $(cat "$tmp/out")"
  expect 1 "$bk" exec api -- false # trips at the new threshold
  expect 0 "$bk" status api
  grep -q '^api  *open  *2  1m30s ' "$tmp/out" || fail "status after the change: $(cat "$tmp/out")"
  expect 78 "$bk" config api trip=count_window
  grep -q 'trip: consecutive -> count_window: cannot change on a running breaker' "$tmp/err" ||
    fail "trip refusal: $(cat "$tmp/err")"
  # In the command's keys and durations, not the library's fields in ns.
  expect 78 "$bk" config api slow_call=5ms
  grep -q 'api: slow_call: 0 -> 5ms: cannot change on a running breaker' "$tmp/err" ||
    fail "slow_call refusal: $(cat "$tmp/err")"
  expect 78 "$bk" config api bogus=1
  expect 64 "$bk" config api nokey
  expect 66 "$bk" config nosuch failure_threshold=2
  expect 0 "$bk" config api
  grep -q '^api: configuration generation 2$' "$tmp/out" || fail "generation: $(cat "$tmp/out")"
  ;;
exec_gives_up_on_a_held_store_lock)
  # Another process holds the store file's lock (flock(1), whose sleep
  # inherits it), then is stopped under it: every command gives up after
  # the library's bound (1 s) with exit 74 naming the holder, runs nothing,
  # and works again once the holder is gone.
  expect 0 "$bk" exec api -- true
  held() { ! flock -n -x "$BREAKER_STORE" true; }
  flock -x "$BREAKER_STORE" sleep 60 &
  holder=$!
  pids="$pids $holder"
  eventually held || fail "flock(1) did not take the lock"
  children() { sleeper=$(cat "/proc/$holder/task/$holder/children" 2>/dev/null) && [ -n "$sleeper" ]; }
  eventually children || fail "flock(1) started no sleep"
  pids="$pids $sleeper"
  for how in running stopped; do
    [ "$how" = stopped ] && kill -STOP "$holder"
    start=$(date +%s%N)
    expect 74 timeout 30 "$bk" exec api -- touch "$tmp/ran"
    took=$((($(date +%s%N) - start) / 1000000))
    echo "holder $how: breaker exec exited 74 after $took ms: $(cat "$tmp/err")"
    [ ! -e "$tmp/ran" ] || fail "the command ran without the breaker"
    grep -q "its lock is held by process $holder" "$tmp/err" || fail "holder not named: $(cat "$tmp/err")"
    if [ "$how" = stopped ]; then
      grep -q "process $holder (stopped)" "$tmp/err" || fail "not said stopped: $(cat "$tmp/err")"
    fi
    grep -q "waited 1000 ms" "$tmp/err" || fail "bound not said: $(cat "$tmp/err")"
    expect 74 timeout 30 "$bk" status api
    expect 74 timeout 30 "$bk" open api
  done
  kill -KILL "$holder" "$sleeper"
  free() { flock -n -x "$BREAKER_STORE" true; }
  eventually free || fail "the lock stayed held after its holders were killed"
  expect 0 "$bk" exec api -- touch "$tmp/ran"
  [ -e "$tmp/ran" ] || fail "the command did not run once the lock was free"
  ;;
*)
  echo "unknown case $case_name"
  exit 2
  ;;
esac
echo ok
