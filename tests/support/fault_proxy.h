/* SPDX-License-Identifier: MIT */
/*
 * fault_proxy.h - a fault-injecting loopback TCP proxy for the fleet store's
 * tests: put it between a client and a redis-server (tests/support/redis_server.h)
 * and make the server slow, jittery, cut, reset mid-reply or silent, from
 * the test's thread, while the client runs. One thread accepts; each
 * connection gets its own thread. Faults act on what the server sends back
 * (the replies): requests always reach the server at once, as they do
 * through a slow network path whose cost is paid on the way back.
 */
#ifndef BREAKER_TEST_FAULT_PROXY_H
#define BREAKER_TEST_FAULT_PROXY_H

#include <stddef.h>
#include <stdint.h>

struct fault_proxy;

/* Listen on a free 127.0.0.1 port and forward to 127.0.0.1:`upstream_port`.
 * @return the proxy, or NULL (a message on stderr). */
struct fault_proxy *fault_proxy_start(int upstream_port);

/* The port clients connect to. */
int fault_proxy_port(const struct fault_proxy *p);

/* Every reply byte is delivered `latency_ns` plus a uniform 0..`jitter_ns`
 * after the server sent it, in order (a chunk never overtakes an earlier
 * one). Applies from now on, to every connection. 0, 0: no delay. */
void fault_proxy_set_latency(struct fault_proxy *p, uint64_t latency_ns, uint64_t jitter_ns);

/* The next connection to receive reply bytes forwards `bytes` more of them,
 * then is reset (RST to the client, the server side closed): a cut after N
 * bytes; a small N resets it mid-reply. One shot. */
void fault_proxy_cut_after(struct fault_proxy *p, size_t bytes);

/* On: new connections are accepted and never answered (nothing is
 * forwarded either way), and open ones forward no more replies (a peer that
 * takes requests and never answers). Off: new connections work again. */
void fault_proxy_silent(struct fault_proxy *p, int on);

/* Connections reset so far (fault_proxy_cut_after()). */
unsigned fault_proxy_cuts(const struct fault_proxy *p);

/* The monotonic clock in ns, and a sleep of `ms`: for the tests that time
 * calls through the proxy. */
uint64_t fault_proxy_now_ns(void);
void fault_proxy_nap_ms(long ms);

/* Stop the proxy, close every connection, join its threads and free it. */
void fault_proxy_stop(struct fault_proxy *p);

#endif
