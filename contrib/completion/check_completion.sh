#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Keeps the shell completions in step with the tool (ctest -L manuals):
#   - every option `breaker simulate --help`, `replay --help`, `exec --help`
#     and `status --help` print is offered by the bash completion after
#     `breaker simulate -` (and so on), and is named in the zsh completion;
#   - every command of `breaker --help` is offered after `breaker `;
#   - every key of `breaker keys` is offered after `-s `, both from the tool
#     and from the completion's static list (used when the tool cannot run);
#   - the store commands offer the store's breaker names, `on off` after
#     `shadow NAME`, a breaker's keys after `config NAME`, and after
#     `exec NAME --` a command, then file names;
#   - the zsh file parses, when zsh is installed.
# Usage: check_completion.sh BREAKER_BINARY COMPLETION_DIR
set -u
tool=$1
dir=$2
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# shellcheck source=breaker.bash
source "$dir/breaker.bash" || { echo "FAIL: cannot source $dir/breaker.bash"; exit 1; }

# COMPREPLY for the command line $1 with the cursor at its end, one per line.
complete_line() {
  COMP_LINE="$1"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _breaker
  printf '%s\n' "${COMPREPLY[@]}"
}

# The options a help text lists: words starting with '-' at the start of an
# option line ("  -c, --config FILE ...", "      --svg FILE ...").
help_options() {
  sed -n 's/^ \{2,\}\(-[-a-zA-Z]\)/\1/p' | sed 's/  .*//' | tr ',' '\n' |
    sed -n 's/^ *\(--*[a-zA-Z][-a-zA-Z]*\).*/\1/p' | sort -u
}

for cmd in simulate replay exec status; do
  opts=$("$tool" "$cmd" --help | help_options)
  n=$(printf '%s\n' "$opts" | grep -c .)
  [ "$n" -ge 5 ] || fail "$cmd --help: found only $n options; has its layout changed?"
  offered=$(complete_line "breaker $cmd -")
  for opt in $opts; do
    printf '%s\n' "$offered" | grep -qxe "$opt" ||
      fail "bash: 'breaker $cmd $opt' is in --help but not offered by breaker.bash"
    grep -qe "$opt" "$dir/_breaker" ||
      fail "zsh: 'breaker $cmd $opt' is in --help but not named in _breaker"
  done
  # And nothing offered that the tool does not know.
  for opt in $offered; do
    printf '%s\n' "$opts" | grep -qxe "$opt" ||
      fail "bash: breaker.bash offers 'breaker $cmd $opt', which --help does not list"
  done
  echo "$cmd: $n options checked"
done

commands=$("$tool" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p')
[ -n "$commands" ] || fail "breaker --help: no commands found"
offered=$(complete_line "breaker ")
for c in $commands -h --help -V --version; do
  printf '%s\n' "$offered" | grep -qxe "$c" || fail "bash: command '$c' not offered after 'breaker '"
done
echo "commands checked: $(echo $commands)"

keys=$("$tool" keys | sed -n 's/^  \([a-z_][a-z_]*\)  .*/\1/p')
[ "$(printf '%s\n' "$keys" | grep -c .)" -ge 10 ] || fail "breaker keys: too few keys found"
from_tool=$(PATH="$(dirname "$tool"):$PATH" complete_line "breaker simulate -s ")
static=$(complete_line "/nonexistent/breaker simulate -s ")
for k in $keys; do
  printf '%s\n' "$from_tool" | grep -qxe "$k=" || fail "bash: key '$k' not offered after -s"
  printf '%s\n' "$static" | grep -qxe "$k=" ||
    fail "bash: key '$k' missing from the static list in breaker.bash"
  grep -qw -e "$k" "$dir/_breaker" || fail "zsh: key '$k' missing from the static list in _breaker"
done
echo "keys checked: $(printf "%s\n" "$keys" | grep -c .)"

# The store commands: NAME from the store (the one --store names, else
# $BREAKER_STORE), on or off after `shadow NAME`, a breaker's limits after
# `config NAME` and in `exec -b` (not simulate's own keys), and after
# `exec NAME ... --` a command, then file names.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export BREAKER_STORE=$work/default.store
"$tool" exec api -- true >/dev/null 2>&1 && "$tool" exec payments -- true >/dev/null 2>&1 &&
  "$tool" exec --store "$work/other.store" inventory -- true >/dev/null 2>&1 ||
  fail "cannot make the stores for the name tests"
with_tool() { PATH="$(dirname "$tool"):$PATH" complete_line "$1" | grep -v '^$' | sort | tr '\n' ' '; }
expect_offer() { # expect_offer LINE WANT: the candidates for LINE are exactly WANT
  got=$(with_tool "$1")
  [ "$got" = "$2" ] || fail "bash: '$1' offers '$got', expected '$2'"
}
for c in status open close reset shadow config exec; do
  expect_offer "breaker $c " "api payments "
done
expect_offer "breaker open p" "payments "
expect_offer "breaker status --store $work/other.store " "inventory "
expect_offer "breaker reset --why drill " "api payments "
expect_offer "breaker ls " ""
expect_offer "breaker shadow api " "off on "
expect_offer "breaker config api min_" "min_calls= min_failing_sources= "
expect_offer "breaker config api open=5s fail" "failure_rate= failure_threshold= "
expect_offer "breaker config api sha" ""
expect_offer "breaker config api trip=co" "consecutive count_window "
expect_offer "breaker exec api -b trip=consecutive,failure_t" "consecutive,failure_threshold= "
expect_offer "breaker exec api --timeout " ""
expect_offer "breaker exec api -- ech" "echo "
mkdir "$work/dir" && : >"$work/dir/file.txt"
expect_offer "breaker exec api --timeout 5s -- cat $work/dir/fi" "$work/dir/file.txt "
case " $(with_tool "breaker exec api -b open=1s -- ") " in
*" cat "*" echo "*) ;;
*) fail "bash: 'breaker exec api -b open=1s -- ' does not offer the commands (cat, echo)" ;;
esac
grep -q "'1:breaker name:_breaker_names'" "$dir/_breaker" ||
  fail "zsh: _breaker does not complete breaker names"
grep -q "'\*:key=value:_breaker_limits'" "$dir/_breaker" ||
  fail "zsh: _breaker does not complete config's keys"
echo "store commands: names, shadow modes, config keys and the command after -- checked"

if command -v zsh >/dev/null 2>&1; then
  zsh -n "$dir/_breaker" || fail "zsh -n _breaker: syntax error"
  echo "zsh: _breaker parses"
else
  echo "zsh: not installed, syntax not checked"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "completions in step with the tool"
