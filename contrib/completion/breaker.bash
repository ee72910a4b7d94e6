# bash completion for breaker(1), the circuit breaker simulation tool.
#
# Installed as .../bash-completion/completions/breaker (loaded on demand by
# bash-completion); or source this file from ~/.bashrc. It needs nothing
# from bash-completion itself.
#
# Keep the option lists in step with tools/main.c: the test
# contrib/completion/check_completion.sh (ctest -L manuals) fails when a
# command's --help prints an option that is not offered here, and checks
# the names, keys and commands offered after a store command's NAME.

# The configuration keys for -s/--set and -b/--breaker: those the installed
# tool lists with `breaker keys`, or this list if it cannot be run.
_breaker_static_keys="trip failure_threshold window_size window window_buckets min_calls
failure_rate slow_call slow_call_rate open open_backoff open_max open_jitter
half_open_max_probes half_open_successes probe_timeout ramp ramp_start
min_failing_sources cancelled_as seed shadow retry_after_opens"

# With $2 = limits, only a breaker's limits (what `breaker config NAME` and
# `exec -b` take): not the keys `breaker keys` lists as simulation only.
_breaker_keys() {
    local tool=$1 keys
    if [[ -n $tool ]] && type -P -- "$tool" >/dev/null 2>&1; then
        if [[ ${2:-} == limits ]]; then
            keys=$("$tool" keys 2>/dev/null | sed '/^Simulation only/q' |
                sed -n 's/^  \([a-z_][a-z_]*\)  .*/\1/p')
        else
            keys=$("$tool" keys 2>/dev/null | sed -n 's/^  \([a-z_][a-z_]*\)  .*/\1/p')
        fi
    fi
    keys=${keys:-$_breaker_static_keys}
    [[ ${2:-} == limits ]] && keys=$(printf '%s\n' $keys | grep -vxE 'shadow|retry_after_opens')
    printf '%s\n' "$keys"
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
# values. $1 is the tool, $2 the text typed so far, $3 "limits" for a
# breaker's limits alone; candidates are written to COMPREPLY in full
# (_breaker_trim removes what bash will not replace).
_breaker_assignment() {
    local tool=$1 text=$2 key
    if [[ $text == *=* ]]; then
        key=${text%%=*}
        COMPREPLY=($(compgen -P "$key=" -W "$(_breaker_values "$key")" -- "${text#*=}"))
    else
        COMPREPLY=($(compgen -S = -W "$(_breaker_keys "$tool" "${3:-}")" -- "$text"))
        compopt -o nospace 2>/dev/null
    fi
}

# -b SPEC is NAME:key=value,key=value: after the ':' or a ',' offer keys.
_breaker_spec() {
    local tool=$1 text=$2 head tail
    [[ $text == *[:,]* ]] || return 0
    head=${text%"${text##*[:,]}"}
    tail=${text##*[:,]}
    _breaker_assignment "$tool" "$tail" "${3:-}"
    COMPREPLY=("${COMPREPLY[@]/#/$head}")
    compopt -o nospace 2>/dev/null
}

# File names; with $2, directories and the files ending in $2 first, and
# every file if there is none.
_breaker_files() {
    local text=$1 ext=${2:-} IFS=$'\n'
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

# The breaker names of the store a store command would use: --store PATH
# when the line gives one, else $BREAKER_STORE or the default (as the tool
# decides); nothing when the tool cannot run or there is no store yet.
_breaker_names() {
    local tool=$1 store=$2
    [[ -n $tool ]] && type -P -- "$tool" >/dev/null 2>&1 || return 0
    if [[ -n $store ]]; then
        "$tool" ls --store "$store" 2>/dev/null
    else
        "$tool" ls 2>/dev/null
    fi
}

# exec, status, ls, open, close, reset, shadow, config: $1 the tool, $2 the
# command, $3 the word being completed, then the words before it. Their
# options; NAME from the store; after `shadow NAME` on or off; after
# `config NAME` configuration keys; after `exec NAME ... --` a command,
# then file names.
_breaker_store_command() {
    local tool=$1 cmd=$2 cur=$3
    shift 3
    local -a before=("$@")
    unset 'before[${#before[@]}-1]' # the last word is the one being completed
    local fleet="--redis --redis-cluster --redis-sentinel --redis-master --redis-db
        --redis-password-file --redis-user --redis-timeout --redis-tls --redis-tls-ca
        --redis-tls-ca-dir --redis-tls-cert --redis-tls-key --redis-tls-server-name
        --redis-tls-no-verify"
    local opts="--store -h --help"
    case $cmd in
    exec) opts="$opts -c --config -b --breaker --timeout --fail-on --refused-exit --source
        $fleet --redis-run-anyway" ;;
    status) opts="$opts --json --prometheus --watch --interval --count $fleet" ;;
    open | close) opts="$opts --for $fleet --why" ;;
    reset | shadow | config) opts="$opts $fleet --why" ;;
    esac
    # The options that take a value (the next word, unless written --opt=value).
    local valued=" --store -c --config -b --breaker --timeout --fail-on --refused-exit --source
        --redis --redis-cluster --redis-db --redis-password-file --redis-user --redis-timeout
        --redis-sentinel --redis-master --redis-tls-ca --redis-tls-ca-dir --redis-tls-cert
        --redis-tls-key --redis-tls-server-name
        --interval --count --for --why "
    valued=${valued//$'\n'/ }
    # Walk the words before: NAME and the other positional words, the
    # store named, and an option still waiting for its value (`pending`).
    local store= pending= word positional=0 after_dashdash=-1 i
    for ((i = 0; i < ${#before[@]}; i++)); do
        word=${before[i]}
        if ((after_dashdash >= 0)); then
            after_dashdash=$((after_dashdash + 1))
        elif [[ $cmd == exec && $word == -- ]]; then
            after_dashdash=0
        elif [[ $valued == *" $word "* ]]; then
            if ((i + 1 == ${#before[@]})); then
                pending=$word
            else
                [[ $word == --store ]] && store=${before[i + 1]}
                i=$((i + 1))
            fi
        elif [[ $word == --store=* ]]; then
            store=${word#--store=}
        elif [[ $word != -* ]]; then
            positional=$((positional + 1))
        fi
    done
    # After `exec NAME ... --`: the command, then its arguments (file names).
    if ((after_dashdash == 0)); then
        COMPREPLY=($(compgen -c -- "$cur" | sort -u))
        return 0
    elif ((after_dashdash > 0)); then
        _breaker_files "$cur"
        return 0
    fi
    if [[ -n $pending ]]; then
        case $pending in
        --store | --redis-password-file | --redis-tls-ca | --redis-tls-ca-dir | --redis-tls-cert | \
            --redis-tls-key) _breaker_files "$cur" ;;
        -c | --config) _breaker_files "$cur" .ini ;;
        -b | --breaker) # key=value,... (NAME is the command's)
            if [[ $cur == *,* ]]; then
                _breaker_spec "$tool" "$cur" limits
            else
                _breaker_assignment "$tool" "$cur" limits
            fi
            _breaker_trim "$cur"
            ;;
        esac
        return 0
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif ((positional == 0)) && [[ $cmd != ls ]]; then
        COMPREPLY=($(compgen -W "$(_breaker_names "$tool" "$store")" -- "$cur"))
    elif [[ $cmd == shadow ]] && ((positional == 1)); then
        COMPREPLY=($(compgen -W "on off" -- "$cur"))
    elif [[ $cmd == config ]]; then
        _breaker_assignment "$tool" "$cur" limits
        _breaker_trim "$cur"
    fi
    return 0
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
        _breaker_store_command "$tool" "$cmd" "$cur" "${words[@]:2}"
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
