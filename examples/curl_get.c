/* SPDX-License-Identifier: MIT */
/* curl_get.c - HTTP GETs behind a breaker: curl_get URL COUNT [CALLER] makes
 * COUNT requests, each with a 1 s timeout; three failures in a row open the
 * breaker, and the requests it refuses never open a connection. With CALLER
 * (a tenant's name, say) every request is that caller's: the failures then
 * name one source, and by default (min_failing_sources 0) one caller's
 * failures never open the breaker shared with others. */
#include <breaker/curl.h>
#include <curl/curl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The caller's key: the 64-bit FNV-1a of its name, as breaker exec --source
 * makes it (0 is nobody, so a hash of 0 becomes 1). */
static uint64_t caller_key(const char *name) {
    if (*name == '\0') return 0;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *s = (const unsigned char *)name; *s != '\0'; s++)
        h = (h ^ *s) * UINT64_C(0x100000001b3);
    return h != 0 ? h : 1;
}

int main(int argc, char **argv) {
    breaker *b;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 3;
    char *end = NULL;
    long count = argc >= 3 ? strtol(argv[2], &end, 10) : -1;
    if (argc < 3 || argc > 4 || *end != '\0' || count < 0) {
        fprintf(stderr, "usage: curl_get URL COUNT [CALLER]\n"
                        "  GET URL COUNT times behind a breaker that opens after three failures "
                        "in a row\n");
        return 2;
    }
    if (breaker_create(&cfg, &b) != BREAKER_OK) return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, argv[1]);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L); /* the status is enough here */
    breaker_curl_options opt = {.timeout_ms = 1000};
    if (argc > 3) opt.source = caller_key(argv[3]);
    for (long i = 0; i < count; i++) {
        breaker_curl_result r;
        int rc = breaker_curl_perform(b, h, &opt, &r);
        printf("%s curl=%d http=%ld outcome=%s retry_after_ms=%llu\n", breaker_status_name(rc),
               r.curl_code, r.http_status, breaker_outcome_name(r.outcome),
               (unsigned long long)(r.retry_after_ns / 1000000));
    }
    printf("state=%s\n", breaker_state_name(breaker_get_state(b)));
    curl_easy_cleanup(h);
    curl_global_cleanup();
    breaker_destroy(b);
    return 0;
}
