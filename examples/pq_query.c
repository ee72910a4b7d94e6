/* SPDX-License-Identifier: MIT */
/* pq_query.c - PostgreSQL statements behind a breaker: pq_query CONNINFO SQL...
 * runs each statement on one connection and prints how it counted; a syntax
 * error is ignored, a lost server or a statement timeout is a failure. */
#include <breaker/pq.h>
#include <libpq-fe.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    breaker *b;
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE; /* three failures in a row open it */
    cfg.failure_threshold = 3;
    if (argc < 3) {
        fprintf(stderr, "usage: pq_query CONNINFO SQL...\n"
                        "  run each SQL statement behind a breaker that opens after three "
                        "failures in a row\n");
        return 2;
    }
    if (breaker_create(&cfg, &b) != BREAKER_OK) return 1;
    PGconn *conn;
    int connected = breaker_pq_connect(b, argv[1], &conn);
    if (connected != BREAKER_OK) {
        fprintf(stderr, "pq_query: connect: %s\n", breaker_status_name(connected));
        breaker_destroy(b);
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        PGresult *res;
        enum breaker_outcome out;
        int rc = breaker_pq_exec(b, conn, argv[i], &res, &out);
        const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        printf("%s: %s sqlstate=%s outcome=%s\n", argv[i], breaker_status_name(rc),
               state != NULL ? state : "-", breaker_outcome_name(out));
        PQclear(res);
    }
    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    printf("state=%s successes=%llu failures=%llu ignored=%llu\n", breaker_state_name(st.state),
           (unsigned long long)st.successes, (unsigned long long)st.failures,
           (unsigned long long)st.ignored);
    PQfinish(conn);
    breaker_destroy(b);
    return 0;
}
