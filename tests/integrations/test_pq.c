/* SPDX-License-Identifier: MIT */
/*
 * test_pq.c - breaker_pq against a real PostgreSQL server (tests/support/pg_server.c:
 * initdb in a temporary directory, run as an unprivileged user, a unix
 * socket only): what the server answers counts as breaker/sqlstate.h says,
 * the breaker's counts are exact, and a refused call sends nothing; the
 * _from variants complete every path with the caller's source (with
 * min_failing_sources = 3, one caller's failures do not open the breaker,
 * three callers' do).
 *
 * The breakers run on a fake clock (the test decides when an open wait has
 * passed); the server and libpq run in real time, and no assertion depends
 * on how long anything took.
 */
#define _GNU_SOURCE /* popen, for the example program */
#include "integration_util.h"

#include "pg_server.h"

#include <breaker/pq.h>
#include <libpq-fe.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct test_pg pg;

static int start_server(void **state) {
    (void)state;
    return test_pg_start(&pg) == 0 ? 0 : -1;
}

static int stop_server(void **state) {
    (void)state;
    test_pg_stop(&pg);
    return 0;
}

/* A connection made without the breaker, for setup and checks. */
static PGconn *raw_connect(void) {
    PGconn *c = PQconnectdb(pg.conninfo);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(c));
    return c;
}

static void raw_exec(PGconn *c, const char *sql) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

static long raw_count(const char *table) {
    PGconn *c = raw_connect();
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return n;
}

/* A breaker that opens on `threshold` failures in a row (probes: 30 s). */
static breaker *pq_breaker(struct fake_clock *clock, uint32_t threshold) {
    return integration_breaker(clock, threshold, 30 * SEC);
}

/* One statement through the breaker; asserts it was sent. */
static enum breaker_outcome exec_counted(breaker *b, PGconn *c, const char *sql) {
    PGresult *res;
    enum breaker_outcome out;
    assert_int_equal(breaker_pq_exec(b, c, sql, &res, &out), BREAKER_OK);
    PQclear(res);
    return out;
}

static void pq_answers_and_request_errors_are_counted_as_the_table_says(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = pq_breaker(&clock, 3);
    PGconn *c = raw_connect();
    raw_exec(c, "CREATE TABLE uniq (k int PRIMARY KEY)");
    raw_exec(c, "INSERT INTO uniq VALUES (1)");
    for (int i = 0; i < 5; i++)
        assert_int_equal(exec_counted(b, c, "SELECT 1"), BREAKER_SUCCESS);
    /* Twenty request errors in a row on a breaker that opens on three
     * failures: a syntax error, a unique violation, a serialization failure
     * and an unknown table say nothing about the server. */
    const char *request_errors[] = {"SELEC 1", "INSERT INTO uniq VALUES (1)",
                                    "DO $$BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = "
                                    "'serialization_failure'; END$$",
                                    "SELECT * FROM no_such_table"};
    for (int i = 0; i < 20; i++)
        assert_int_equal(exec_counted(b, c, request_errors[i % 4]), BREAKER_IGNORED);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    expect_counts(b, (struct counts){.admitted = 25, .successes = 5, .ignored = 20});
    raw_exec(c, "DROP TABLE uniq");
    PQfinish(c);
    test_breaker_destroy(b);
}

/* The server itself raises each code (RAISE ... USING ERRCODE), so the
 * wrapper reads it from a real error result. */
static void pq_sqlstates_raised_by_the_server_follow_the_table(void **state) {
    (void)state;
    const struct {
        const char *code;
        enum breaker_outcome want;
    } rows[] = {
        {"08006", BREAKER_FAILURE}, {"53300", BREAKER_FAILURE}, {"53200", BREAKER_FAILURE},
        {"57P01", BREAKER_FAILURE}, {"57014", BREAKER_FAILURE}, {"58030", BREAKER_FAILURE},
        {"XX000", BREAKER_FAILURE}, {"40003", BREAKER_FAILURE}, {"23505", BREAKER_IGNORED},
        {"42601", BREAKER_IGNORED}, {"40001", BREAKER_IGNORED}, {"40P01", BREAKER_IGNORED},
        {"28P01", BREAKER_IGNORED}, {"P0001", BREAKER_IGNORED}, {"57P05", BREAKER_IGNORED},
    };
    struct fake_clock clock = {0};
    breaker *b = pq_breaker(&clock, 1000);
    PGconn *c = raw_connect();
    unsigned failures = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char sql[160];
        snprintf(sql, sizeof(sql),
                 "DO $$BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '%s'; END$$", rows[i].code);
        PGresult *res;
        enum breaker_outcome out;
        assert_int_equal(breaker_pq_exec(b, c, sql, &res, &out), BREAKER_OK);
        assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), rows[i].code);
        print_message("SQLSTATE %s -> %s\n", rows[i].code, breaker_outcome_name(out));
        assert_int_equal(out, rows[i].want);
        failures += out == BREAKER_FAILURE;
        PQclear(res);
    }
    assert_int_equal(stats_of(b).failures, failures);
    PQfinish(c);
    test_breaker_destroy(b);
}

/* statement_timeout cancels the statement (57014): the database did not
 * answer in time, a failure. Three open the breaker, and the statements it
 * refuses never reach the server (the table they would insert into stays
 * empty). */
static void
pq_statement_timeout_opens_the_breaker_and_refused_statements_send_nothing(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = pq_breaker(&clock, 3);
    PGconn *c = raw_connect();
    raw_exec(c, "CREATE TABLE hits (n int)");
    raw_exec(c, "SET statement_timeout = '50ms'");
    for (int i = 0; i < 3; i++) {
        PGresult *res;
        enum breaker_outcome out;
        assert_int_equal(breaker_pq_exec(b, c, "SELECT pg_sleep(60)", &res, &out), BREAKER_OK);
        assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "57014");
        assert_int_equal(out, BREAKER_FAILURE);
        PQclear(res);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    for (int i = 0; i < 10; i++) {
        PGresult *res = (PGresult *)&clock; /* must be overwritten with NULL */
        enum breaker_outcome out = BREAKER_FAILURE;
        assert_int_equal(breaker_pq_exec(b, c, "INSERT INTO hits VALUES (1)", &res, &out),
                         BREAKER_REJECTED_OPEN);
        assert_null(res);
        assert_int_equal(out, BREAKER_IGNORED);
    }
    assert_int_equal(raw_count("hits"), 0);
    expect_counts(b, (struct counts){.admitted = 3, .failures = 3, .rejected_open = 10});
    /* The wait passes; the probe's statement runs and closes the breaker. */
    fake_clock_advance(&clock, 10 * SEC);
    assert_int_equal(exec_counted(b, c, "INSERT INTO hits VALUES (1)"), BREAKER_SUCCESS);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(raw_count("hits"), 1);
    raw_exec(c, "DROP TABLE hits");
    PQfinish(c);
    test_breaker_destroy(b);
}

/* Runs `sql` asynchronously to the end. @return the folded outcome. */
static enum breaker_outcome async_query(breaker *b, PGconn *c, const char *sql, unsigned *results) {
    breaker_pq_query q;
    assert_int_equal(breaker_pq_send(b, c, sql, &q), BREAKER_OK);
    *results = 0;
    PGresult *res;
    while ((res = breaker_pq_get_result(c, &q)) != NULL) {
        (*results)++;
        PQclear(res);
    }
    /* Done: again gives NULL and completes nothing. */
    assert_null(breaker_pq_get_result(c, &q));
    assert_int_equal(breaker_pq_abandon(&q, BREAKER_FAILURE), BREAKER_OK);
    return q.outcome;
}

static void pq_async_queries_complete_their_permit_once_with_the_worst_result(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = pq_breaker(&clock, 3);
    PGconn *c = raw_connect();
    unsigned n;
    assert_int_equal(async_query(b, c, "SELECT 1; SELECT 2", &n), BREAKER_SUCCESS);
    assert_int_equal(n, 2);
    /* The second statement fails (an unknown table) after the first ran. */
    assert_int_equal(async_query(b, c, "SELECT 1; SELECT * FROM no_such_table", &n),
                     BREAKER_IGNORED);
    assert_int_equal(n, 2);
    raw_exec(c, "SET statement_timeout = '50ms'");
    assert_int_equal(async_query(b, c, "SELECT 1; SELECT pg_sleep(60)", &n), BREAKER_FAILURE);
    raw_exec(c, "RESET statement_timeout");
    expect_counts(b, (struct counts){.admitted = 3, .successes = 1, .failures = 1, .ignored = 1});
    PQfinish(c);
    test_breaker_destroy(b);
}

/* A statement the server fails with a code that counts as a FAILURE
 * (57P01 admin_shutdown, raised: the connection stays up). */
#define FAILING_SQL "DO $$BEGIN RAISE EXCEPTION 'down' USING ERRCODE = '57P01'; END$$"

/* A conninfo for a port on 127.0.0.1 that refuses connections. */
static void refusing_conninfo(char *conninfo, size_t len, int *fd) {
    snprintf(conninfo, len,
             "host=127.0.0.1 port=%d dbname=postgres user=postgres connect_timeout=10",
             refusing_port(fd));
}

/* The _from variants name the caller: with min_failing_sources = 3, ten
 * failed statements and five failed connections of one caller, and more
 * of a second, leave the breaker closed (a breaker without the rule opens
 * on three in a row); a third caller's failure opens it. Without the
 * source the failures name nobody and, under an explicit
 * min_failing_sources, never trip. */
static void pq_failures_of_one_source_do_not_open_and_three_sources_do(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    uint64_t callers[3];
    keys_on_distinct_bits(callers, 3);
    /* Statements (breaker_pq_exec_from). */
    breaker *b = integration_breaker_sources(&clock, 3, 30 * SEC, 3);
    PGconn *c = raw_connect();
    for (int i = 0; i < 13; i++) {
        PGresult *res;
        enum breaker_outcome out;
        assert_int_equal(breaker_pq_exec_from(b, c, FAILING_SQL, &res, &out, callers[i / 10]),
                         BREAKER_OK);
        assert_int_equal(out, BREAKER_FAILURE);
        PQclear(res);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    PGresult *res;
    assert_int_equal(breaker_pq_exec_from(b, c, FAILING_SQL, &res, NULL, callers[2]), BREAKER_OK);
    PQclear(res);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    expect_counts(b, (struct counts){.admitted = 14, .failures = 14});
    PQfinish(c);
    test_breaker_destroy(b);
    /* Connections (breaker_pq_connect_from). */
    b = integration_breaker_sources(&clock, 3, 30 * SEC, 3);
    int fd;
    char conninfo[128];
    refusing_conninfo(conninfo, sizeof(conninfo), &fd);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(breaker_pq_connect_from(b, conninfo, &c, callers[i / 5]), BREAKER_OK);
        assert_int_equal(PQstatus(c), CONNECTION_BAD);
        PQfinish(c);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    assert_int_equal(breaker_pq_connect_from(b, conninfo, &c, callers[2]), BREAKER_OK);
    PQfinish(c);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    expect_counts(b, (struct counts){.admitted = 9, .failures = 9});
    close(fd);
    test_breaker_destroy(b);
}

/* The asynchronous paths keep the source of breaker_pq_send_from(): the
 * last result (breaker_pq_get_result), breaker_pq_abandon() and a send
 * that fails all complete with it. */
static void pq_async_queries_complete_with_their_source(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    uint64_t callers[3];
    keys_on_distinct_bits(callers, 3);
    breaker *b = integration_breaker_sources(&clock, 3, 30 * SEC, 3);
    PGconn *c = raw_connect();
    breaker_pq_query q;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(breaker_pq_send_from(b, c, FAILING_SQL, &q, callers[0]), BREAKER_OK);
        PGresult *res;
        while ((res = breaker_pq_get_result(c, &q)) != NULL)
            PQclear(res);
        assert_int_equal(q.outcome, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* The second caller's query is given up on: cancelled, abandoned. */
    assert_int_equal(breaker_pq_send_from(b, c, "SELECT pg_sleep(60)", &q, callers[1]), BREAKER_OK);
    PGcancel *cancel = PQgetCancel(c);
    char err[256];
    assert_int_equal(PQcancel(cancel, err, sizeof(err)), 1);
    PQfreeCancel(cancel);
    assert_int_equal(breaker_pq_abandon(&q, BREAKER_FAILURE), BREAKER_OK);
    PQfinish(c);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    /* The third caller's send fails on a connection that never came up. */
    int fd;
    char conninfo[128];
    refusing_conninfo(conninfo, sizeof(conninfo), &fd);
    c = PQconnectdb(conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_BAD);
    assert_int_equal(breaker_pq_send_from(b, c, "SELECT 1", &q, callers[2]), BREAKER_EIO);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    expect_counts(b, (struct counts){.admitted = 7, .failures = 7});
    PQfinish(c);
    close(fd);
    test_breaker_destroy(b);
}

static void pq_connection_refused_is_a_failure_and_open_refuses_before_connecting(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = pq_breaker(&clock, 3);
    int fd;
    char conninfo[128];
    refusing_conninfo(conninfo, sizeof(conninfo), &fd);
    for (int i = 0; i < 3; i++) {
        PGconn *c;
        assert_int_equal(breaker_pq_connect(b, conninfo, &c), BREAKER_OK);
        assert_int_equal(PQstatus(c), CONNECTION_BAD);
        print_message("refused: %s", PQerrorMessage(c));
        PQfinish(c);
    }
    PGconn *c = (PGconn *)&clock;
    assert_int_equal(breaker_pq_connect(b, conninfo, &c), BREAKER_REJECTED_OPEN);
    assert_null(c);
    expect_counts(b, (struct counts){.admitted = 3, .failures = 3, .rejected_open = 1});
    close(fd);
    test_breaker_destroy(b);
}

/* Sends a long statement on `c`, stops the server under it with `sig`, and
 * checks that the statement in flight and the next one on the broken
 * connection (libpq's own error, no SQLSTATE) both fail. */
static void stop_under_a_running_statement(breaker *b, PGconn *c, int sig) {
    breaker_pq_query q;
    assert_int_equal(breaker_pq_send(b, c, "SELECT pg_sleep(60)", &q), BREAKER_OK);
    /* The statement is running (or about to): stop the server under it. */
    test_pg_signal(&pg, sig);
    PGresult *res;
    while ((res = breaker_pq_get_result(c, &q)) != NULL) {
        print_message("in flight: %s", PQresultErrorMessage(res));
        PQclear(res);
    }
    assert_int_equal(q.outcome, BREAKER_FAILURE);
    assert_int_equal(exec_counted(b, c, "SELECT 1"), BREAKER_FAILURE);
}

/* The server stops mid-run (SIGQUIT: pg_ctl stop -m immediate) while a
 * statement runs: that statement, the next one on the broken connection and
 * new connections fail; the breaker opens and refuses without connecting.
 * The server comes back; after the wait one probe connects and closes it. */
static void pq_server_stopped_mid_run_opens_the_breaker_and_recovery_closes_it(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = pq_breaker(&clock, 3);
    PGconn *c;
    assert_int_equal(breaker_pq_connect(b, pg.conninfo, &c), BREAKER_OK);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    stop_under_a_running_statement(b, c, SIGQUIT);
    PQfinish(c);
    /* A new connection: nothing listens any more. */
    assert_int_equal(breaker_pq_connect(b, pg.conninfo, &c), BREAKER_OK);
    assert_int_equal(PQstatus(c), CONNECTION_BAD);
    print_message("reconnect: %s", PQerrorMessage(c));
    PQfinish(c);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    c = (PGconn *)&clock;
    assert_int_equal(breaker_pq_connect(b, pg.conninfo, &c), BREAKER_REJECTED_OPEN);
    assert_null(c);
    /* The connect, the statement, the next one, a reconnect. */
    expect_counts(
        b, (struct counts){.admitted = 4, .successes = 1, .failures = 3, .rejected_open = 1});
    /* Still down after the wait: the probe connects to nothing and reopens. */
    fake_clock_advance(&clock, 10 * SEC);
    assert_int_equal(breaker_pq_connect(b, pg.conninfo, &c), BREAKER_OK);
    assert_int_equal(PQstatus(c), CONNECTION_BAD);
    PQfinish(c);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    /* Back up: the next probe (after the doubled wait) closes it. */
    assert_int_equal(test_pg_restart(&pg), 0);
    fake_clock_advance(&clock, 20 * SEC);
    assert_int_equal(breaker_pq_connect(b, pg.conninfo, &c), BREAKER_OK);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    assert_int_equal(exec_counted(b, c, "SELECT 1"), BREAKER_SUCCESS);
    PQfinish(c);
    expect_counts(
        b, (struct counts){.admitted = 7, .successes = 3, .failures = 4, .rejected_open = 1});
    breaker_stats st = stats_of(b);
    assert_int_equal(st.state, BREAKER_CLOSED);
    assert_int_equal(st.probes_failed, 1);
    assert_int_equal(st.probes_succeeded, 1);
    test_breaker_destroy(b);
}

/* The postmaster is killed (SIGKILL: no shutdown at all) under a running
 * statement; its backend exits on the postmaster's death. The statement
 * in flight and the next one fail. Runs last: the server is not restarted
 * (the group teardown finds it gone and removes its directory). */
static void pq_server_killed_fails_the_statement_in_flight(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker *b = pq_breaker(&clock, 2);
    PGconn *c = raw_connect();
    stop_under_a_running_statement(b, c, SIGKILL);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    expect_counts(b, (struct counts){.admitted = 2, .failures = 2});
    PQfinish(c);
    test_breaker_destroy(b);
}

#ifdef EXAMPLE_PQ_QUERY /* the examples are built (BREAKER_BUILD_EXAMPLES) */
/* examples/pq_query.c, run against the server: what its reader sees. */
static void pq_example_counts_a_syntax_error_as_ignored(void **state) {
    (void)state;
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof(cmd), "%s '%s' 'SELECT 1' 'SELEC 1'", EXAMPLE_PQ_QUERY, pg.conninfo);
    run_example(cmd, out, sizeof(out));
    assert_non_null(strstr(out, "SELECT 1: OK sqlstate=- outcome=success\n"));
    assert_non_null(strstr(out, "SELEC 1: OK sqlstate=42601 outcome=ignored\n"));
    assert_non_null(strstr(out, "state=closed successes=2 failures=0 ignored=1\n"));
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pq_answers_and_request_errors_are_counted_as_the_table_says),
        cmocka_unit_test(pq_sqlstates_raised_by_the_server_follow_the_table),
        cmocka_unit_test(
            pq_statement_timeout_opens_the_breaker_and_refused_statements_send_nothing),
        cmocka_unit_test(pq_async_queries_complete_their_permit_once_with_the_worst_result),
        cmocka_unit_test(pq_connection_refused_is_a_failure_and_open_refuses_before_connecting),
        cmocka_unit_test(pq_failures_of_one_source_do_not_open_and_three_sources_do),
        cmocka_unit_test(pq_async_queries_complete_with_their_source),
        cmocka_unit_test(pq_server_stopped_mid_run_opens_the_breaker_and_recovery_closes_it),
#ifdef EXAMPLE_PQ_QUERY
        cmocka_unit_test(pq_example_counts_a_syntax_error_as_ignored),
#endif
        cmocka_unit_test(pq_server_killed_fails_the_statement_in_flight), /* last */
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
