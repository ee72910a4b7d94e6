#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main demonstration (make demo), in two parts, both on a virtual clock
# through the real library:
#  1. examples/flaky_dependency: one breaker in front of a dependency that
#     fails for 40 s, printing each transition with its reason and evidence;
#  2. `breaker simulate` on its built-in scenario, a database that hangs for
#     three minutes and comes back cold, run without a breaker and with three
#     configurations: the comparison table, and demo.svg in the repository root.
# Usage: scripts/demo.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
build=${1:-build/release}
root=$(cd "$(dirname "$0")/.." && pwd)
echo "== 1. One breaker, one outage: the timeline (examples/flaky_dependency)"
echo
"$build/examples/flaky_dependency"
echo
echo "== 2. A service through an outage, with and without a breaker (breaker simulate)"
echo
"$build/tools/breaker" simulate --svg "$root/demo.svg"
cat <<'TXT'

How to read demo.svg (open it in a browser): one panel per run. The top band
is the breaker's state (green closed, red OPEN, yellow half-open); the shaded
background is the dependency's phase (pink outage, amber warm-up). Blue is
calls reaching the dependency per second, purple calls the breaker refused,
red failures, orange requests shed because every worker was busy; below,
response time p50/p99 on a log scale with the timeout dashed.
More: docs/cli.md, `breaker simulate --help`, `breaker replay --help`.
TXT
