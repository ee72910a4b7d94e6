/* SPDX-License-Identifier: MIT */
/*
 * breaker/curl.h - libcurl transfers behind a breaker.
 *
 * Library breaker_curl (CMake: find_package(breaker COMPONENTS curl), target
 * breaker::curl), built when libcurl is found; it links libcurl privately.
 * This header needs no libcurl headers: an easy handle (CURL *) and a multi
 * handle (CURLM *) are passed as void *, a CURLcode as int.
 *
 * Two ways in:
 * - the easy interface: breaker_curl_perform() asks the breaker, runs
 *   curl_easy_perform() when admitted, classifies and completes;
 * - the multi interface: breaker_curl_multi_add() asks the breaker and adds
 *   an admitted handle to the multi handle; the caller-owned
 *   breaker_curl_transfer carries the handle's permit (keep it with the
 *   handle, for example in what CURLOPT_PRIVATE points to), and
 *   breaker_curl_done() classifies and completes it when curl_multi_info_read()
 *   reports the transfer done, on any thread.
 * A refused call never reaches libcurl: no socket is opened, no handle is
 * added.
 *
 * What counts (breaker_curl_classify()): a transfer that got an HTTP answer
 * (CURLE_OK, or CURLE_HTTP_RETURNED_ERROR under CURLOPT_FAILONERROR) by
 * breaker_classify_http_with() and its Retry-After; a transfer without one
 * by its CURLcode:
 *   couldn't connect (refused), operation timed out, couldn't resolve the
 *   host or proxy, send or receive error (a reset), got nothing, partial
 *   file (the body cut short), weird server reply, bad content encoding,
 *   HTTP/2 or HTTP/3 stream errors, TLS handshake and certificate errors
 *                                       -> FAILURE
 *   aborted by callback                 -> CANCELLED (the caller's callback)
 *   everything else (a malformed URL, an unsupported protocol, out of
 *   memory, too many redirects, a write callback's refusal, a login
 *   denied)                             -> IGNORED (a local or request-made
 *                                          error)
 * docs/curl.md has the reasons.
 *
 * Timeouts: the wrapper sets CURLOPT_TIMEOUT_MS on every admitted handle
 * (do not set it yourself): the caller's timeout_ms, and for a half-open
 * probe at most the breaker's probe_timeout_ns, so a probe's transfer ends
 * by its deadline whatever the caller asked.
 *
 * The caller (options.source): every transfer is admitted with
 * breaker_acquire_from() and completed with breaker_complete_from() and
 * options.source, on both interfaces, so a breaker with failing-source
 * diversity (min_failing_sources, see breaker_complete_from) trips only when
 * enough distinct callers fail, one tenant whose own requests fail cannot
 * open it for everyone, and one whose transfers fail or hang cannot own its
 * recovery (a probe's timeout is its caller's failure). Set it to
 * a non-zero 64-bit key for whoever the transfer is for (a tenant, an API
 * key, a calling service), the same key on every call and in every process:
 * a hash of its name; the 64-bit FNV-1a of the name (0 taken as 1) gives
 * the keys `breaker exec --source` and `breaker replay` use (docs/curl.md
 * has the function). 0 (the default) names nobody, as breaker_complete()
 * does.
 *
 * Thread-safety: the breaker may be shared by any number of threads; an
 * easy handle is used by one thread at a time, as libcurl requires. The
 * source changes neither.
 */
#ifndef BREAKER_CURL_H
#define BREAKER_CURL_H

#include <breaker.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per call choices; NULL or a zeroed struct means the defaults. The
 * functions copy the struct; the policy it points to must stay valid until
 * the call is completed (breaker_curl_done() for a multi transfer). */
typedef struct breaker_curl_options breaker_curl_options;
struct breaker_curl_options {
    long timeout_ms;                        /* the transfer's timeout; 0 = none
                                               (a probe still ends by its deadline) */
    const breaker_http_policy *http_policy; /* NULL = breaker_http_policy_init()'s */
    /* 1: an answer 429 or 503 that carries a readable Retry-After (seconds or
     * an HTTP-date, breaker_curl_parse_retry_after()) opens the breaker for
     * that long once the call is completed: breaker_open_for() with reason
     * BREAKER_REASON_SERVER_DIRECTED, capped at the breaker's open_max_ns
     * (through a store file, every process of the host waits it out).
     * 0 (default): Retry-After changes only how a 503 counts. */
    int retry_after_opens;
    /* The caller the transfer is for, given with its outcome to
     * breaker_complete_from() (see the top of this header): a non-zero key,
     * or 0 (default) for none. */
    uint64_t source;
};

/* What one call came to. */
typedef struct breaker_curl_result breaker_curl_result;
struct breaker_curl_result {
    int admitted;                 /* 1: the transfer ran; 0: refused */
    int status;                   /* refused: the BREAKER_REJECTED_* status;
                                     admitted: breaker_complete_from()'s (OK, STALE ...) */
    enum breaker_outcome outcome; /* what the call counted as (IGNORED when refused) */
    int curl_code;                /* the CURLcode; -1 when refused */
    long http_status;             /* the answer's status; 0 = none */
    int has_retry_after;          /* 1: the answer carried a readable Retry-After */
    uint64_t retry_after_ns;      /* when to try again: the answer's Retry-After
                                     (0 for a date in the past), or for a refused
                                     call breaker_retry_after_ns(); else 0 */
    int directed_open;            /* 1: retry_after_opens opened the breaker
                                     for this answer (breaker_open_for()) */
};

/* A transfer in the multi interface: caller-owned, plain memory, from
 * breaker_curl_multi_add() to breaker_curl_done(). Its fields are private. */
typedef struct breaker_curl_transfer breaker_curl_transfer;
struct breaker_curl_transfer {
    breaker *b;
    void *easy;
    breaker_permit permit;
    breaker_curl_options options;
    int active;
};

/*! breaker_curl_classify() :
 *  @return the outcome of a transfer that ended with `curl_code` (a CURLcode)
 *  and HTTP status `http_status` (0 = no answer), `retry_after` nonzero when
 *  the answer carried Retry-After, under `policy` (NULL = the defaults), by
 *  the table above. Pure. */
BREAKER_API enum breaker_outcome breaker_curl_classify(int curl_code, long http_status,
                                                       int retry_after,
                                                       const breaker_http_policy *policy);

/*! breaker_curl_parse_retry_after() :
 *  Read a Retry-After header's value `value` (no header name; surrounding
 *  blanks allowed): delay-seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015
 *  07:28:00 GMT", and the obsolete forms libcurl's curl_getdate() reads),
 *  the date taken relative to `now_unix_s` (seconds since the epoch); a date
 *  not after it gives 0.
 *  @return BREAKER_OK with the delay in `*delay_ns` (at most 2^63 ns), or
 *  BREAKER_EFORMAT when `value` is neither (`*delay_ns` is then 0). Pure. */
BREAKER_API int breaker_curl_parse_retry_after(const char *value, int64_t now_unix_s,
                                               uint64_t *delay_ns) BREAKER_NONNULL(1, 3);

/*! breaker_curl_perform() :
 *  curl_easy_perform(easy) behind `b` with `options` (NULL = defaults),
 *  completed with breaker_complete_from() and options->source.
 *  Always fills `r`.
 *  @return BREAKER_OK when the transfer ran (r->outcome says how it counted),
 *  or a BREAKER_REJECTED_* status when the breaker refused it (libcurl was
 *  not called). */
BREAKER_API BREAKER_NODISCARD int breaker_curl_perform(breaker *b, void *easy,
                                                       const breaker_curl_options *options,
                                                       breaker_curl_result *r)
    BREAKER_NONNULL(1, 2, 4);

/*! breaker_curl_multi_add() :
 *  Ask `b` for the transfer on `easy` and, when admitted, set its timeout
 *  and curl_multi_add_handle(multi, easy). `t` records the permit; keep it
 *  until breaker_curl_done().
 *  @return BREAKER_OK: added, `t` active; a BREAKER_REJECTED_* status:
 *  refused, the handle is not added and `t` is idle; BREAKER_EINVAL:
 *  curl_multi_add_handle() failed (the permit is completed IGNORED, from
 *  options->source, `t` idle). */
BREAKER_API BREAKER_NODISCARD int breaker_curl_multi_add(breaker *b, void *multi, void *easy,
                                                         const breaker_curl_options *options,
                                                         breaker_curl_transfer *t)
    BREAKER_NONNULL(1, 2, 3, 5);

/*! breaker_curl_done() :
 *  The transfer of `t` ended with `curl_code` (CURLMsg's data.result):
 *  read its status and Retry-After from the handle, classify, and complete
 *  the permit. Call once the transfer is done and while no other thread
 *  uses the handle (it need not be the multi's thread); removing the handle
 *  from the multi handle stays the caller's. Fills `r` when not NULL.
 *  The permit is completed with breaker_complete_from() and the source of
 *  the options given to breaker_curl_multi_add().
 *  @return breaker_complete_from()'s status (BREAKER_OK, BREAKER_STALE ...),
 *  or BREAKER_ALREADY_SETTLED when `t` is idle (nothing done). */
BREAKER_API int breaker_curl_done(breaker_curl_transfer *t, int curl_code, breaker_curl_result *r)
    BREAKER_NONNULL(1);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_CURL_H */
