/* SPDX-License-Identifier: MIT */
/*
 * test_curl.c - breaker_curl against real HTTP servers on 127.0.0.1
 * (tests/support/http_fault_server.c): healthy answers, a 503 with Retry-After in
 * seconds and as an HTTP-date, a server that accepts and never answers, a
 * refused connection, a reset mid-body and a slow body count as
 * breaker/curl.h says, with the breaker's counts exact; a refused call
 * opens no connection (the server counts what it accepts); a probe's
 * transfer ends by the probe's deadline; the multi interface completes each
 * transfer's permit once, on another thread than the transfers ran on;
 * options.source reaches the breaker on both interfaces (with
 * min_failing_sources = 3, one caller's failures do not open it, three
 * callers' do).
 *
 * The breakers run on a fake clock; libcurl and the servers in real time.
 * The only durations are timeouts far apart from what they cut (a 300 ms
 * timeout against a server that stays silent for 5 s), never a measurement.
 */
#define _GNU_SOURCE /* popen, for the example program */
#include "integration_util.h"

#include "http_fault_server.h"

#include <breaker/curl.h>
#include <curl/curl.h>

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static struct test_http *server;

static int start_server(void **state) {
    (void)state;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return -1;
    server = test_http_start(HTTP_FAULT_OK);
    return server != NULL ? 0 : -1;
}

static int stop_server(void **state) {
    (void)state;
    test_http_stop(server);
    curl_global_cleanup();
    return 0;
}

static size_t discard(char *data, size_t size, size_t n, void *ctx) {
    (void)data;
    (void)ctx;
    return size * n;
}

/* An easy handle for `port` on 127.0.0.1 (0: the test server). */
static CURL *easy_for(int port) {
    CURL *h = curl_easy_init();
    assert_non_null(h);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port != 0 ? port : test_http_port(server));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    return h;
}

/* A breaker that opens on three failures in a row and fails a probe after
 * 300 ms. */
static breaker *curl_breaker(struct fake_clock *clock) {
    return integration_breaker(clock, 3, 300 * MS);
}

/* One admitted transfer on a fresh handle for the caller `source` (0 =
 * none); @return its result. */
static breaker_curl_result perform_from(breaker *b, int port, long timeout_ms, uint64_t source) {
    CURL *h = easy_for(port);
    breaker_curl_options o = {.timeout_ms = timeout_ms, .source = source};
    breaker_curl_result r;
    assert_int_equal(breaker_curl_perform(b, h, &o, &r), BREAKER_OK);
    print_message("curl %d http %ld -> %s\n", r.curl_code, r.http_status,
                  breaker_outcome_name(r.outcome));
    assert_int_equal(r.admitted, 1);
    curl_easy_cleanup(h);
    return r;
}

static breaker_curl_result perform(breaker *b, int port, long timeout_ms) {
    return perform_from(b, port, timeout_ms, 0);
}

static void curl_retry_after_values_parse_as_seconds_and_http_dates(void **state) {
    (void)state;
    const int64_t at = 1445412480; /* Wed, 21 Oct 2015 07:28:00 GMT */
    uint64_t ns = 1;
    assert_int_equal(breaker_curl_parse_retry_after("120", at, &ns), BREAKER_OK);
    assert_int_equal(ns, 120 * SEC);
    assert_int_equal(breaker_curl_parse_retry_after(" 0 \r\n", at, &ns), BREAKER_OK);
    assert_int_equal(ns, 0);
    const char *dates[] = {"Wed, 21 Oct 2015 07:29:00 GMT", "Wednesday, 21-Oct-15 07:29:00 GMT",
                           "Wed Oct 21 07:29:00 2015"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(breaker_curl_parse_retry_after(dates[i], at, &ns), BREAKER_OK);
        assert_int_equal(ns, 60 * SEC);
    }
    assert_int_equal(breaker_curl_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", at + 5, &ns),
                     BREAKER_OK);
    assert_int_equal(ns, 0); /* a date in the past: now */
    assert_int_equal(breaker_curl_parse_retry_after("99999999999999999999", at, &ns), BREAKER_OK);
    assert_int_equal(ns, (uint64_t)(INT64_MAX / (int64_t)SEC) * SEC);
    const char *bad[] = {"", "  ", "soon", "-5", "12s", "1.5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ns = 1;
        assert_int_equal(breaker_curl_parse_retry_after(bad[i], at, &ns), BREAKER_EFORMAT);
        assert_int_equal(ns, 0);
    }
}

static void curl_codes_and_statuses_follow_the_documented_table(void **state) {
    (void)state;
    const CURLcode failures[] = {CURLE_COULDNT_CONNECT,
                                 CURLE_OPERATION_TIMEDOUT,
                                 CURLE_COULDNT_RESOLVE_HOST,
                                 CURLE_SEND_ERROR,
                                 CURLE_RECV_ERROR,
                                 CURLE_GOT_NOTHING,
                                 CURLE_PARTIAL_FILE,
                                 CURLE_WEIRD_SERVER_REPLY,
                                 CURLE_SSL_CONNECT_ERROR,
                                 CURLE_HTTP2_STREAM,
                                 CURLE_PEER_FAILED_VERIFICATION};
    for (size_t i = 0; i < sizeof(failures) / sizeof(failures[0]); i++)
        assert_int_equal(breaker_curl_classify((int)failures[i], 0, 0, NULL), BREAKER_FAILURE);
    const CURLcode ignored[] = {CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL,
                                CURLE_OUT_OF_MEMORY, CURLE_TOO_MANY_REDIRECTS,
                                CURLE_WRITE_ERROR,   CURLE_LOGIN_DENIED};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        assert_int_equal(breaker_curl_classify((int)ignored[i], 0, 0, NULL), BREAKER_IGNORED);
    assert_int_equal(breaker_curl_classify(CURLE_ABORTED_BY_CALLBACK, 0, 0, NULL),
                     BREAKER_CANCELLED);
    /* An answer is classified by its status, under the policy. */
    assert_int_equal(breaker_curl_classify(CURLE_OK, 200, 0, NULL), BREAKER_SUCCESS);
    assert_int_equal(breaker_curl_classify(CURLE_OK, 0, 0, NULL), BREAKER_SUCCESS);
    assert_int_equal(breaker_curl_classify(CURLE_OK, 404, 0, NULL), BREAKER_IGNORED);
    assert_int_equal(breaker_curl_classify(CURLE_HTTP_RETURNED_ERROR, 502, 0, NULL),
                     BREAKER_FAILURE);
    breaker_http_policy p;
    breaker_http_policy_init(&p);
    p.unavailable_with_retry_after = BREAKER_IGNORED;
    assert_int_equal(breaker_curl_classify(CURLE_OK, 503, 1, &p), BREAKER_IGNORED);
    assert_int_equal(breaker_curl_classify(CURLE_OK, 503, 0, &p), BREAKER_FAILURE);
}

static void curl_healthy_answers_succeed_and_a_404_is_ignored(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = curl_breaker(&clock);
    unsigned before = test_http_accepted(server);
    test_http_set(server, HTTP_FAULT_OK);
    for (int i = 0; i < 5; i++) {
        breaker_curl_result r = perform(b, 0, 5000);
        assert_int_equal(r.curl_code, CURLE_OK);
        assert_int_equal(r.http_status, 200);
        assert_int_equal(r.outcome, BREAKER_SUCCESS);
        assert_int_equal(r.has_retry_after, 0);
    }
    test_http_set(server, HTTP_FAULT_NOT_FOUND);
    for (int i = 0; i < 5; i++)
        assert_int_equal(perform(b, 0, 5000).outcome, BREAKER_IGNORED);
    expect_counts(b, (struct counts){.admitted = 10, .successes = 5, .ignored = 5});
    assert_int_equal(test_http_accepted(server) - before, 10);
    test_breaker_destroy(b);
}

static void curl_503_with_retry_after_fails_and_carries_the_hint(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = curl_breaker(&clock);
    test_http_set(server, HTTP_FAULT_503_SECONDS);
    breaker_curl_result r = perform(b, 0, 5000);
    assert_int_equal(r.http_status, 503);
    assert_int_equal(r.outcome, BREAKER_FAILURE);
    assert_int_equal(r.has_retry_after, 1);
    assert_int_equal(r.retry_after_ns, 7 * SEC);
    test_http_set(server, HTTP_FAULT_503_DATE);
    r = perform(b, 0, 5000);
    assert_int_equal(r.outcome, BREAKER_FAILURE);
    assert_int_equal(r.has_retry_after, 1);
    /* 30 s from the server's clock when it answered, read on the same
     * machine's clock moments later (whole seconds). */
    print_message("date: retry after %" PRIu64 " s\n", r.retry_after_ns / SEC);
    assert_true(r.retry_after_ns >= 20 * SEC && r.retry_after_ns <= 30 * SEC);
    expect_counts(b, (struct counts){.admitted = 2, .failures = 2});
    test_breaker_destroy(b);
}

/* With retry_after_opens, a 429 (or 503) with Retry-After opens the breaker
 * for exactly that long, as the dependency asked (issue 25); without it, a
 * 429 is IGNORED and opens nothing. */
static void curl_429_with_retry_after_opens_for_that_long_when_asked(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = curl_breaker(&clock);
    test_http_set(server, HTTP_FAULT_429_SECONDS);
    breaker_curl_result r = perform(b, 0, 5000);
    assert_int_equal(r.http_status, 429);
    assert_int_equal(r.outcome, BREAKER_IGNORED);
    assert_int_equal(r.directed_open, 0);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    CURL *h = easy_for(0);
    breaker_curl_options o = {.timeout_ms = 5000, .retry_after_opens = 1};
    assert_int_equal(breaker_curl_perform(b, h, &o, &r), BREAKER_OK);
    assert_int_equal(r.has_retry_after, 1);
    assert_int_equal(r.directed_open, 1);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(breaker_retry_after_ns(b), 7 * SEC);
    breaker_stats st;
    assert_int_equal(breaker_stats_get(b, &st), BREAKER_OK);
    assert_int_equal(st.server_directed_opens, 1);
    /* Refused without a connection until then; the first call after is a
     * probe that reaches the server. */
    unsigned before = test_http_accepted(server);
    assert_int_equal(breaker_curl_perform(b, h, &o, &r), BREAKER_REJECTED_OPEN);
    assert_int_equal(test_http_accepted(server), before);
    fake_clock_advance(&clock, 7 * SEC);
    test_http_set(server, HTTP_FAULT_OK);
    assert_int_equal(breaker_curl_perform(b, h, &o, &r), BREAKER_OK);
    assert_int_equal(r.outcome, BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    curl_easy_cleanup(h);
    test_breaker_destroy(b);
}

/* Refused connections open the breaker; while it is open, calls to a
 * healthy server are refused without a connection; after the wait the
 * probe reaches it and closes the breaker. */
static void curl_refused_connections_open_it_and_refused_calls_open_no_socket(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = curl_breaker(&clock);
    int fd;
    int refusing = refusing_port(&fd);
    for (int i = 0; i < 3; i++) {
        breaker_curl_result r = perform(b, refusing, 5000);
        assert_int_equal(r.curl_code, CURLE_COULDNT_CONNECT);
        assert_int_equal(r.outcome, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    test_http_set(server, HTTP_FAULT_OK);
    unsigned before = test_http_accepted(server);
    for (int i = 0; i < 10; i++) {
        CURL *h = easy_for(0);
        breaker_curl_result r;
        assert_int_equal(breaker_curl_perform(b, h, NULL, &r), BREAKER_REJECTED_OPEN);
        assert_int_equal(r.admitted, 0);
        assert_int_equal(r.status, BREAKER_REJECTED_OPEN);
        assert_int_equal(r.curl_code, -1);
        assert_int_equal(r.retry_after_ns, 10 * SEC); /* the open wait, on the fake clock */
        curl_easy_cleanup(h);
    }
    assert_int_equal(test_http_accepted(server), before);
    expect_counts(b, (struct counts){.admitted = 3, .failures = 3, .rejected_open = 10});
    fake_clock_advance(&clock, 10 * SEC);
    assert_int_equal(perform(b, 0, 5000).outcome, BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(test_http_accepted(server), before + 1);
    close(fd);
    test_breaker_destroy(b);
}

/* A server that accepts and never answers: the caller's timeout fails the
 * calls; the probe, asked with no timeout at all, still ends at its 300 ms
 * deadline (the server would close after 5 s: CURLE_GOT_NOTHING). */
static void curl_silent_server_times_out_and_a_probe_ends_by_its_deadline(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = curl_breaker(&clock);
    test_http_set(server, HTTP_FAULT_SILENT);
    for (int i = 0; i < 3; i++) {
        breaker_curl_result r = perform(b, 0, 300);
        assert_int_equal(r.curl_code, CURLE_OPERATION_TIMEDOUT);
        assert_int_equal(r.outcome, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    fake_clock_advance(&clock, 10 * SEC);
    breaker_curl_result r = perform(b, 0, 0);
    assert_int_equal(r.curl_code, CURLE_OPERATION_TIMEDOUT);
    assert_int_equal(r.outcome, BREAKER_FAILURE);
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_OPEN);
    assert_int_equal(st.probes_failed, 1);
    expect_counts(b, (struct counts){.admitted = 4, .failures = 4});
    test_breaker_destroy(b);
}

static void curl_reset_mid_body_and_a_slow_body_are_failures(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = curl_breaker(&clock);
    test_http_set(server, HTTP_FAULT_RESET_MID_BODY);
    breaker_curl_result r = perform(b, 0, 5000);
    assert_true(r.curl_code == CURLE_RECV_ERROR || r.curl_code == CURLE_PARTIAL_FILE);
    assert_int_equal(r.http_status, 200); /* the headers came: the body did not */
    assert_int_equal(r.outcome, BREAKER_FAILURE);
    test_http_set(server, HTTP_FAULT_SLOW_BODY);
    r = perform(b, 0, 300);
    assert_int_equal(r.curl_code, CURLE_OPERATION_TIMEDOUT);
    assert_int_equal(r.outcome, BREAKER_FAILURE);
    expect_counts(b, (struct counts){.admitted = 2, .failures = 2});
    test_breaker_destroy(b);
}

#define MULTI_MAX 16

/* The transfers of one multi handle, run to the end on their own thread,
 * which records each finished handle and its CURLcode but completes
 * nothing: the test's thread does. */
struct multi_run {
    CURLM *multi;
    unsigned done;
    CURL *easy[MULTI_MAX];
    CURLcode code[MULTI_MAX];
};

static void *run_multi(void *arg) {
    struct multi_run *m = arg;
    int running = 1;
    while (running > 0) {
        if (curl_multi_perform(m->multi, &running) != CURLM_OK) break;
        if (running > 0) (void)curl_multi_poll(m->multi, NULL, 0, 1000, NULL);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m->multi, &left)) != NULL)
            if (msg->msg == CURLMSG_DONE && m->done < MULTI_MAX) {
                m->easy[m->done] = msg->easy_handle;
                m->code[m->done++] = msg->data.result;
            }
    }
    return NULL;
}

/* Adds `n` transfers (those the breaker admits), runs them on another
 * thread, completes them here. @return the number admitted. */
static unsigned multi_round_from(breaker *b, unsigned n, breaker_curl_transfer *t,
                                 breaker_curl_result *r, uint64_t source) {
    struct multi_run m = {.multi = curl_multi_init()};
    unsigned admitted = 0;
    for (unsigned i = 0; i < n; i++) {
        CURL *h = easy_for(0);
        breaker_curl_options o = {.timeout_ms = 5000, .source = source};
        int rc = breaker_curl_multi_add(b, m.multi, h, &o, &t[admitted]);
        if (rc == BREAKER_OK) {
            curl_easy_setopt(h, CURLOPT_PRIVATE, &t[admitted]);
            admitted++;
        } else {
            assert_int_equal(rc, BREAKER_REJECTED_OPEN);
            curl_easy_cleanup(h);
        }
    }
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, run_multi, &m), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(m.done, admitted);
    for (unsigned i = 0; i < m.done; i++) {
        breaker_curl_transfer *tr;
        curl_easy_getinfo(m.easy[i], CURLINFO_PRIVATE, (char **)&tr);
        (void)breaker_curl_done(tr, (int)m.code[i], &r[i]);
        /* Once: a second call completes nothing. */
        assert_int_equal(breaker_curl_done(tr, (int)m.code[i], NULL), BREAKER_ALREADY_SETTLED);
        curl_multi_remove_handle(m.multi, m.easy[i]);
        curl_easy_cleanup(m.easy[i]);
    }
    curl_multi_cleanup(m.multi);
    return admitted;
}

static unsigned multi_round(breaker *b, unsigned n, breaker_curl_transfer *t,
                            breaker_curl_result *r) {
    return multi_round_from(b, n, t, r, 0);
}

static void curl_multi_transfers_carry_their_permits_to_another_thread(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = curl_breaker(&clock);
    breaker_curl_transfer t[MULTI_MAX];
    breaker_curl_result r[MULTI_MAX];
    test_http_set(server, HTTP_FAULT_OK);
    assert_int_equal(multi_round(b, 4, t, r), 4);
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(r[i].outcome, BREAKER_SUCCESS);
        assert_int_equal(r[i].status, BREAKER_OK);
    }
    expect_counts(b, (struct counts){.admitted = 4, .successes = 4});
    /* Six 503s in flight at once on a breaker that opens on three: three
     * failures open it, the other three completions are stale. */
    test_http_set(server, HTTP_FAULT_503_SECONDS);
    assert_int_equal(multi_round(b, 6, t, r), 6);
    unsigned stale = 0;
    for (unsigned i = 0; i < 6; i++) {
        assert_int_equal(r[i].outcome, BREAKER_FAILURE);
        stale += r[i].status == BREAKER_STALE;
    }
    assert_int_equal(stale, 3);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(stats_of(b).stale, 3);
    /* Open: nothing is added, no connection made. */
    unsigned before = test_http_accepted(server);
    assert_int_equal(multi_round(b, 5, t, r), 0);
    assert_int_equal(test_http_accepted(server), before);
    expect_counts(
        b, (struct counts){.admitted = 10, .successes = 4, .failures = 3, .rejected_open = 5});
    test_breaker_destroy(b);
}

/* options.source reaches the breaker on the easy interface: with
 * min_failing_sources = 3, ten 503s for one caller leave the breaker closed
 * (a breaker without the rule opens on three); one more caller's still
 * do; a third caller's first 503 opens it. Without the source the failures
 * name nobody and, under an explicit min_failing_sources, never trip. */
static void curl_failures_of_one_source_do_not_open_and_three_sources_do(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = integration_breaker_sources(&clock, 3, 300 * MS, 3);
    uint64_t callers[3];
    keys_on_distinct_bits(callers, 3);
    test_http_set(server, HTTP_FAULT_503_SECONDS);
    for (int i = 0; i < 10; i++)
        assert_int_equal(perform_from(b, 0, 5000, callers[0]).outcome, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    for (int i = 0; i < 5; i++)
        assert_int_equal(perform_from(b, 0, 5000, callers[1]).outcome, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(perform_from(b, 0, 5000, callers[2]).outcome, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    expect_counts(b, (struct counts){.admitted = 16, .failures = 16});
    test_breaker_destroy(b);
}

/* The same through the multi interface: breaker_curl_done() completes each
 * transfer with the source it was added with. */
static void curl_multi_transfers_complete_with_their_source(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = integration_breaker_sources(&clock, 3, 300 * MS, 3);
    uint64_t callers[3];
    keys_on_distinct_bits(callers, 3);
    breaker_curl_transfer t[MULTI_MAX];
    breaker_curl_result r[MULTI_MAX];
    test_http_set(server, HTTP_FAULT_503_SECONDS);
    assert_int_equal(multi_round_from(b, 6, t, r, callers[0]), 6);
    assert_int_equal(multi_round_from(b, 6, t, r, callers[1]), 6);
    for (unsigned i = 0; i < 6; i++)
        assert_int_equal(r[i].status, BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(multi_round_from(b, 1, t, r, callers[2]), 1);
    assert_int_equal(r[0].outcome, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    expect_counts(b, (struct counts){.admitted = 13, .failures = 13});
    test_breaker_destroy(b);
}

#ifdef EXAMPLE_CURL_GET /* the examples are built (BREAKER_BUILD_EXAMPLES) */
/* examples/curl_get.c, run against the server and a refusing port, without
 * and with a caller. */
static void curl_example_succeeds_opens_on_refusals_but_not_for_one_caller(void **state) {
    (void)state;
    char cmd[512], out[4096];
    test_http_set(server, HTTP_FAULT_OK);
    snprintf(cmd, sizeof(cmd), "%s http://127.0.0.1:%d/ 2", EXAMPLE_CURL_GET,
             test_http_port(server));
    run_example(cmd, out, sizeof(out));
    assert_non_null(strstr(out, "OK curl=0 http=200 outcome=success retry_after_ms=0\n"
                                "OK curl=0 http=200 outcome=success retry_after_ms=0\n"
                                "state=closed\n"));
    int fd;
    snprintf(cmd, sizeof(cmd), "%s http://127.0.0.1:%d/ 5", EXAMPLE_CURL_GET, refusing_port(&fd));
    run_example(cmd, out, sizeof(out));
    close(fd);
    const char *refused = strstr(out, "OK curl=7 http=0 outcome=failure retry_after_ms=0\n"
                                      "OK curl=7 http=0 outcome=failure retry_after_ms=0\n"
                                      "OK curl=7 http=0 outcome=failure retry_after_ms=0\n"
                                      "REJECTED_OPEN curl=-1 http=0 outcome=ignored");
    assert_non_null(refused);
    assert_non_null(strstr(out, "state=open\n"));
    /* All five failures one caller's: the breaker stays closed. */
    snprintf(cmd, sizeof(cmd), "%s http://127.0.0.1:%d/ 5 tenant-a", EXAMPLE_CURL_GET,
             refusing_port(&fd));
    run_example(cmd, out, sizeof(out));
    close(fd);
    const char *fail = "OK curl=7 http=0 outcome=failure retry_after_ms=0\n";
    const char *at = out;
    for (int i = 0; i < 5; i++, at += strlen(fail)) {
        at = strstr(at, fail);
        assert_non_null(at);
    }
    assert_string_equal(at, "state=closed\n");
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(curl_retry_after_values_parse_as_seconds_and_http_dates),
        cmocka_unit_test(curl_codes_and_statuses_follow_the_documented_table),
        cmocka_unit_test(curl_healthy_answers_succeed_and_a_404_is_ignored),
        cmocka_unit_test(curl_503_with_retry_after_fails_and_carries_the_hint),
        cmocka_unit_test(curl_429_with_retry_after_opens_for_that_long_when_asked),
        cmocka_unit_test(curl_refused_connections_open_it_and_refused_calls_open_no_socket),
        cmocka_unit_test(curl_silent_server_times_out_and_a_probe_ends_by_its_deadline),
        cmocka_unit_test(curl_reset_mid_body_and_a_slow_body_are_failures),
        cmocka_unit_test(curl_multi_transfers_carry_their_permits_to_another_thread),
        cmocka_unit_test(curl_failures_of_one_source_do_not_open_and_three_sources_do),
        cmocka_unit_test(curl_multi_transfers_complete_with_their_source),
#ifdef EXAMPLE_CURL_GET
        cmocka_unit_test(curl_example_succeeds_opens_on_refusals_but_not_for_one_caller),
#endif
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
