/* SPDX-License-Identifier: MIT */
/* curl_get.c - HTTP GETs behind a breaker: curl_get URL COUNT makes COUNT
 * requests, each with a 1 s timeout; three failures in a row open the
 * breaker, and the requests it refuses never open a connection. */
#include <breaker/curl.h>
#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    breaker *b;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 3;
    if (argc < 3 || breaker_create(&cfg, &b) != BREAKER_OK) return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, argv[1]);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L); /* the status is enough here */
    breaker_curl_options opt = {.timeout_ms = 1000};
    for (int i = 0, n = atoi(argv[2]); i < n; i++) {
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
