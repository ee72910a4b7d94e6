/* SPDX-License-Identifier: MIT */
/*
 * http_client.c - real HTTP requests (libcurl) protected by a breaker, a
 * bulkhead, retries with backoff and a retry budget, and optionally a
 * cached last good answer, all run by a breaker_executor.
 *
 *   http_client [options] BASE_URL           then commands on stdin:
 *     get PATH          one request; prints one "req ..." line
 *     parallel N PATH   N requests at once on N threads (shows the bulkhead)
 *     state             prints a "state ..." line with the breaker's counters
 *     sleep MS          waits MS milliseconds
 *   http_client [options] --count N BASE_URL  N requests to BASE_URL, one
 *                                             every --interval-ms
 *
 * Options (defaults in brackets): --attempts N [3], --timeout-ms N per
 * attempt [300], --deadline-ms N per request [2000], --concurrency N [4],
 * --failures N in a row to open [3], --open-ms N [500], --probes N
 * successes to close [2], --order retry-outside|breaker-outside
 * [retry-outside], --stale-ms N serve the last good body up to N ms old when
 * the request fails or is refused [0 = off], --interval-ms N [200].
 *
 * The part to copy is `http_get()`: transport errors are turned into errno
 * values and classified with breaker_classify_errno(), answers with
 * breaker_classify_http_with() and the default policy (told whether the
 * answer carried Retry-After), so a refused connection, a timeout and a 503
 * are failures, a 2xx is a success, and a 404 is neither: IGNORED, it
 * leaves the breaker as it was (the request is reported kind=failed
 * outcome=ignored, and not retried). docs/classification.md says why. Each
 * output line is "key=value" words, which the end-to-end test
 * (tests/compose/test_http_e2e.py) reads.
 */
#define _GNU_SOURCE
#include <breaker.h>
#include <breaker/compose.h>

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS UINT64_C(1000000)

#define BODY_MAX    256
#define MAX_THREADS 64

struct options {
    unsigned attempts, concurrency, failures, probes, count;
    uint64_t timeout_ms, deadline_ms, open_ms, stale_ms, interval_ms;
    enum breaker_order order;
    const char *base_url;
};

struct client {
    struct options opt;
    breaker *breaker;
    breaker_bulkhead *bulkhead;
    breaker_retry_budget *budget;
    breaker_executor *executor;
    breaker_cache *cache;            /* NULL unless --stale-ms */
    breaker_http_policy http_policy; /* what 401/403/407, 429 and 503 with
                                        Retry-After count as */
};

/* What one attempt saw, for the report line. */
struct exchange {
    struct client *client;
    char url[1024];
    long http_status; /* 0 = no answer */
    CURLcode curl_code;
    int os_errno; /* the errno behind a transport error */
    char body[BODY_MAX];
    size_t body_len;
};

static size_t collect_body(char *data, size_t size, size_t n, void *ctx) {
    struct exchange *x = ctx;
    size_t len = size * n, room = sizeof(x->body) - x->body_len;
    memcpy(x->body + x->body_len, data, len < room ? len : room);
    x->body_len += len < room ? len : room;
    return len;
}

/* A libcurl failure as the errno that says the most about the dependency. */
static int curl_errno(CURLcode code, long os_errno) {
    /* An if-chain, not a switch: CURLcode has ~100 values and -Wswitch-enum
     * would want each. */
    if (code == CURLE_OK) return 0;
    if (code == CURLE_COULDNT_CONNECT) return os_errno != 0 ? (int)os_errno : ECONNREFUSED;
    if (code == CURLE_OPERATION_TIMEDOUT) return ETIMEDOUT;
    if (code == CURLE_COULDNT_RESOLVE_HOST) return EHOSTUNREACH;
    if (code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING ||
        code == CURLE_PARTIAL_FILE)
        return ECONNRESET;
    if (code == CURLE_ABORTED_BY_CALLBACK) return ECANCELED;
    return EINVAL; /* a local problem (bad URL, no memory): no evidence */
}

/* One attempt: the breaker_op_fn. The attempt's remaining time becomes the
 * transfer timeout, so the request never outlives the caller's deadline. */
static enum breaker_outcome http_get(void *ctx, breaker_attempt *a) {
    struct exchange *x = ctx;
    x->http_status = 0;
    x->body_len = 0;
    x->os_errno = 0;
    CURL *h = curl_easy_init();
    if (h == NULL) {
        a->error = -ENOMEM;
        return breaker_classify_errno(ENOMEM);
    }
    long timeout_ms = 0; /* 0 = none for libcurl */
    if (a->timeout_ns != UINT64_MAX) timeout_ms = (long)(a->timeout_ns / MS) + 1;
    curl_easy_setopt(h, CURLOPT_URL, x->url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    x->curl_code = curl_easy_perform(h);
    long os_errno = 0;
    curl_off_t retry_after = 0; /* 0: no (readable) Retry-After header */
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->http_status);
#if LIBCURL_VERSION_NUM >= 0x074200 /* 7.66.0 */
    curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after);
#endif
    curl_easy_cleanup(h);

    if (x->curl_code == CURLE_OK) {
        a->error = (int)x->http_status;
        enum breaker_outcome out = breaker_classify_http_with(
            &x->client->http_policy, (int)x->http_status, retry_after != 0);
        /* Keep 2xx bodies as the last good answer. */
        if (x->client->cache != NULL && x->http_status >= 200 && x->http_status < 300)
            (void)breaker_cache_put(x->client->cache, x->body, x->body_len);
        return out;
    }
    int err = curl_errno(x->curl_code, os_errno);
    x->os_errno = err;
    a->error = -err; /* negative: a transport errno, not an HTTP status */
    return breaker_classify_errno(err);
}

static void print_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    printf("event from=%s to=%s reason=%s\n", breaker_state_name(ev->from),
           breaker_state_name(ev->to), breaker_reason_name(ev->reason));
}

/* One request through the executor; fills `line` with its report. */
static void request(struct client *c, const char *path, char *line, size_t cap) {
    struct exchange x = {.client = c};
    snprintf(x.url, sizeof(x.url), "%s%s", c->opt.base_url, path);
    char stale[BODY_MAX];
    breaker_cache_target target = {.cache = c->cache, .buf = stale, .cap = sizeof(stale)};
    breaker_call call = {
        .op = http_get,
        .op_ctx = &x,
        .deadline_ns = breaker_deadline_after(NULL, NULL, c->opt.deadline_ms * MS),
        .idempotent = true, /* a GET */
        .fallback = c->cache != NULL ? breaker_cache_fallback : NULL,
        .fallback_ctx = &target,
    };
    breaker_result r;
    if (breaker_executor_run(c->executor, &call, &r) != BREAKER_OK) {
        snprintf(line, cap, "req path=%s kind=error", path);
        return;
    }
    int n = snprintf(
        line, cap,
        "req path=%s kind=%s layer=%s status=%s http=%ld errno=%d curl=%d outcome=%s "
        "attempts=%u records=%u late=%d state=%s retry_after_ms=%" PRIu64 " ms=%" PRIu64,
        path, breaker_result_kind_name(r.kind), breaker_layer_name(r.layer),
        breaker_status_name(r.status), x.http_status, x.os_errno, (int)x.curl_code,
        breaker_outcome_name(r.outcome), r.attempts, r.breaker_records, r.late ? 1 : 0,
        breaker_state_name(breaker_get_state(c->breaker)),
        r.retry_after_ns == UINT64_MAX ? UINT64_MAX : r.retry_after_ns / MS, r.elapsed_ns / MS);
    if (r.kind == BREAKER_RESULT_FALLBACK && n > 0 && (size_t)n < cap)
        snprintf(line + n, cap - (size_t)n, " fallback_of=%s age_ms=%" PRIu64 " body=%.*s",
                 breaker_result_kind_name(r.fallback_of), r.fallback_age_ns / MS,
                 (int)strcspn(stale, "\n") < (int)target.len ? (int)strcspn(stale, "\n")
                                                             : (int)target.len,
                 stale);
}

struct job {
    struct client *c;
    const char *path;
    pthread_barrier_t *start;
    char line[512];
};

static void *job_thread(void *arg) {
    struct job *j = arg;
    pthread_barrier_wait(j->start);
    request(j->c, j->path, j->line, sizeof(j->line));
    return NULL;
}

static void parallel(struct client *c, unsigned n, const char *path) {
    if (n == 0 || n > MAX_THREADS) {
        printf("error parallel: 1..%d threads\n", MAX_THREADS);
        return;
    }
    struct job jobs[MAX_THREADS];
    pthread_t threads[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, n);
    for (unsigned i = 0; i < n; i++) {
        jobs[i] = (struct job){.c = c, .path = path, .start = &start};
        if (pthread_create(&threads[i], NULL, job_thread, &jobs[i]) != 0) abort();
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    for (unsigned i = 0; i < n; i++)
        printf("%s\n", jobs[i].line);
}

static void print_state(struct client *c) {
    breaker_stats st;
    breaker_executor_stats es;
    breaker_bulkhead_stats bs;
    (void)breaker_stats_get(c->breaker, &st);
    (void)breaker_executor_stats_get(c->executor, &es);
    (void)breaker_bulkhead_stats_get(c->bulkhead, &bs);
    printf("state state=%s admitted=%" PRIu64 " successes=%" PRIu64 " failures=%" PRIu64
           " rejected=%" PRIu64 " requests=%" PRIu64 " attempts=%" PRIu64
           " refused_breaker=%" PRIu64 " refused_bulkhead=%" PRIu64 " fallbacks=%" PRIu64
           " bulkhead_peak=%u\n",
           breaker_state_name(breaker_get_state(c->breaker)), st.admitted, st.successes,
           st.failures, st.rejected_open + st.rejected_half_open + st.rejected_forced, es.requests,
           es.attempts, es.refused_breaker, es.refused_bulkhead, es.fallbacks, bs.peak);
}

static void run_commands(struct client *c) {
    char cmd[1024], line[512], path[900];
    unsigned n;
    unsigned long ms;
    while (fgets(cmd, sizeof(cmd), stdin) != NULL) {
        if (sscanf(cmd, "get %899s", path) == 1) {
            request(c, path, line, sizeof(line));
            printf("%s\n", line);
        } else if (sscanf(cmd, "parallel %u %899s", &n, path) == 2) {
            parallel(c, n, path);
        } else if (strncmp(cmd, "state", 5) == 0) {
            print_state(c);
        } else if (sscanf(cmd, "sleep %lu", &ms) == 1) {
            (void)breaker_sleep_monotonic(NULL, (uint64_t)ms * MS);
            printf("slept ms=%lu\n", ms);
        } else if (cmd[0] != '\n' && cmd[0] != '#') {
            printf("error unknown command\n");
        }
    }
}

static int usage(void) {
    fprintf(stderr, "usage: http_client [--attempts N] [--timeout-ms N] [--deadline-ms N]\n"
                    "       [--concurrency N] [--failures N] [--open-ms N] [--probes N]\n"
                    "       [--order retry-outside|breaker-outside] [--stale-ms N]\n"
                    "       [--count N [--interval-ms N]] BASE_URL\n");
    return 2;
}

static int parse(int argc, char **argv, struct options *o) {
    *o = (struct options){.attempts = 3,
                          .concurrency = 4,
                          .failures = 3,
                          .probes = 2,
                          .timeout_ms = 300,
                          .deadline_ms = 2000,
                          .open_ms = 500,
                          .interval_ms = 200,
                          .order = BREAKER_ORDER_RETRY_OUTSIDE_BREAKER};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            o->base_url = a;
            continue;
        }
        if (i + 1 >= argc) return -1;
        const char *v = argv[++i];
        unsigned long long n = strtoull(v, NULL, 10);
        if (strcmp(a, "--attempts") == 0)
            o->attempts = (unsigned)n;
        else if (strcmp(a, "--timeout-ms") == 0)
            o->timeout_ms = n;
        else if (strcmp(a, "--deadline-ms") == 0)
            o->deadline_ms = n;
        else if (strcmp(a, "--concurrency") == 0)
            o->concurrency = (unsigned)n;
        else if (strcmp(a, "--failures") == 0)
            o->failures = (unsigned)n;
        else if (strcmp(a, "--open-ms") == 0)
            o->open_ms = n;
        else if (strcmp(a, "--probes") == 0)
            o->probes = (unsigned)n;
        else if (strcmp(a, "--stale-ms") == 0)
            o->stale_ms = n;
        else if (strcmp(a, "--count") == 0)
            o->count = (unsigned)n;
        else if (strcmp(a, "--interval-ms") == 0)
            o->interval_ms = n;
        else if (strcmp(a, "--order") == 0 && strcmp(v, "retry-outside") == 0)
            o->order = BREAKER_ORDER_RETRY_OUTSIDE_BREAKER;
        else if (strcmp(a, "--order") == 0 && strcmp(v, "breaker-outside") == 0)
            o->order = BREAKER_ORDER_BREAKER_OUTSIDE_RETRY;
        else
            return -1;
    }
    return o->base_url != NULL ? 0 : -1;
}

static int setup(struct client *c) {
    const struct options *o = &c->opt;
    /* The defaults: auth failures and 429 are the caller's business
     * (IGNORED), a 503 is an outage with or without Retry-After. A service
     * whose 429 means "shedding load for everyone" would set
     * too_many_requests = BREAKER_FAILURE here. */
    breaker_http_policy_init(&c->http_policy);
    breaker_config bc;
    breaker_config_init(&bc);
    bc.trip = BREAKER_TRIP_CONSECUTIVE;
    bc.failure_threshold = o->failures;
    bc.open_ns = o->open_ms * MS;
    bc.open_max_ns = 8 * o->open_ms * MS;
    bc.half_open_successes = o->probes;
    bc.probe_timeout_ns = 2 * o->deadline_ms * MS;
    bc.clock = breaker_monotonic_ns; /* one clock for breaker and executor */
    bc.on_event = print_event;
    int rc = breaker_create(&bc, &c->breaker);
    if (rc != BREAKER_OK) return rc;

    breaker_bulkhead_config hc = {.max_concurrent = o->concurrency};
    if ((rc = breaker_bulkhead_create(&hc, &c->bulkhead)) != BREAKER_OK) return rc;

    breaker_retry_budget_config rbc;
    breaker_retry_budget_config_init(&rbc); /* retries add at most 20% + 10 per 10 s */
    if ((rc = breaker_retry_budget_create(&rbc, &c->budget)) != BREAKER_OK) return rc;

    if (o->stale_ms != 0) {
        breaker_cache_config cc;
        breaker_cache_config_init(&cc);
        cc.max_size = BODY_MAX;
        cc.max_stale_ns = o->stale_ms * MS;
        if ((rc = breaker_cache_create(&cc, &c->cache)) != BREAKER_OK) return rc;
    }

    breaker_executor_config ec;
    breaker_executor_config_init(&ec);
    ec.order = o->order;
    ec.b = c->breaker;
    ec.bulkhead = c->bulkhead;
    ec.budget = c->budget;
    ec.retry.max_attempts = o->attempts;
    ec.retry.base_ns = 20 * MS;
    ec.retry.max_backoff_ns = 200 * MS;
    ec.retry.jitter = BREAKER_JITTER_FULL;
    ec.retry.attempt_timeout_ns = o->timeout_ms * MS;
    return breaker_executor_create(&ec, &c->executor);
}

int main(int argc, char **argv) {
    struct client c = {0};
    if (parse(argc, argv, &c.opt) != 0) return usage();
    setvbuf(stdout, NULL, _IOLBF, 0); /* one line per event, for pipes too */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return 1;
    int rc = setup(&c);
    if (rc != BREAKER_OK) {
        fprintf(stderr, "http_client: %s\n", breaker_strerror(rc));
    } else if (c.opt.count > 0) {
        char line[512];
        for (unsigned i = 0; i < c.opt.count; i++) {
            if (i > 0) (void)breaker_sleep_monotonic(NULL, c.opt.interval_ms * MS);
            request(&c, "", line, sizeof(line));
            printf("%s\n", line);
        }
        print_state(&c);
    } else {
        run_commands(&c);
    }
    breaker_executor_destroy(c.executor);
    breaker_cache_destroy(c.cache);
    breaker_retry_budget_destroy(c.budget);
    breaker_bulkhead_destroy(c.bulkhead);
    breaker_destroy(c.breaker);
    curl_global_cleanup();
    return rc == BREAKER_OK ? 0 : 1;
}
