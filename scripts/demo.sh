#!/usr/bin/env bash
# Run the main demonstration from a build directory (make demo).
set -euo pipefail
build=${1:-build/release}
exec "$build/examples/flaky_dependency"
