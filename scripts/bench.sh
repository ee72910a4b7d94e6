#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the benchmarks from a build directory (make bench):
#   1. bench/bench: ns/op of every case against baselines timed in the same
#      run, with PASS/MISS against the targets in docs/performance.md;
#   2. if valgrind is installed, instructions per call of each single-thread
#      case under callgrind (repeatable whatever the machine's load),
#      excluding the clock's own instructions, and each store-backed case's
#      ratio to the same case in-process;
#   3. the zero-allocation test, if the build has it;
#   4. what a fleet of hosts costs Redis (bench/fleet_load, issues 22 and
#      34), if the build has the fleet store: the flush script's cost per
#      call, and Redis CPU per host per second (hosts per Redis core) with 1
#      and 8 processes per host, with and without a store file, healthy and
#      in an outage of every name, and on a 3-master Cluster; each row side
#      by side with the same hosts on a baseline's library, built in this run
#      from the pinned commit BENCH_FLEET_BASELINE (default: the commit before
#      the adaptive cadence; "none": no baseline) into $build/fleet-baseline
#      (about five minutes, the baseline's build first time; BENCH_FLEET_ARGS
#      go to fleet_load, e.g. --only "1 process").
# Extra arguments go to bench/bench (e.g. --reps 21 --ms 50, --filter open);
# BENCH_PARTS=timing,callgrind,alloc,fleetload (the default: all four) selects parts.
set -euo pipefail
build=${1:-build/release}
shift || true
bench="$build/bench/bench"
parts=",${BENCH_PARTS:-timing,callgrind,alloc,fleetload},"
if [ ! -x "$bench" ]; then
  echo "bench.sh: $bench not found; build first (make build)" >&2
  exit 1
fi

if [[ $parts == *,timing,* ]]; then
  "$bench" "$@"
fi

if [[ $parts != *,callgrind,* ]]; then
  :
elif ! command -v valgrind >/dev/null 2>&1 || ! command -v callgrind_annotate >/dev/null 2>&1; then
  echo
  echo "valgrind not installed: instruction counts skipped (apt-get install valgrind)"
else
  iters=${BENCH_CALLGRIND_ITERS:-100000}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo
  echo "instructions per call (callgrind, $iters calls after 1000 untimed; library code only:"
  echo "breaker_acquire + breaker_complete inclusive, minus clock_gettime's own instructions)"
  printf '  %-26s %10s %10s %10s  %s\n' case "instr/call" "clock" "total" target
  # case name, instruction ceiling (0 = none)
  # (floor_*: the least work the contract allows, bench/floors.c, for scale)
  cases="closed_consecutive:60 closed_count:0 closed_time:120 closed_consecutive_slow:0
         closed_count_slow:0 closed_time_slow:0 closed_consecutive_checked:0
         closed_count_checked:0 closed_time_checked:0 failures_consecutive:0 failures_count:0
         failures_time:0 open:0 half_open:0 forced_open:0
         floor_consecutive:0 floor_time:0 floor_open:0
         store_closed_consecutive:0 store_closed_count:0 store_closed_time:0 store_open:0"
  # The fleet-backed rows exist when the bench was built with breaker_redis.
  if "$bench" --list 2>/dev/null | grep -q '^fleet_open'; then
    cases="$cases fleet_closed_consecutive:0 fleet_closed_count:0 fleet_closed_time:0 fleet_open:0"
  fi
  # store-backed case: the in-process case its count is compared with (the
  # issue's target, within 1.2x of the in-process call)
  declare -A store_of=([store_closed_consecutive]=closed_consecutive
    [store_closed_count]=closed_count [store_closed_time]=closed_time [store_open]=open
    [fleet_closed_consecutive]=closed_consecutive [fleet_closed_count]=closed_count
    [fleet_closed_time]=closed_time [fleet_open]=open)
  declare -A per_call=() short_call=()
  misses=0
  for entry in $cases; do
    name=${entry%%:*}
    limit=${entry##*:}
    out="$tmp/$name.cg"
    # The fleet rows count the call path alone: the flusher is parked (an
    # interval of an hour) while they run. With its rounds running under
    # valgrind, 1-3% of the time-window successes took the re-hinting slow
    # path (+1.9 to 3.5 instructions per call on average; not with Redis
    # absent, nor with a thread reading the counters every 250 ms; not
    # understood yet): the flusher's cost in time is in the timing rows.
    flush_env=()
    [[ $name == fleet_* ]] && flush_env=(env BENCH_FLUSH_MS=3600000)
    "${flush_env[@]}" valgrind --tool=callgrind --toggle-collect=bench_callgrind_region \
      --callgrind-out-file="$out" "$bench" --callgrind "$name" "$iters" >/dev/null 2>"$tmp/log" ||
      { cat "$tmp/log" >&2; exit 1; }
    # Inclusive counts per function; the API entry points are never inlined
    # into the bench (they live in the library), so their inclusive cost is
    # everything the library executes for the calls, clock included.
    read -r lib clock < <(callgrind_annotate --inclusive=yes "$out" | awk '
      { gsub(",", "", $1) }
      / [^ ]*:(breaker_acquire|breaker_complete) / { lib += $1 }
      / [^ ]*:(floor_acquire|floor_complete_[a-z]*|floor_refuse_open)[.a-z0-9]* / { lib += $1 }
      /:clock_gettime/ { clock += $1 }
      END { printf "%d %d\n", lib, clock }')
    per=$(awk -v l="$lib" -v c="$clock" -v n="$iters" 'BEGIN { printf "%.1f", (l - c) / n }')
    # A time-window success moves its bucket hint once per bucket (1 s by
    # default): whether a run spans one boundary or two is wall-clock luck
    # (about 50k instructions each). The short paths alone, for comparing
    # two rows exactly: without the re-hints.
    rehint=$(callgrind_annotate --inclusive=yes "$out" | awk '
      { gsub(",", "", $1) }
      /:time_window_success_slow / { s += $1 }
      END { printf "%d\n", s }')
    short=$(awk -v l="$lib" -v c="$clock" -v h="$rehint" -v n="$iters" \
      'BEGIN { printf "%.1f", (l - c - h) / n }')
    short_call[$name]=$short
    clk=$(awk -v c="$clock" -v n="$iters" 'BEGIN { printf "%.1f", c / n }')
    tot=$(awk -v l="$lib" -v n="$iters" 'BEGIN { printf "%.1f", l / n }')
    per_call[$name]=$per
    verdict=""
    base=${store_of[$name]:-}
    if [[ $name == fleet_* ]] && [ -n "${per_call[$base]:-}" ]; then
      # A fleet-backed breaker's closed call and open refusal are the local
      # breaker's own short paths (its backend is consulted on probes only):
      # the same instructions, not merely close.
      if [ "$short" = "${short_call[$base]}" ]; then
        verdict="= $base (short path $short = ${short_call[$base]}) PASS"
      else
        verdict="!= $base (short path $short vs ${short_call[$base]}) MISS"
        misses=$((misses + 1))
      fi
    elif [ -n "$base" ] && [ -n "${per_call[$base]:-}" ]; then
      ratio=$(awk -v p="$per" -v b="${per_call[$base]}" 'BEGIN { printf "%.2f", p / b }')
      if awk -v r="$ratio" 'BEGIN { exit !(r <= 1.2) }'; then
        verdict="${ratio}x $base, <= 1.2x PASS"
      else
        verdict="${ratio}x $base, <= 1.2x MISS"
        misses=$((misses + 1))
      fi
    fi
    if [ "$limit" != 0 ]; then
      if awk -v p="$per" -v m="$limit" 'BEGIN { exit !(p <= m) }'; then
        verdict="<= $limit PASS"
      else
        verdict="<= $limit MISS"
        misses=$((misses + 1))
      fi
    fi
    printf '  %-26s %10s %10s %10s  %s\n' "$name" "$per" "$clk" "$tot" "$verdict"
  done
  echo "  (valgrind runs clock_gettime as a system call, not through the vDSO, so the"
  echo "   'clock' column is the libc wrapper only; the library's own conversion of the"
  echo "   timespec is counted in instr/call)"
  echo "$misses instruction target(s) missed"
fi

if [[ $parts == *,alloc,* ]] && [ -x "$build/tests/test_no_alloc" ]; then
  echo
  echo "zero-allocation test ($build/tests/test_no_alloc):"
  "$build/tests/test_no_alloc"
fi

# The fleet's baseline: bench/fleet_host (public API only) built against the
# library of the pinned commit, in a tree of its own (git archive; reused
# while the commit is the same), with the bench's CMake files copied in.
# Prints the host program's path, or nothing (no git, no such commit, or a
# failed build: then the rows run without a baseline, saying why).
fleet_baseline() {
  local commit=$1 dir="$build/fleet-baseline" root
  root=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel 2>/dev/null) || {
    echo "fleet baseline: not a git checkout" >&2; return 0; }
  local full
  full=$(git -C "$root" rev-parse --verify -q "$commit^{commit}") || {
    echo "fleet baseline: commit $commit not found" >&2; return 0; }
  local src="$dir/src-${full:0:12}"
  if [ ! -f "$src/.extracted" ]; then
    rm -rf "$src" && mkdir -p "$src"
    git -C "$root" archive "$full" | tar -x -C "$src" && touch "$src/.extracted"
  fi
  cp "$root/bench/fleet_host.c" "$root/bench/fleet_host.cmake" "$src/bench/"
  grep -q 'include(fleet_host.cmake)' "$src/bench/CMakeLists.txt" ||
    printf '\ninclude(fleet_host.cmake) # scripts/bench.sh: the fleet baseline\n' \
      >>"$src/bench/CMakeLists.txt"
  if cmake -S "$src" -B "$dir/build-${full:0:12}" -DCMAKE_BUILD_TYPE=Release \
      -DBREAKER_BUILD_TESTS=OFF -DBREAKER_BUILD_TOOLS=OFF -DBREAKER_BUILD_EXAMPLES=OFF \
      >"$dir/build.log" 2>&1 &&
    cmake --build "$dir/build-${full:0:12}" --target fleet_host -j "$(nproc 2>/dev/null || echo 2)" \
      >>"$dir/build.log" 2>&1; then
    echo "$dir/build-${full:0:12}/bench/fleet_host"
  else
    echo "fleet baseline: the build of $commit failed ($dir/build.log)" >&2
  fi
}

if [[ $parts == *,fleetload,* ]] && [ -x "$build/bench/fleet_load" ]; then
  echo
  # Before the adaptive cadence of healthy names (issue 34): main at 434cadd.
  baseline_commit=${BENCH_FLEET_BASELINE:-434cadd6bf7b3e8ab9018daef6b32d478fdbbb68}
  baseline_args=()
  if [ "$baseline_commit" != none ]; then
    echo "fleet baseline: building bench/fleet_host at $baseline_commit ..."
    host=$(fleet_baseline "$baseline_commit")
    [ -n "$host" ] && baseline_args=(--baseline "$host")
  fi
  # shellcheck disable=SC2086
  "$build/bench/fleet_load" "${baseline_args[@]}" ${BENCH_FLEET_ARGS:-}
fi
