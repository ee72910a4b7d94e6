#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End to end with real HTTP: examples/http_client (libcurl, breaker,
bulkhead, retries, cached fallback) against tests/support/http_test_server.py on a
free loopback port.

Proves: the breaker opens on refused connections, on 503s and on timeouts,
and not on 404s; while open it refuses locally (the server sees nothing);
it probes and closes once the server recovers; the bulkhead refuses what
exceeds its limit, distinctly from the breaker; a cached value is served,
with its age, when the dependency fails or the breaker refuses.

    test_http_e2e.py --client build/examples/http_client \
                     --server tests/support/http_test_server.py

The server and every client are stopped on the way out, pass or fail, and
the server also exits by itself when this script's pipe to it closes.
"""
import argparse
import os
import select
import subprocess
import sys
import time

LINE_TIMEOUT = 15.0  # seconds to wait for one expected line


class Failure(Exception):
    pass


def check(cond, what, line=""):
    if not cond:
        raise Failure("%s%s" % (what, ("\n    got: " + line) if line else ""))


def fields(line):
    out = {}
    for word in line.split()[1:]:
        key, _, value = word.partition("=")
        out[key] = value
    return out


class Proc:
    """A child driven line by line over pipes, every line echoed to our log."""

    def __init__(self, name, argv):
        self.name = name
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        # Our own line buffer over the raw descriptor: select() on a buffered
        # file would wait for data already read into the buffer.
        self.fd = self.p.stdout.fileno()
        self.pending = b""

    def send(self, cmd):
        print("%-7s< %s" % (self.name, cmd), flush=True)
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def read_line(self):
        end = time.monotonic() + LINE_TIMEOUT
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise Failure("%s: no answer within %.0fs" % (self.name, LINE_TIMEOUT))
            if b"\n" in self.pending:
                raw, _, self.pending = self.pending.partition(b"\n")
                line = raw.decode("utf-8", "replace")
                print("%-7s> %s" % (self.name, line), flush=True)
                return line
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    raise Failure("%s exited (status %s)" % (self.name, self.p.wait()))
                self.pending += chunk

    def until(self, prefix, count=1):
        """Lines up to and including `count` lines that start with `prefix`;
        returns (matching lines, other lines such as events)."""
        hits, others = [], []
        while len(hits) < count:
            line = self.read_line()
            (hits if line.startswith(prefix) else others).append(line)
        return hits, others

    def stop(self):
        """Close its stdin (it exits on EOF), kill it if it lingers.
        @return its exit status."""
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
                self.p.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait()
        return self.p.returncode

    def finish(self):
        """Stop it and require a clean exit (sanitizer reports fail it)."""
        rc = self.stop()
        check(rc == 0, "%s exited with status %s" % (self.name, rc))


class Server(Proc):
    def __init__(self, path):
        super().__init__("server", [sys.executable, path])
        line = self.read_line()
        check(line.startswith("port "), "server did not report its port", line)
        self.port = int(line.split()[1])

    def mode(self, mode):
        self.send("mode " + mode)
        self.until("ok ")

    def count(self):
        self.send("count")
        hits, _ = self.until("count ")
        return int(hits[0].split()[1])


class Client(Proc):
    @classmethod
    def of(cls, name, path, server, *flags):
        """The client at `path` with `flags`, aimed at `server`."""
        return cls(name, [path, *flags, "http://127.0.0.1:%d" % server.port])

    def get(self, path="/"):
        self.send("get " + path)
        hits, events = self.until("req ")
        return fields(hits[0]), hits[0], events

    def state(self):
        self.send("state")
        hits, _ = self.until("state ")
        return fields(hits[0])

    def pause(self, ms):
        self.send("sleep %d" % ms)
        self.until("slept ")


def drive_until_open(client, expect, limit=8):
    """Requests until the breaker opens; each must fail as `expect` says."""
    for _ in range(limit):
        f, line, events = client.get("/work")
        check(f["kind"] == "failed", "a failing request is reported as failed", line)
        for key, value in expect.items():
            check(f[key] == value, "%s=%s expected" % (key, value), line)
        if f["state"] == "open":
            check(any("to=open" in e and "consecutive_failures" in e for e in events),
                  "the open transition was announced", "\n".join(events))
            return f
    raise Failure("the breaker did not open after %d failing requests" % limit)


def refused_locally(client, server, n=4):
    """While open: refused by the breaker, and the server sees nothing."""
    before = server.count() if server is not None else None
    last = None
    for _ in range(n):
        f, line, _ = client.get("/work")
        check(f["kind"] == "refused", "refused while open", line)
        check(f["layer"] == "breaker" and f["status"] == "REJECTED_OPEN",
              "refused by the breaker layer", line)
        check(f["attempts"] == "0", "no attempt reaches the server", line)
        last = f
    if server is not None:
        check(server.count() == before, "the server received nothing while open")
    return int(last["retry_after_ms"])


def recover(client, server, retry_after_ms):
    """The server is healthy again: wait out the open state, probe, close."""
    server.mode("ok")
    client.pause(retry_after_ms + 50)
    f, line, events = client.get("/")
    check(f["kind"] == "succeeded" and f["http"] == "200", "the probe succeeds", line)
    check(any("to=half_open" in e for e in events), "the breaker went half-open", "\n".join(events))
    f, line, events = client.get("/")
    check(f["kind"] == "succeeded", "the second probe succeeds", line)
    check(f["state"] == "closed", "two good probes close the breaker", line)
    check(any("from=half_open to=closed" in e for e in events), "close announced",
          "\n".join(events))


def scenario_breaker(client_path, server):
    # The attempt timeout is what a healthy answer must beat on a loaded
    # machine (400 ms was near what load 97 took); "slow 3" is well past it.
    client = Client.of("client", client_path, server, "--attempts", "2", "--timeout-ms", "1000",
                       "--deadline-ms", "2500", "--failures", "3", "--open-ms", "300",
                       "--probes", "2")
    try:
        print("# healthy", flush=True)
        for _ in range(3):
            f, line, _ = client.get("/")
            check(f["kind"] == "succeeded" and f["http"] == "200", "healthy answers", line)

        print("# 404s are neither failures nor successes: the breaker stays closed", flush=True)
        server.mode("404")
        before = server.count()
        for _ in range(8):
            f, line, _ = client.get("/missing")
            check(f["kind"] == "failed" and f["http"] == "404" and f["outcome"] == "ignored",
                  "a 404 is reported, ignored by the breaker", line)
            check(f["attempts"] == "1", "a 404 is not retried", line)
            check(f["state"] == "closed", "404s do not open the breaker", line)
        check(server.count() == before + 8, "every 404 request reached the server")
        st = client.state()
        check(st["successes"] == "3", "404s are not counted as successes", str(st))

        print("# 503s open it", flush=True)
        server.mode("503")
        f = drive_until_open(client, {"http": "503", "outcome": "failure"})
        check(f["layer"] == "breaker", "the retry loop stopped when the breaker opened")
        retry_after = refused_locally(client, server)
        print("# the server recovers: probe, close", flush=True)
        # The breaker's own answer, not the configured 300 ms: the wait has
        # jitter (up to 20% more by default).
        recover(client, server, retry_after)

        print("# refused connections open it", flush=True)
        server.mode("refuse")
        drive_until_open(client, {"http": "0", "errno": "111", "curl": "7"})
        retry_after = refused_locally(client, None)
        recover(client, server, retry_after)

        print("# timeouts open it", flush=True)
        server.mode("slow 3")
        drive_until_open(client, {"errno": "110", "curl": "28", "outcome": "failure"})
        retry_after = refused_locally(client, server)
        recover(client, server, retry_after)

        st = client.state()
        check(st["state"] == "closed", "closed at the end")
        check(int(st["refused_bulkhead"]) == 0, "no bulkhead refusals in this scenario")
        client.finish()
    finally:
        client.stop()


def scenario_bulkhead(client_path, server):
    print("# bulkhead: 4 concurrent requests, 2 slots", flush=True)
    client = Client.of("bulk", client_path, server, "--concurrency", "2", "--timeout-ms", "3000",
                       "--deadline-ms", "5000")
    try:
        server.mode("slow 0.5")
        client.send("parallel 4 /")
        hits, _ = client.until("req ", 4)
        results = [fields(h) for h in hits]
        ok = [r for r in results if r["kind"] == "succeeded"]
        full = [r for r in results if r["kind"] == "refused"]
        check(len(ok) == 2 and len(full) == 2, "2 run, 2 refused", "\n".join(hits))
        for r in full:
            check(r["layer"] == "bulkhead" and r["status"] == "BULKHEAD_FULL",
                  "refused by the bulkhead, not the breaker", str(r))
            check(r["attempts"] == "0" and r["retry_after_ms"] == "0",
                  "nothing sent; a retry may work at once", str(r))
        st = client.state()
        check(st["state"] == "closed" and st["failures"] == "0",
              "bulkhead refusals are not breaker failures", str(st))
        check(st["refused_bulkhead"] == "2" and st["refused_breaker"] == "0",
              "refusals counted by layer", str(st))
        check(st["bulkhead_peak"] == "2", "never more than 2 in flight", str(st))
        client.finish()
    finally:
        client.stop()


def scenario_fallback(client_path, server):
    print("# fallback: the last good answer, with its age", flush=True)
    # No timeout is under test here: the per-attempt timeout is far above
    # what a loaded machine takes to answer (the default 300 ms was passed
    # once at load 97, and the good answer to cache failed).
    client = Client.of("cache", client_path, server, "--attempts", "1", "--failures", "2",
                       "--timeout-ms", "3000", "--deadline-ms", "5000",
                       "--open-ms", "5000", "--stale-ms", "5000")
    try:
        server.mode("ok")
        f, line, _ = client.get("/")
        check(f["kind"] == "succeeded", "a good answer to cache", line)
        server.mode("503")
        f, line, _ = client.get("/")
        check(f["kind"] == "fallback" and f["fallback_of"] == "failed", "failure served", line)
        check(f["body"] == "ok" and f["http"] == "503", "the cached body, the real error", line)
        f, line, _ = client.get("/")
        check(f["state"] == "open", "opened", line)
        client.pause(30)
        f, line, _ = client.get("/")
        check(f["kind"] == "fallback" and f["fallback_of"] == "refused", "refusal served", line)
        check(f["layer"] == "breaker" and f["attempts"] == "0", "refused by the breaker", line)
        check(int(f["age_ms"]) >= 30, "the age is reported", line)
        client.finish()
    finally:
        client.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True)
    ap.add_argument("--server", required=True)
    args = ap.parse_args()
    t0 = time.monotonic()
    server = Server(args.server)
    try:
        scenario_breaker(args.client, server)
        scenario_bulkhead(args.client, server)
        scenario_fallback(args.client, server)
    except Failure as e:
        print("FAIL: %s" % e, flush=True)
        return 1
    finally:
        server.stop()
    print("PASS: end to end over real HTTP in %.1fs" % (time.monotonic() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
