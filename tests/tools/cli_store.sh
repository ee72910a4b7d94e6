#!/bin/sh
# SPDX-License-Identifier: MIT
# `breaker exec|status|ls|open|close|reset` with real processes sharing a
# store file (tools/ops/). Usage: cli_store.sh BREAKER_BINARY
# Never sleeps for a breaker state: open=1h or forced states.
set -u
bk=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BREAKER_STORE="$tmp/b.store"
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expect STATUS COMMAND...: run, check the exit status
  want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  [ "$got" -eq "$want" ] || { cat "$tmp/err"; fail "'$*' exited $got, expected $want"; }
}
# (a) the command's status passes through
expect 0 "$bk" exec pass -- true
expect 3 "$bk" exec pass -- sh -c 'exit 3'
# (b) 50 separate processes, one trip: 5 run, 45 refused without running
cfg='trip=consecutive,failure_threshold=5,open=1h,open_max=1h'
i=0; ran=0; refused=0
while [ $i -lt 50 ]; do
  "$bk" exec trip -b "$cfg" -- sh -c "echo x >>'$tmp/ran'; false" 2>>"$tmp/refusals"
  case $? in 1) ;; 75) refused=$((refused + 1)) ;; *) fail "exec trip: unexpected status" ;; esac
  i=$((i + 1))
done
ran=$(wc -l <"$tmp/ran")
[ "$ran" -eq 5 ] || fail "the command ran $ran times, expected 5"
[ "$refused" -eq 45 ] || fail "$refused refusals, expected 45"
grep -q "next attempt allowed in" "$tmp/refusals" || fail "no retry-after in the refusal"
expect 0 "$bk" status trip --json
grep -q '"state": "open"' "$tmp/out" || fail "status: not open: $(cat "$tmp/out")"
grep -q '"transitions": 1,' "$tmp/out" ||
  fail "status: transitions not 1: $(cat "$tmp/out")"
# (c) --timeout kills the process group, exit 124, a failure
start=$(date +%s)
expect 124 "$bk" exec slow --timeout 200ms -- sleep 5
# Killed before sleep 5 would have ended (whole seconds; a loaded machine
# may take a while to start and reap the command).
[ $(($(date +%s) - start)) -lt 5 ] || fail "--timeout did not kill the command"
expect 0 "$bk" status slow --json
grep -q '"failures": 1' "$tmp/out" || fail "timeout not counted as a failure"
# (d) a missing command: 127, ignored
expect 127 "$bk" exec missing -- "$tmp/no-such-command"
expect 0 "$bk" status missing --json
grep -q '"failures": 0, "ignored": 1' "$tmp/out" || fail "exec failure not ignored"
# (d2) --source: failures of one source never trip a rate window (the
# default min_failing_sources is 3 once a failure names a source); the
# failures of three sources do.
rate='trip=count_window,window_size=20,min_calls=4,failure_rate=50%,open=1h'
for i in 1 2 3 4 5 6 7 8; do
  expect 1 "$bk" exec lone -b "$rate" --source job-a -- false
done
expect 0 "$bk" status lone --json
grep -q '"state": "closed"' "$tmp/out" || fail "--source: one source tripped: $(cat "$tmp/out")"
for s in job-a job-b job-c job-a job-b job-c; do
  "$bk" exec three -b "$rate" --source "$s" -- false 2>/dev/null # 1, then 75 once open
done
expect 0 "$bk" status three --json
grep -q '"state": "open"' "$tmp/out" || fail "--source: three sources did not trip: $(cat "$tmp/out")"
expect 64 "$bk" exec lone --source '' -- true
# (e) operator states
expect 0 "$bk" open pass
expect 0 "$bk" status pass --json
grep -q '"state": "forced_open"' "$tmp/out" || fail "open: not forced_open"
expect 75 "$bk" exec pass -- true
expect 0 "$bk" close pass
expect 0 "$bk" status pass
grep -q '^pass  *forced_closed' "$tmp/out" || fail "close: not forced_closed"
expect 0 "$bk" reset pass
expect 0 "$bk" status pass --json
grep -q '"state": "closed"' "$tmp/out" || fail "reset: not closed"
expect 66 "$bk" open nosuch
# (f) ls
expect 0 "$bk" ls
[ "$(tr '\n' ' ' <"$tmp/out")" = "pass trip slow missing lone three " ] || fail "ls: $(cat "$tmp/out")"
# (g) a missing store: exit 66 (EX_NOINPUT), said, not created
expect 66 "$bk" status --store "$tmp/none.store"
grep -q "no store at" "$tmp/err" || fail "missing store: no message"
[ ! -e "$tmp/none.store" ] || fail "status created the store"
# (h) usage errors
expect 64 "$bk" exec pass --bogus -- true
expect 64 "$bk" exec pass true
expect 64 "$bk" exec 'bad name' -- true
expect 64 "$bk" exec pass --fail-on 0 -- true
expect 64 "$bk" status a b
# --redis: the address forms, the options that need it, not with --store
# (usage errors, with or without the fleet store in the build)
expect 64 "$bk" exec pass --redis 'host:port' -- true
grep -q "expected HOST\[:PORT\], \[IPV6\]\[:PORT\] or unix:PATH" "$tmp/err" ||
  fail "--redis: the forms are not named: $(cat "$tmp/err")"
expect 64 "$bk" exec pass --redis '::1' -- true
expect 64 "$bk" exec pass --redis 'unix:' -- true
expect 64 "$bk" exec pass --redis 'h:0' -- true
expect 64 "$bk" exec pass --redis-db 1 -- true
grep -q -- "--redis-db needs --redis" "$tmp/err" || fail "--redis-db: $(cat "$tmp/err")"
expect 64 "$bk" exec pass --redis-password-file /dev/null -- true
expect 64 "$bk" exec pass --redis h --redis-timeout 0 -- true
expect 64 "$bk" exec pass --redis-cluster 'h:0' -- true
expect 64 "$bk" exec pass --redis-cluster 'unix:/x.sock' -- true
expect 64 "$bk" exec pass --redis-cluster 'a:1,,b:2' -- true
expect 64 "$bk" exec pass --redis h --redis-cluster h:7000 -- true
expect 64 "$bk" exec pass --redis-cluster h:7000 --redis h -- true
expect 64 "$bk" exec pass --redis-cluster h:7000 --redis-db 1 -- true
expect 64 "$bk" exec pass --redis h --store "$tmp/b.store" -- true
grep -q -- "--store and --redis: choose one" "$tmp/err" || fail "--store --redis: $(cat "$tmp/err")"
# COMMAND is told how it was admitted
expect 0 "$bk" exec pass -- sh -c 'echo "permit=$BREAKER_PERMIT"'
grep -q '^permit=call$' "$tmp/out" || fail "BREAKER_PERMIT: $(cat "$tmp/out")"
# --fail-on: unlisted statuses are ignored
expect 4 "$bk" exec codes --fail-on 1,3-5 -- sh -c 'exit 4'
expect 6 "$bk" exec codes --fail-on 1,3-5 -- sh -c 'exit 6'
expect 0 "$bk" status codes --json
grep -q '"failures": 1, "ignored": 1' "$tmp/out" || fail "--fail-on: $(cat "$tmp/out")"
# (i) a --timeout longer than the probe deadline is pointed out: such a probe
# could never close the breaker
expect 0 "$bk" exec longjob -b 'probe_timeout=2s' --timeout 5s -- true
grep -q "longer than the breaker's probe_timeout 2s" "$tmp/err" || fail "no probe_timeout note"
expect 0 "$bk" exec shortjob -b 'probe_timeout=10s' --timeout 5s -- true
[ ! -s "$tmp/err" ] || fail "a note without cause: $(cat "$tmp/err")"
echo ok
