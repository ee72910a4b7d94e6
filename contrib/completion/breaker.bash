# bash completion for breaker(1), the circuit breaker simulation tool.
#
# Installed as .../bash-completion/completions/breaker (loaded on demand by
# bash-completion); or source this file from ~/.bashrc. It needs nothing
# from bash-completion itself.
#
# Keep the option lists in step with tools/main.c: the test
# contrib/completion/check_completion.sh (ctest -L manuals) fails when
# `breaker simulate --help` or `breaker replay --help` prints an option that
# is not offered here.

# The configuration keys for -s/--set and -b/--breaker: those the installed
# tool lists with `breaker keys`, or this list if it cannot be run.
_breaker_static_keys="trip failure_threshold window_size window window_buckets min_calls
failure_rate slow_call slow_call_rate open open_backoff open_max open_jitter
half_open_max_probes half_open_successes probe_timeout ramp ramp_start
min_failing_sources cancelled_as seed shadow retry_after_opens"

_breaker_keys() {
    local tool=$1 keys
    if [[ -n $tool ]] && type -P -- "$tool" >/dev/null 2>&1; then
        keys=$("$tool" keys 2>/dev/null | sed -n 's/^  \([a-z_][a-z_]*\)  .*/\1/p')
    fi
    printf '%s\n' "${keys:-$_breaker_static_keys}"
}

# Values worth offering after KEY= (the enumerations; durations and numbers
# are free text).
_breaker_values() {
    case $1 in
    trip) echo "consecutive count_window time_window" ;;
    cancelled_as) echo "ignored failure" ;;
    esac
}

# Complete KEY=VALUE: the keys with '=' appended, then an enumeration's
# values. $1 is the tool, $2 the text typed so far; candidates are written to
# COMPREPLY in full (_breaker_trim removes what bash will not replace).
_breaker_assignment() {
    local tool=$1 text=$2 key
    if [[ $text == *=* ]]; then
        key=${text%%=*}
        COMPREPLY=($(compgen -P "$key=" -W "$(_breaker_values "$key")" -- "${text#*=}"))
    else
        COMPREPLY=($(compgen -S = -W "$(_breaker_keys "$tool")" -- "$text"))
        compopt -o nospace 2>/dev/null
    fi
}

# -b SPEC is NAME:key=value,key=value: after the ':' or a ',' offer keys.
_breaker_spec() {
    local tool=$1 text=$2 head tail
    [[ $text == *[:,]* ]] || return 0
    head=${text%"${text##*[:,]}"}
    tail=${text##*[:,]}
    _breaker_assignment "$tool" "$tail"
    COMPREPLY=("${COMPREPLY[@]/#/$head}")
    compopt -o nospace 2>/dev/null
}

# File names; with $2, directories and the files ending in $2 first, and
# every file if there is none.
_breaker_files() {
    local text=$1 ext=$2 IFS=$'\n'
    compopt -o filenames 2>/dev/null
    COMPREPLY=()
    if [[ -n $ext ]]; then
        COMPREPLY=($(compgen -f -X "!*$ext" -- "$text"))
        ((${#COMPREPLY[@]})) && COMPREPLY+=($(compgen -d -- "$text"))
    fi
    ((${#COMPREPLY[@]})) || COMPREPLY=($(compgen -f -- "$text"))
}

# Bash splits words at COMP_WORDBREAKS (':' and '=' among them) and replaces
# only the part of the word after the last such character: drop that prefix
# from each candidate.
_breaker_trim() {
    local cur=$1 prefix i
    prefix=${cur%"${cur##*[=:]}"}
    [[ -n $prefix ]] || return 0
    [[ $COMP_WORDBREAKS == *"${prefix: -1}"* ]] || return 0
    for i in "${!COMPREPLY[@]}"; do
        COMPREPLY[i]=${COMPREPLY[i]#"$prefix"}
    done
}

_breaker() {
    local simulate_opts="-c --config -b --breaker -s --set --seed --duration --workers
        --rate --timeout --instances --no-baseline --events --svg --print-scenario -h --help"
    local replay_opts="-c --config -b --breaker -s --set --svg --json --fail-empty
        --fail-on-flapping --max-trips -h --help"
    local commands="simulate replay keys help exec status ls open close reset shadow config"

    # The words up to the cursor, split at blanks only, so that KEY=VALUE
    # and NAME:key=value stay whole.
    local line=${COMP_LINE:0:COMP_POINT}
    local -a words
    read -r -a words <<<"$line"
    [[ $line == *[[:blank:]] || -z $line ]] && words+=("")
    local cur=${words[${#words[@]} - 1]}
    local prev=
    ((${#words[@]} > 1)) && prev=${words[${#words[@]} - 2]}
    local tool=${words[0]} cmd=${words[1]}
    COMPREPLY=()

    if ((${#words[@]} == 2)); then
        COMPREPLY=($(compgen -W "$commands -h --help -V --version" -- "$cur"))
        return 0
    fi

    local opts
    case $cmd in
    simulate) opts=$simulate_opts ;;
    replay) opts=$replay_opts ;;
    exec | status | ls | open | close | reset | shadow | config)
        # The store commands: their options only (NAME and COMMAND are free).
        local store_opts="--store -h --help"
        case $cmd in
        exec) store_opts="$store_opts -c --config -b --breaker --timeout --fail-on --refused-exit --source
            --redis --redis-cluster --redis-db --redis-password-file --redis-user --redis-timeout" ;;
        status) store_opts="$store_opts --json --prometheus --watch --interval --count" ;;
        open | close) store_opts="$store_opts --for --redis --redis-cluster --redis-db
            --redis-password-file --redis-user --redis-timeout --why" ;;
        reset | shadow | config) store_opts="$store_opts --redis --redis-cluster --redis-db
            --redis-password-file --redis-user --redis-timeout --why" ;;
        esac
        [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$store_opts" -- "$cur"))
        return 0
        ;;
    help)
        ((${#words[@]} == 3)) &&
            COMPREPLY=($(compgen -W "simulate replay keys exec status ls open close reset shadow config" -- "$cur"))
        return 0
        ;;
    *) return 0 ;;
    esac

    # --option=value: complete the value as for the option.
    local opt=$prev text=$cur
    if [[ $cur == --*=* ]]; then
        opt=${cur%%=*}
        text=${cur#*=}
    fi
    case $opt in
    -c | --config) _breaker_files "$text" .ini ;;
    --svg)
        _breaker_files "$text" .svg
        [[ -z $text ]] && COMPREPLY+=(-)
        ;;
    -s | --set) _breaker_assignment "$tool" "$text" ;;
    -b | --breaker) _breaker_spec "$tool" "$text" ;;
    --seed | --duration | --workers | --rate | --timeout | --instances | --max-trips) ;;
    *)
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        elif [[ $cmd == simulate ]]; then
            _breaker_files "$cur" .ini
        else
            _breaker_files "$cur"
            [[ -z $cur ]] && COMPREPLY+=(-)
        fi
        return 0
        ;;
    esac
    if [[ $cur == --*=* ]]; then
        COMPREPLY=("${COMPREPLY[@]/#/$opt=}")
    fi
    _breaker_trim "$cur"
    return 0
}

complete -F _breaker breaker
