#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_metrics_server.sh SERVER CURL PROMTOOL
# Start the metrics_server example on a free loopback port (the kernel picks
# it), scrape its three endpoints like Prometheus and a load balancer would,
# validate the scrape with promtool, and stop the server, also on failure.
set -euo pipefail
server=$1 curl=$2 promtool=$3

dir=$(mktemp -d "${TMPDIR:-/tmp}/breaker-metrics.XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$dir/log" >&2 || true; exit 1; }

"$server" --port 0 --port-file "$dir/port" >"$dir/log" 2>&1 &
pid=$!

# Wait for the server to say it listens (bounded: 10 s).
for _ in $(seq 1 200); do
  [ -s "$dir/port" ] && break
  kill -0 "$pid" 2>/dev/null || fail "server exited before listening"
  sleep 0.05
done
[ -s "$dir/port" ] || fail "server did not report its port"
port=$(cat "$dir/port")
base="http://127.0.0.1:$port"
get() { "$curl" --silent --show-error --fail --max-time 5 "$@"; }

# The traffic thread creates the breakers on its first round: scrape until
# they appear (bounded).
for _ in $(seq 1 100); do
  get -D "$dir/headers" -o "$dir/metrics" "$base/metrics" || fail "GET /metrics"
  grep -q '^breaker_state{breaker="recommendations.fetch"' "$dir/metrics" && break
  sleep 0.05
done
grep -q '^breaker_state{breaker="payments.charge"} [0-4]$' "$dir/metrics" ||
  fail "no state series for payments.charge"
grep -qi '^content-type: text/plain; version=0.0.4' "$dir/headers" || fail "content type"
"$promtool" check metrics <"$dir/metrics" >"$dir/promtool" 2>&1 ||
  { cat "$dir/promtool" >&2; fail "promtool rejected the scrape"; }

# Public health: one of two fixed bodies, no names, no numbers.
get -o "$dir/health" "$base/health" || fail "GET /health"
body=$(cat "$dir/health")
case "$body" in
  '{"status":"ok"}' | '{"status":"degraded"}') ;;
  *) fail "unexpected /health body: $body" ;;
esac
if grep -Eq 'payments|inventory|recommendations|[0-9]' "$dir/health"; then
  fail "/health leaks details: $body"
fi

# Operators' report: names the dependencies.
get -o "$dir/details" "$base/health/details" || fail "GET /health/details"
grep -q '"name":"payments.charge"' "$dir/details" || fail "/health/details lacks a breaker"

# Unknown paths are 404.
code=$("$curl" --silent --output /dev/null --write-out '%{http_code}' "$base/nope")
[ "$code" = 404 ] || fail "GET /nope gave $code"

# A clean stop on SIGTERM.
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" -eq 0 ] || fail "server exited with $status on SIGTERM"
echo "test_metrics_server: ok (port $port)"
