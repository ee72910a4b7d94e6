/* SPDX-License-Identifier: MIT */
/*
 * curl.c - libcurl transfers behind a breaker (include/breaker/curl.h).
 * Drives the breaker through libbreaker's exported API only.
 */
#include "breaker/curl.h"

#include <curl/curl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define NS_PER_S  UINT64_C(1000000000)
#define NS_PER_MS UINT64_C(1000000)
/* The longest delay a Retry-After can give: 2^63 ns, some 292 years. */
#define MAX_DELAY_S (INT64_MAX / (int64_t)NS_PER_S)
/* The longest timeout a long holds in milliseconds, on 32-bit longs too. */
#define LONG_MAX_MS 2147483647L

/* A CURLcode without an HTTP answer that shows the dependency, or the way
 * to it, at fault. An if-chain: CURLcode has ~100 values (-Wswitch-enum). */
static int transport_fault(CURLcode c) {
    if (c == CURLE_COULDNT_CONNECT || c == CURLE_OPERATION_TIMEDOUT ||
        c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_RESOLVE_PROXY ||
        c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR || c == CURLE_GOT_NOTHING ||
        c == CURLE_PARTIAL_FILE || c == CURLE_WEIRD_SERVER_REPLY ||
        c == CURLE_BAD_CONTENT_ENCODING || c == CURLE_HTTP2 || c == CURLE_SSL_CONNECT_ERROR ||
        c == CURLE_PEER_FAILED_VERIFICATION)
        return 1;
#if LIBCURL_VERSION_NUM >= 0x073100 /* 7.49.0 */
    if (c == CURLE_HTTP2_STREAM) return 1;
#endif
#if LIBCURL_VERSION_NUM >= 0x074500 /* 7.69.0 */
    if (c == CURLE_HTTP3 || c == CURLE_QUIC_CONNECT_ERROR) return 1;
#endif
    return 0;
}

enum breaker_outcome breaker_curl_classify(int curl_code, long http_status, int retry_after,
                                           const breaker_http_policy *policy) {
    CURLcode c = (CURLcode)curl_code;
    if (c == CURLE_OK || (c == CURLE_HTTP_RETURNED_ERROR && http_status != 0)) {
        /* 0 with CURLE_OK: a protocol without statuses (file://, ...) did
         * its job. */
        if (http_status == 0) return BREAKER_SUCCESS;
        int status = http_status > 999 ? 999 : (int)http_status;
        return breaker_classify_http_with(policy, status, retry_after);
    }
    if (transport_fault(c)) return BREAKER_FAILURE;
    if (c == CURLE_ABORTED_BY_CALLBACK) return BREAKER_CANCELLED;
    return BREAKER_IGNORED;
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t'; }

int breaker_curl_parse_retry_after(const char *value, int64_t now_unix_s, uint64_t *delay_ns) {
    *delay_ns = 0;
    char buf[128];
    while (is_blank(*value))
        value++;
    size_t n = strlen(value);
    while (n > 0 && (is_blank(value[n - 1]) || value[n - 1] == '\r' || value[n - 1] == '\n'))
        n--;
    if (n == 0 || n >= sizeof(buf)) return BREAKER_EFORMAT;
    memcpy(buf, value, n);
    buf[n] = '\0';
    size_t digits = strspn(buf, "0123456789");
    int64_t seconds = 0;
    if (digits == n) { /* delay-seconds */
        for (size_t i = 0; i < n && seconds < MAX_DELAY_S; i++)
            seconds = seconds * 10 + (buf[i] - '0');
    } else {
        time_t at = curl_getdate(buf, NULL);
        if (at == (time_t)-1) return BREAKER_EFORMAT;
        seconds = (int64_t)at > now_unix_s ? (int64_t)at - now_unix_s : 0;
    }
    if (seconds > MAX_DELAY_S) seconds = MAX_DELAY_S;
    *delay_ns = (uint64_t)seconds * NS_PER_S;
    return BREAKER_OK;
}

/* The answer's Retry-After, read from the handle after the transfer. */
static int retry_after_of(CURL *easy, uint64_t *delay_ns) {
#if LIBCURL_VERSION_NUM >= 0x075300 /* 7.83.0: curl_easy_header() */
    struct curl_header *h = NULL;
    if (curl_easy_header(easy, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK && h != NULL &&
        h->value != NULL)
        return breaker_curl_parse_retry_after(h->value, (int64_t)time(NULL), delay_ns) ==
               BREAKER_OK;
    return 0;
#elif LIBCURL_VERSION_NUM >= 0x074200 /* 7.66.0: libcurl's own reading */
    curl_off_t s = 0;
    if (curl_easy_getinfo(easy, CURLINFO_RETRY_AFTER, &s) != CURLE_OK || s <= 0) return 0;
    *delay_ns = (uint64_t)s * NS_PER_S;
    return 1;
#else
    (void)easy;
    *delay_ns = 0;
    return 0;
#endif
}

static void refused(breaker *b, int rc, breaker_curl_result *r) {
    memset(r, 0, sizeof(*r));
    r->status = rc;
    r->outcome = BREAKER_IGNORED;
    r->curl_code = -1;
    r->retry_after_ns = breaker_retry_after_ns(b);
}

/* The timeout an admitted transfer gets: the caller's, and for a probe no
 * more than the probe's time to its deadline (rounded down to the
 * millisecond, so the transfer ends first; at least 1 ms). */
static long timeout_for(breaker *b, const breaker_permit *permit, const breaker_curl_options *o) {
    long ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
    if (!breaker_permit_is_probe(permit)) return ms;
    breaker_config cfg;
    breaker_get_config(b, &cfg);
    uint64_t probe_ms = cfg.probe_timeout_ns / NS_PER_MS;
    if (probe_ms == 0) probe_ms = 1;
    if (probe_ms > (uint64_t)LONG_MAX_MS) probe_ms = LONG_MAX_MS;
    return ms == 0 || (uint64_t)ms > probe_ms ? (long)probe_ms : ms;
}

/* Ask the breaker; when admitted, arm the handle's timeout and record the
 * permit in `t`. */
static int begin(breaker *b, CURL *easy, const breaker_curl_options *o, breaker_curl_transfer *t) {
    memset(t, 0, sizeof(*t));
    t->b = b;
    t->easy = easy;
    if (o != NULL) t->options = *o;
    int rc = breaker_acquire_from(b, &t->permit, t->options.source);
    if (rc != BREAKER_OK) return rc;
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_for(b, &t->permit, &t->options));
    t->active = 1;
    return BREAKER_OK;
}

int breaker_curl_done(breaker_curl_transfer *t, int curl_code, breaker_curl_result *r) {
    breaker_curl_result local;
    if (r == NULL) r = &local;
    memset(r, 0, sizeof(*r));
    if (!t->active) {
        r->status = BREAKER_ALREADY_SETTLED;
        r->curl_code = curl_code;
        r->outcome = BREAKER_IGNORED;
        return r->status;
    }
    t->active = 0;
    r->admitted = 1;
    r->curl_code = curl_code;
    long status = 0;
    if (curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK)
        r->http_status = status;
    if (r->http_status != 0) r->has_retry_after = retry_after_of(t->easy, &r->retry_after_ns);
    r->outcome = breaker_curl_classify(curl_code, r->http_status, r->has_retry_after,
                                       t->options.http_policy);
    r->status = breaker_complete_from(t->b, &t->permit, r->outcome, t->options.source);
    /* After the completion, so that a probe's own outcome is applied first
     * and the directed wait then replaces whatever it decided. */
    if (t->options.retry_after_opens && r->has_retry_after && r->retry_after_ns > 0 &&
        (r->http_status == 429 || r->http_status == 503))
        r->directed_open =
            breaker_open_for(t->b, r->retry_after_ns, BREAKER_REASON_SERVER_DIRECTED) == BREAKER_OK;
    return r->status;
}

int breaker_curl_perform(breaker *b, void *easy, const breaker_curl_options *options,
                         breaker_curl_result *r) {
    breaker_curl_transfer t;
    int rc = begin(b, easy, options, &t);
    if (rc != BREAKER_OK) {
        refused(b, rc, r);
        return rc;
    }
    (void)breaker_curl_done(&t, (int)curl_easy_perform(easy), r);
    return BREAKER_OK;
}

int breaker_curl_multi_add(breaker *b, void *multi, void *easy, const breaker_curl_options *options,
                           breaker_curl_transfer *t) {
    int rc = begin(b, easy, options, t);
    if (rc != BREAKER_OK) return rc;
    if (curl_multi_add_handle(multi, easy) != CURLM_OK) {
        t->active = 0;
        (void)breaker_complete_from(b, &t->permit, BREAKER_IGNORED, t->options.source);
        return BREAKER_EINVAL;
    }
    return BREAKER_OK;
}
