/* SPDX-License-Identifier: MIT */
/*
 * integration_util.h - what the integration tests (test_pq, test_curl)
 * share: a breaker's counts checked all at once, their breaker (and source
 * keys on distinct bits, source_keys.h),
 * a refusing port, and an example program's output.
 */
#ifndef BREAKER_TEST_INTEGRATION_UTIL_H
#define BREAKER_TEST_INTEGRATION_UTIL_H

#include "source_keys.h"
#include "test_util.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

/* The counters an integration test checks exactly. */
struct counts {
    uint64_t admitted, successes, failures, ignored, rejected_open;
};

static inline void expect_counts(breaker *b, struct counts want) {
    breaker_stats st = stats_of(b);
    print_message("admitted %" PRIu64 " successes %" PRIu64 " failures %" PRIu64 " ignored %" PRIu64
                  " rejected_open %" PRIu64 " stale %" PRIu64 " duplicates %" PRIu64 "\n",
                  st.admitted, st.successes, st.failures, st.ignored, st.rejected_open, st.stale,
                  st.duplicates);
    assert_int_equal(st.admitted, want.admitted);
    assert_int_equal(st.successes, want.successes);
    assert_int_equal(st.failures, want.failures);
    assert_int_equal(st.ignored, want.ignored);
    assert_int_equal(st.rejected_open, want.rejected_open);
    assert_int_equal(st.duplicates, 0);
}

/* The integration tests' breaker, on the fake clock: it opens on
 * `threshold` failures in a row, waits 10 s, closes on one successful probe
 * and fails a probe after `probe_timeout_ns`; with `min_failing_sources`
 * (breaker_config's) as given. */
static inline breaker *integration_breaker_sources(struct fake_clock *clock, uint32_t threshold,
                                                   uint64_t probe_timeout_ns,
                                                   uint32_t min_failing_sources) {
    breaker_config cfg;
    test_config(&cfg, clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = threshold;
    cfg.open_ns = 10 * SEC;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = probe_timeout_ns;
    cfg.min_failing_sources = min_failing_sources;
    return make_breaker(&cfg);
}

/* integration_breaker_sources() with the default min_failing_sources. */
static inline breaker *integration_breaker(struct fake_clock *clock, uint32_t threshold,
                                           uint64_t probe_timeout_ns) {
    return integration_breaker_sources(clock, threshold, probe_timeout_ns, 0);
}

/* A port on 127.0.0.1 that refuses connections: bound, never listening, so
 * no other program takes it while the test runs. Close `*fd` after. */
static inline int refusing_port(int *fd) {
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* Runs `command` (a shell command line) and keeps its standard output in
 * `out`, NUL-terminated. Asserts it exited 0. */
static inline void run_example(const char *command, char *out, size_t cap) {
    print_message("$ %s\n", command);
    FILE *p = popen(command, "r");
    assert_non_null(p);
    size_t len = fread(out, 1, cap - 1, p);
    out[len] = '\0';
    print_message("%s", out);
    assert_int_equal(pclose(p), 0);
}

#endif
