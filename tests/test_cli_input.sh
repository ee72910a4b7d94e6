#!/bin/sh
# test_cli_input.sh - the `breaker` command on input that is too long, too
# many, hostile or empty: each is refused with a message that names the
# option and the limit, or taken whole; never cut, dropped or echoed raw.
#
#   sh test_cli_input.sh CASE BREAKER
#
# One ctest test per CASE (tests/tools.cmake). A case prints what went wrong
# and exits 1; a crash or a sanitizer report fails it too.
set -u
case_name=$1
bk=$2
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
        run 2 $cmd -s "$(repeat k 300)=5"
        err_has "--set unknown key '$(repeat k 64)\\.\\.\\.'"
    done
    ;;
long_set_value_is_not_cut)
    # 'open=5s<300 blanks>x' used to be taken as open=5s.
    run 2 replay -s "open=5s$(repeat ' ' 300)x" "$tmp/t.csv"
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
    run 2 replay -b "$(repeat n 48):open=2s" "$tmp/t.csv"
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
    run 1 replay -c "$tmp/b.ini" "$tmp/t.csv"
    err_has "b.ini:1: breaker name '$(repeat n 60)' is 60 characters long; at most 47"
    ;;
seventeenth_override_is_applied)
    # Only the first 16 scenario overrides used to count.
    set --
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do set -- "$@" --seed "$i"; done
    run 2 simulate "$tmp/s.ini" --duration 1s "$@" --workers 0
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
    run 1 replay "$tmp/esc.csv"
    err_has 'bad outcome .\\x1b\[31mred'
    printf '[breaker b]\nopen = %s]0;owned\a\n' "$esc" >"$tmp/esc.ini"
    run 1 replay -c "$tmp/esc.ini" "$tmp/t.csv"
    err_has 'open: .*\\x1b\]0;owned\\x07'
    run 2 replay -b "b:open=${esc}[2J" "$tmp/t.csv"
    err_has 'open: .*\\x1b\[2J'
    run 2 replay -s "open=${esc}[2J" "$tmp/t.csv"
    err_has '--set open: .*\\x1b\[2J'
    # Nothing raw reached the terminal in any of them.
    if LC_ALL=C grep -q "$esc" "$tmp/err"; then fail "a raw escape byte on standard error"; fi
    ;;
empty_trace_is_said_and_can_fail)
    : >"$tmp/empty.csv"
    run 0 replay "$tmp/empty.csv"
    err_has "warning: .*empty.csv: no calls in the trace"
    out_has "0 calls"
    run 1 replay --fail-empty "$tmp/empty.csv"
    err_has "no calls in the trace"
    # A trace with calls is not affected.
    run 0 replay --fail-empty "$tmp/t.csv"
    ;;
*)
    echo "unknown case '$case_name'"
    exit 1
    ;;
esac
exit 0
