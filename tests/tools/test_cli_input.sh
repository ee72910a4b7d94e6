#!/bin/sh
# SPDX-License-Identifier: MIT
# test_cli_input.sh - the `breaker` command on input that is too long, too
# many, hostile or empty: each is refused with a message that names the
# option and the limit, or taken whole; never cut, dropped or echoed raw.
#
#   sh test_cli_input.sh CASE BREAKER [DATA_DIR]
#
# One ctest test per CASE (tests/tools/tools.cmake). A case prints what went wrong
# and exits 1; a crash or a sanitizer report fails it too.
set -u
case_name=$1
bk=$2
data=${3:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "FAIL: $case_name: $*"
    echo "--- stdout"
    cat "$tmp/out" 2>/dev/null
    echo "--- stderr"
    cat "$tmp/err" 2>/dev/null
    exit 1
}

# run EXPECTED_STATUS ARGS...: run the tool, keep its output in $tmp/out and
# $tmp/err, and check its exit status and that no sanitizer spoke.
run() {
    want=$1
    shift
    "$bk" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq "$want" ] || fail "exit status $got, expected $want: $bk $*"
    if grep -q -e 'runtime error' -e 'AddressSanitizer' -e 'LeakSanitizer' "$tmp/err"; then
        fail "a sanitizer reported an error"
    fi
}

err_has() { grep -q -e "$1" "$tmp/err" || fail "standard error lacks '$1'"; }
out_has() { grep -q -e "$1" "$tmp/out" || fail "standard output lacks '$1'"; }

# A string of N copies of CHAR.
repeat() { printf "%${2}s" "" | tr ' ' "$1"; }

printf 'timestamp,duration,outcome\n0,0.010,ok\n1,0.010,503\n' >"$tmp/t.csv"
# A scenario short enough to run dozens of times in a test.
printf '[scenario]\nduration = 2s\nrate = 50\n' >"$tmp/s.ini"

case $case_name in
long_set_key_is_refused_not_a_crash)
    # Used to be cut to 255 bytes, losing the '=', and written through NULL.
    for cmd in "replay $tmp/t.csv" "simulate --no-baseline -b x:open=1s $tmp/s.ini"; do
        # shellcheck disable=SC2086
        run 78 $cmd -s "$(repeat k 300)=5"
        err_has "--set unknown key '$(repeat k 64)\\.\\.\\.'"
    done
    ;;
long_set_value_is_not_cut)
    # 'open=5s<300 blanks>x' used to be taken as open=5s.
    run 78 replay -s "open=5s$(repeat ' ' 300)x" "$tmp/t.csv"
    err_has "--set open: expected a duration"
    # A long value that is right is taken whole (it was cut to 0s).
    run 0 replay -b 'x:trip=consecutive,failure_threshold=1,open_jitter=0' \
        -s "open=$(repeat 0 300)5s" \
        "$tmp/t.csv"
    out_has "1 failures in a row; open for 5s"
    ;;
long_breaker_name_is_refused_with_the_limit)
    run 0 replay -b "$(repeat n 47):open=2s" "$tmp/t.csv"
    out_has "== $(repeat n 47): open=2s"
    run 78 replay -b "$(repeat n 48):open=2s" "$tmp/t.csv"
    err_has "breaker name '$(repeat n 48)' is 48 characters long; at most 47"
    ;;
long_ini_section_gives_one_configuration)
    # Names of 42..47 characters used to give two configurations, one with
    # the keys under the name cut to 41 characters.
    printf '[breaker %s]\nopen = 2s\n' "$(repeat n 45)" >"$tmp/b.ini"
    run 0 replay -c "$tmp/b.ini" "$tmp/t.csv"
    [ "$(grep -c '^== ' "$tmp/out")" -eq 1 ] || fail "expected one configuration"
    out_has "== $(repeat n 45): open=2s"
    printf '[breaker %s]\nopen = 2s\n' "$(repeat n 60)" >"$tmp/b.ini"
    run 78 replay -c "$tmp/b.ini" "$tmp/t.csv"
    err_has "b.ini:1: breaker name '$(repeat n 60)' is 60 characters long; at most 47"
    ;;
seventeenth_override_is_applied)
    # Only the first 16 scenario overrides used to count.
    set --
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do set -- "$@" --seed "$i"; done
    run 64 simulate "$tmp/s.ini" --duration 1s "$@" --workers 0
    err_has "--workers: bad value '0'"
    run 0 simulate "$tmp/s.ini" --duration 1s "$@" --seed 99
    out_has "(seed 99,"
    ;;
more_than_64_configurations_all_shown)
    set --
    i=1
    while [ "$i" -le 70 ]; do
        set -- "$@" -b "c$i:open=1s"
        i=$((i + 1))
    done
    run 0 simulate "$tmp/s.ini" --no-baseline --svg "$tmp/s.svg" "$@"
    head -n 12 "$tmp/out" | grep -q ' c70$' || fail "the table lacks column c70"
    grep -q '>c70<' "$tmp/s.svg" || fail "the picture lacks panel c70"
    ;;
control_bytes_are_escaped)
    esc=$(printf '\033')
    printf '0,0.010,%s[31mred\n' "$esc" >"$tmp/esc.csv"
    run 65 replay "$tmp/esc.csv"
    err_has 'bad outcome .\\x1b\[31mred'
    printf '[breaker b]\nopen = %s]0;owned\a\n' "$esc" >"$tmp/esc.ini"
    run 78 replay -c "$tmp/esc.ini" "$tmp/t.csv"
    err_has 'open: .*\\x1b\]0;owned\\x07'
    run 78 replay -b "b:open=${esc}[2J" "$tmp/t.csv"
    err_has 'open: .*\\x1b\[2J'
    run 78 replay -s "open=${esc}[2J" "$tmp/t.csv"
    err_has '--set open: .*\\x1b\[2J'
    # Nothing raw reached the terminal in any of them.
    if LC_ALL=C grep -q "$esc" "$tmp/err"; then fail "a raw escape byte on standard error"; fi
    ;;
empty_trace_is_said_and_can_fail)
    : >"$tmp/empty.csv"
    run 0 replay "$tmp/empty.csv"
    err_has "warning: .*empty.csv: no calls in the trace"
    out_has "0 calls"
    run 65 replay --fail-empty "$tmp/empty.csv"
    err_has "no calls in the trace"
    # A trace with calls is not affected.
    run 0 replay --fail-empty "$tmp/t.csv"
    ;;
mistyped_options_and_commands_suggest_the_closest)
    run 64 simulate --sed 5
    err_has "^breaker simulate: unknown option '--sed'; did you mean '--seed'?"
    run 64 simulate --dureation=1m
    err_has "^breaker simulate: unknown option '--dureation'; did you mean '--duration'?"
    run 64 replay --max-trps 1 "$tmp/t.csv"
    err_has "^breaker replay: unknown option '--max-trps'; did you mean '--max-trips'?"
    run 64 simlate
    err_has "^breaker: unknown command 'simlate'; did you mean 'simulate'?"
    run 64 replya "$tmp/t.csv"
    err_has "^breaker: unknown command 'replya'; did you mean 'replay'?"
    # Nothing close: no guess.
    run 64 simulate --frobnicate
    err_has "^breaker simulate: unknown option '--frobnicate'$"
    # Configuration keys, wherever they are read: -b, -s, a -c file,
    # `breaker config NAME key=value`; the _ns spellings and simulate's keys
    # are candidates too; nothing close keeps the list of every key.
    run 78 simulate -b 'x:failure_treshold=3' "$tmp/s.ini"
    err_has "unknown key 'failure_treshold'; did you mean 'failure_threshold'?$"
    run 78 replay -s 'probe_timout=1s' "$tmp/t.csv"
    err_has "unknown key 'probe_timout'; did you mean 'probe_timeout'?$"
    run 78 replay -s 'opn_max_ns=1s' "$tmp/t.csv"
    err_has "unknown key 'opn_max_ns'; did you mean 'open_max_ns'?$"
    run 78 simulate -b 'x:shadw=yes' "$tmp/s.ini"
    err_has "unknown key 'shadw'; did you mean 'shadow'?$"
    printf '[breaker x]\nwindow_bucket = 5\n' >"$tmp/k.ini"
    run 78 replay -c "$tmp/k.ini" "$tmp/t.csv"
    err_has "k.ini:2: .*unknown key 'window_bucket'; did you mean 'window_buckets'?$"
    export BREAKER_STORE="$tmp/b.store"
    run 0 exec api -- true
    run 78 config api min_cals=5
    err_has "unknown key 'min_cals'; did you mean 'min_calls'?$"
    run 78 simulate -b 'x:frobnicate=3' "$tmp/s.ini"
    err_has "unknown key 'frobnicate' (keys: trip, failure_threshold, .*, seed)$"
    ;;
every_message_has_the_command_prefix)
    # getopt's own messages ("simulate: unrecognized option") are replaced.
    run 64 simulate --bogus
    grep -v -e '^breaker simulate: ' -e "^Try 'breaker simulate --help'.$" "$tmp/err" &&
        fail "a message without the prefix"
    run 64 replay --svg
    err_has "^breaker replay: option '--svg' needs a value$"
    run 64 simulate -c
    err_has "^breaker simulate: option '-c' needs a value$"
    # Malformed trace lines too.
    printf '0,0.010,maybe\n' >"$tmp/bad.csv"
    run 65 replay "$tmp/bad.csv"
    err_has "^breaker replay: .*bad.csv:1: bad outcome 'maybe'"
    ;;
bad_values_say_the_accepted_formats)
    formats='250ms, 1.5s, 1m30s (units ns us ms s m h d)'
    run 64 simulate --duration soon
    err_has "^breaker simulate: --duration: bad value 'soon': expected a duration above 0 such as $formats"
    run 64 simulate --timeout 0
    err_has "--timeout: bad value '0': expected a duration above 0 such as $formats"
    run 64 simulate --workers many
    err_has "--workers: bad value 'many': expected a whole number from 1 to 100000"
    printf '[scenario]\nduration = soon\n' >"$tmp/bad.ini"
    run 78 simulate "$tmp/bad.ini"
    err_has "bad.ini:2: scenario: duration: expected a duration such as $formats, got 'soon'"
    printf '0,abc,ok\n' >"$tmp/bad.csv"
    run 65 replay "$tmp/bad.csv"
    err_has "bad duration 'abc': expected seconds such as 0.250, or a duration such as $formats"
    ;;
messages_show_durations_for_people)
    # breaker_config_validate() counts in nanoseconds; the tool shows them.
    run 78 replay -b 'x:open=10s,open_max=5s' "$tmp/t.csv"
    err_has "open_max: must be >= open (10s), got 5s"
    if grep -q '[0-9] ns' "$tmp/err"; then fail "raw nanoseconds in a message"; fi
    ;;
compound_durations_are_read_everywhere)
    printf '[scenario]\nduration = 1m30s\nrate = 5\ntimeout = 1s500ms\n' >"$tmp/c.ini"
    run 0 simulate --no-baseline -b 'x:open=1m30s' "$tmp/c.ini"
    out_has "(seed 1, 1m30s)"
    out_has "1.5s timeout per call"
    run 0 simulate --no-baseline -b x:open=1s --duration 1m30s --timeout 1s250ms "$tmp/s.ini"
    out_has "(seed 1, 1m30s)"
    out_has "1.25s timeout per call"
    run 0 replay -b 'x:trip=consecutive,failure_threshold=1,open_jitter=0' -s open=1m30s \
        "$tmp/t.csv"
    out_has "open for 1m30s"
    printf 'ts,duration,outcome\n0,1m30s,ok\n' >"$tmp/c.csv"
    run 0 replay "$tmp/c.csv"
    out_has "of 1m30s"
    ;;
durations_need_a_unit_at_every_entry_point)
    # One rule (docs/cli.md, "Durations"): a duration carries its unit; a
    # bare number is refused, naming the units, wherever the command reads
    # one. Zero needs none; a breaker key spelled _ns takes nanoseconds.
    units='has no unit: write it with one of ns, us, ms, s, m, h, d, such as 5s'
    export BREAKER_STORE="$tmp/b.store"
    run 78 simulate -b 'x:open=5' "$tmp/s.ini"
    err_has "open: '5' $units (or give open_ns in nanoseconds)"
    run 78 replay -s 'probe_timeout=5' "$tmp/t.csv"
    err_has "probe_timeout: '5' $units"
    printf '[breaker x]\nslow_call = 5\n' >"$tmp/b.ini"
    run 78 replay -c "$tmp/b.ini" "$tmp/t.csv"
    err_has "b.ini:2: .*slow_call: '5' $units"
    printf '[scenario]\nduration = 2s\nrate = 50\n[breaker x]\nwindow = 5\n' >"$tmp/w.ini"
    run 78 simulate "$tmp/w.ini"
    err_has "w.ini:5: .*window: '5' $units"
    printf '[scenario]\nduration = 2s\nrate = 50\ntimeout = 5\n' >"$tmp/t5.ini"
    run 78 simulate "$tmp/t5.ini"
    err_has "t5.ini:4: scenario: timeout: expected a duration such as .*(units ns us ms s m h d), got '5'"
    run 64 simulate --timeout 5 "$tmp/s.ini"
    err_has "--timeout: bad value '5': expected a duration above 0 such as .*(units ns us ms s m h d)"
    run 64 simulate --duration 5 "$tmp/s.ini"
    err_has "--duration: bad value '5': expected .*(units ns us ms s m h d)"
    run 78 exec api -b 'ramp=5' -- true
    err_has "ramp: '5' $units"
    run 64 exec api --timeout 5 -- true
    err_has "^breaker exec: --timeout: '5' $units (a duration above 0)"
    run 0 exec api -- true
    run 78 config api open=5
    err_has "open: '5' $units"
    run 64 open api --for 5
    err_has "^breaker open: --for: '5' $units (a duration from 1ms to 365d)"
    run 64 close api --for 5
    err_has "^breaker close: --for: '5' $units"
    run 64 status --watch --interval 5
    err_has "^breaker status: --interval: '5' $units (a duration from 1ms to 1d)"
    run 64 exec api --redis 127.0.0.1 --redis-timeout 5 -- true
    err_has "^breaker exec: --redis-timeout: '5' $units (a duration from 1ms to 1m)"
    # With the unit, as _ns, or zero: taken.
    run 0 replay -b 'x:trip=consecutive,failure_threshold=1,open_jitter=0,open_ns=5000000000' \
        "$tmp/t.csv"
    out_has "open for 5s"
    run 0 replay -b 'x:slow_call=0,ramp=0' "$tmp/t.csv"
    run 0 config api open=5s
    ;;
svg_dash_writes_the_picture_to_standard_output)
    cd "$tmp" || exit 1
    run 0 simulate --no-baseline -b x:open=1s --svg - "$tmp/s.ini"
    head -c 5 "$tmp/out" | grep -q '^<?xml' || fail "standard output is not the SVG"
    grep -q '</svg>' "$tmp/out" || fail "the SVG is not whole"
    err_has "^requests "
    [ -e "$tmp/-" ] && fail "a file named '-' was written"
    run 0 replay --svg - "$tmp/t.csv"
    head -c 5 "$tmp/out" | grep -q '^<?xml' || fail "standard output is not the SVG"
    err_has "^Trace .*: 2 calls"
    [ -e "$tmp/-" ] && fail "a file named '-' was written"
    run 64 replay --json --svg - "$tmp/t.csv"
    err_has "--json and --svg - would both write to standard output"
    ;;
help_ends_with_the_manual_line)
    run 0 --help
    [ "$(tail -n 1 "$tmp/out")" = "See breaker(1) for the manual." ] ||
        fail "the last line of --help is '$(tail -n 1 "$tmp/out")'"
    ;;
replay_header_units_are_honoured_or_refused)
    # The issue's trace: latency_ms used to be read as seconds, exit 0.
    printf 'ts,latency_ms,status\n1700000000,12,200\n1700000001,15,503\n' >"$tmp/ms.csv"
    run 0 replay "$tmp/ms.csv"
    out_has "of 1.02s"
    printf 'ts,latency_minutes,status\n1700000000,12,200\n' >"$tmp/bad.csv"
    run 65 replay "$tmp/bad.csv"
    err_has "^breaker replay: .*bad.csv:1: header: column 2 'latency_minutes': unknown unit '_minutes'"
    printf 'ts,latency,status,path\n1700000000,12,200,/\n' >"$tmp/bad.csv"
    run 65 replay "$tmp/bad.csv"
    err_has "column 4 'path': unknown column name"
    # A spreadsheet's export: BOM, CRLF, ISO-8601 with an offset, quotes.
    run 0 replay -b 'x:trip=consecutive,failure_threshold=5' "$data/access_log.csv"
    out_has "Trace .*access_log.csv: 60 calls over 5.9s"
    out_has "2.430s       closed -> open"
    ;;
replay_json_summary)
    run 0 replay --json -b 'x:trip=consecutive,failure_threshold=5,open=1s' "$data/outage.csv"
    out_has '"format": "breaker-replay/1"'
    out_has '"trips": 1'
    grep -q '^Trace' "$tmp/out" && fail "the text report is mixed into the JSON"
    if command -v python3 >/dev/null; then
        python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["breakers"][0]["calls"] == 41' \
            <"$tmp/out" || fail "not valid JSON, or the wrong calls"
    fi
    ;;
replay_gates_exit_3)
    jumpy='jumpy:trip=consecutive,failure_threshold=3,open=1s,half_open_successes=1'
    run 3 replay --fail-on-flapping -b "$jumpy" "$data/flapping.csv"
    err_has "^breaker replay: jumpy: flapping: closed and tripped again within 1m 4 times"
    run 0 replay --fail-on-flapping -b 'calm:trip=consecutive,failure_threshold=5' \
        "$data/flapping.csv"
    run 3 replay --max-trips 4 -b "$jumpy" "$data/flapping.csv"
    err_has "^breaker replay: jumpy: tripped 5 times, more than --max-trips 4"
    run 0 replay --max-trips 5 -b "$jumpy" "$data/flapping.csv"
    run 64 replay --max-trips lots "$data/flapping.csv"
    err_has "--max-trips: bad value 'lots'"
    # A trace with malformed lines fails with 65 first: its gate means little.
    run 65 replay --max-trips 0 -b "$jumpy" "$data/malformed.csv"
    ;;
replay_caller_column_feeds_min_failing_sources)
    run 0 replay -b 'plain:trip=count_window,window_size=20,min_calls=10,min_failing_sources=1' \
        -b 'sources:trip=count_window,window_size=20,min_calls=10,min_failing_sources=3' \
        --json "$data/abusive_tenant.csv"
    out_has '"sources": true'
    tr -d '\n' <"$tmp/out" | grep -q '"name": "plain".*"trips": 1.*"name": "sources".*"trips": 0' ||
        fail "the plain breaker should trip once and the other never"
    ;;
*)
    echo "unknown case '$case_name'"
    exit 1
    ;;
esac
exit 0
