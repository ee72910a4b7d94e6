#!/bin/sh
# SPDX-License-Identifier: MIT
# The fleet simulation's mutation check: each fence of the protocol taken
# out, one at a time, must make tests/fleet/test_fleet_sim.c fail (else the
# simulation would not notice the fence missing). The fences:
#   generation   flush.lua counts a host's deltas only in the generation it
#                knew (calls of an ended period do not count in the next)
#   lease-count  acquire.lua grants no lease past half_open_max_probes
#   lease-token  release.lua applies a result only for a lease it holds
#   lease-gen    a result counts only in the lease's generation: release.lua
#                names it, and every transition deletes the leases (either
#                alone suffices, so both are taken out)
#   delta-seq    flush.lua counts a host's sequence once (a resent round)
#   credit-gen   credit.lua counts successes only in the generation the
#                host knew, as flush.lua does
#   control      the client applies a reset of the control record once, by
#                its generation (protocol.c, breaker__fleet_converge())
# Each runs on a copy of the tree (the checkout is never changed), built
# optimised. Usage: scripts/sim_mutations.sh [SEEDS]  (default 300; each
# mutation stops at its first failing seed). Exit 0 when every mutation
# was caught, 1 when one was not, 2 when the tree does not build.
set -eu
seeds=${1:-300}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/breaker-mutations.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
git -C "$src" ls-files -z | (cd "$src" && xargs -0 tar cf -) | (cd "$work" && mkdir tree && cd tree && tar xf -)
tree=$work/tree
cmake -S "$tree" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
build() { cmake --build "$work/build" -j "$(nproc)" --target test_fleet_sim >"$work/build.log" 2>&1; }
build || { cat "$work/build.log"; echo "sim_mutations: the tree does not build"; exit 2; }
[ -x "$work/build/tests/test_fleet_sim" ] || { echo "sim_mutations: no test_fleet_sim (Lua 5.1 missing?)"; exit 2; }
"$work/build/tests/test_fleet_sim" --seeds 20 >/dev/null || { echo "sim_mutations: the unmutated simulation fails"; exit 2; }

# name|file|the text replaced|its replacement (sed, '#' as the separator)
mutations='generation|src/store/redis/lua/flush.lua|(hg ~= 0 and hg ~= gen)|false
lease-count|src/store/redis/lua/acquire.lua|or redis.call(.ZCARD., L) >= c\[10\]|
lease-token|src/store/redis/lua/release.lua|or not redis.call(.ZSCORE., L, tok)|
lease-gen|src/store/redis/lua/release.lua|(lg ~= gen and lg ~= 0)|false
lease-gen|src/store/redis/lua/prelude.lua|  redis.call(.DEL., L)$|
delta-seq|src/store/redis/lua/flush.lua|if last and seq <= last then return answer(0) end|
credit-gen|src/store/redis/lua/credit.lua|st == 0 and gen == hg and|st == 0 and
control|src/store/redis/protocol.c|r->reset_gen > f->reset_seen|r->reset_gen != 0'

missed=0
# Each mutation's lines (one name, one or more edits), applied together.
names=$(printf '%s\n' "$mutations" | cut -d'|' -f1 | uniq)
for name in $names; do
  edits=$(printf '%s\n' "$mutations" | grep "^$name|")
  files=$(printf '%s\n' "$edits" | cut -d'|' -f2 | sort -u)
  for file in $files; do cp "$tree/$file" "$work/$(echo "$file" | tr / _)"; done
  restore() { for file in $files; do cp "$work/$(echo "$file" | tr / _)" "$tree/$file"; done; }
  printf '%s\n' "$edits" >"$work/edits"
  while IFS='|' read -r _ file from to; do
    before=$(cksum <"$tree/$file")
    sed "s#$from#$to#" "$tree/$file" >"$work/edited" && cat "$work/edited" >"$tree/$file"
    if [ "$(cksum <"$tree/$file")" = "$before" ]; then
      restore
      echo "sim_mutations: $name: '$from' not found in $file"
      exit 1
    fi
  done <"$work/edits"
  build || { cat "$work/build.log"; restore; exit 2; }
  if out=$("$work/build/tests/test_fleet_sim" --seeds "$seeds" 2>&1); then
    echo "$name: NOT CAUGHT in $seeds seeds"
    missed=1
  else
    echo "$name: caught: $(printf '%s\n' "$out" | grep -m1 'violated' || true)"
  fi
  restore
done
exit "$missed"
