#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real HTTP server on a free 127.0.0.1 port for the end-to-end test.

It prints "port N" on stdout once it listens, then reads commands on stdin,
one a line, and answers each with one line on stdout:

    mode ok            answer 200 "ok"
    mode 503           answer 503
    mode 404           answer 404
    mode slow SECONDS  wait SECONDS, then answer 200 "slow"
    mode refuse        close the listening socket: connections are refused
    count              "count N": requests answered since start
    quit               stop

It stops when stdin closes, so it never outlives the test that started it,
even if that test is killed.
"""
import http.server
import socket
import sys
import threading
import time


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.mode = "ok"
        self.delay = 0.0
        self.count = 0


STATE = State()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: refusals bite at once

    def do_GET(self):
        with STATE.lock:
            STATE.count += 1
            mode, delay = STATE.mode, STATE.delay
        if mode == "slow":
            time.sleep(delay)
            self.answer(200, b"slow\n")
        elif mode == "503":
            self.answer(503, b"unavailable\n")
        elif mode == "404":
            self.answer(404, b"not found\n")
        else:
            self.answer(200, b"ok\n")

    def answer(self, status, body):
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left: expected in slow mode

    def log_message(self, fmt, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True


def serve(port):
    srv = Server(("127.0.0.1", port), Handler)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    return srv


def stop(srv):
    srv.shutdown()
    srv.server_close()  # closes the listening socket: connect() now fails


def main():
    srv = serve(0)
    port = srv.server_address[1]
    print("port %d" % port, flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] == "count":
            with STATE.lock:
                print("count %d" % STATE.count, flush=True)
            continue
        if words[0] != "mode" or len(words) < 2:
            print("error unknown command", flush=True)
            continue
        mode = words[1]
        if mode == "refuse":
            if srv is not None:
                stop(srv)
                srv = None
        else:
            with STATE.lock:
                STATE.mode = mode
                STATE.delay = float(words[2]) if len(words) > 2 else 0.0
            if srv is None:
                srv = serve(port)  # same port again (SO_REUSEADDR)
        print("ok %s" % mode, flush=True)
    if srv is not None:
        stop(srv)


if __name__ == "__main__":
    main()
