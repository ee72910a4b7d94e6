/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_acl.c - the documented ACL grant is the one that works (issue
 * 37): the `ACL SETUSER` line of docs/redis-production.md is read from the
 * page, checked against BREAKER_REDIS_ACL_RULES (include/breaker/redis.h)
 * and the manual page, and run as it is on a real redis-server; two hosts
 * then trip the fleet, probe it closed, give it orders, turn shadow mode on
 * and off and change its limits as that user alone, every round answered
 * and Redis's ACL LOG empty (nothing was refused). The grant is the least
 * that works: every command it grants was called (INFO commandstats counts
 * a script's inner calls). The same with a database other than 0 (+select)
 * and on a Redis Cluster (BREAKER_REDIS_ACL_CLUSTER_RULES on every node).
 */
#define _POSIX_C_SOURCE 200809L

#include "fleet_util.h"
#include "fleet_control.h"
#include "redis_server.h"

#include <breaker/redis.h>

#include <hiredis/hiredis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MS       ((uint64_t)1000000)
#define PASSWORD "acl-test-password"
/* How the documented line begins: the rules follow. */
#define LINE_HEAD "ACL SETUSER breaker reset on >PASSWORD "

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- The documented line ------------------------------------------------------------ */

/* The first line of `path` (under the source tree) that begins with
 * `head`, after blanks, without its newline; every further line of `path`
 * that begins so must be the same. */
static void documented_line(const char *path, const char *head, char *out, size_t cap) {
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", BREAKER_SOURCE_DIR, path);
    FILE *fp = fopen(full, "r");
    if (fp == NULL) fail_msg("%s: cannot open", full);
    char line[2048];
    out[0] = '\0';
    while (fgets(line, sizeof line, fp) != NULL) {
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (strncmp(s, head, strlen(head)) != 0) continue;
        s[strcspn(s, "\r\n")] = '\0';
        if (out[0] != '\0' && strcmp(out, s) != 0)
            fail_msg("%s: two different grants:\n  %s\n  %s", path, out, s);
        snprintf(out, cap, "%s", s);
    }
    fclose(fp);
    if (out[0] == '\0') fail_msg("%s: no line beginning \"%s\"", path, head);
}

static void the_documented_grant_is_the_header_s(void **state) {
    (void)state;
    const char *want = LINE_HEAD BREAKER_REDIS_ACL_RULES;
    char doc[2048];
    documented_line("docs/redis-production.md", LINE_HEAD, doc, sizeof doc);
    printf("docs/redis-production.md: %s\n", doc);
    assert_string_equal(doc, want);
    /* The manual's, in scdoc: the same words, its "*" escaped. */
    char man[2048], plain[2048];
    documented_line("man/breaker_redis.3.scd", "ACL SETUSER", man, sizeof man);
    size_t n = 0;
    for (const char *s = man; *s != '\0' && n + 1 < sizeof plain; s++)
        if (*s != '\\') plain[n++] = *s;
    plain[n] = '\0';
    assert_string_equal(plain, want);
}

/* ---- Running it ------------------------------------------------------------------------- */

/* Run `line` (words split at blanks; ">PASSWORD" replaced with the test's
 * password) on port `port`'s admin connection, then `extra` (NULL: none)
 * appended as more rules. */
static void run_grant(const struct test_redis *r, const char *line, const char *extra) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s", line, extra != NULL ? " " : "",
             extra != NULL ? extra : "");
    const char *argv[128];
    int argc = 0;
    for (char *save = NULL, *w = strtok_r(text, " ", &save); w != NULL && argc < 128;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(w, ">PASSWORD") == 0 ? ">" PASSWORD : w;
    struct timeval tv = {.tv_sec = 2, .tv_usec = 0};
    redisContext *c = r->tls_cert != NULL ? redisConnectUnixWithTimeout(r->sock, tv)
                                          : redisConnectWithTimeout("127.0.0.1", r->port, tv);
    assert_true(c != NULL && !c->err);
    redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
    assert_non_null(rep);
    if (rep->type != REDIS_REPLY_STATUS) fail_msg("ACL SETUSER: %s", rep->str ? rep->str : "?");
    freeReplyObject(rep);
    redisFree(c);
}

/* ACL LOG of `r` is empty: nothing was refused. */
static void nothing_refused(const struct test_redis *r) {
    redisContext *c = redisConnectUnix(r->sock);
    assert_true(c != NULL && !c->err);
    redisReply *rep = redisCommand(c, "ACL LOG");
    assert_true(rep != NULL && rep->type == REDIS_REPLY_ARRAY);
    if (rep->elements > 0) {
        redisReply *e = rep->element[0];
        for (size_t i = 0; i + 1 < e->elements; i += 2)
            printf("ACL LOG: %s = %s\n", e->element[i]->str,
                   e->element[i + 1]->type == REDIS_REPLY_STRING ? e->element[i + 1]->str : "");
    }
    assert_int_equal(rep->elements, 0);
    freeReplyObject(rep);
    redisFree(c);
}

/* A host: a handle as user "breaker", rounds only when asked. */
static breaker_redis *host(const struct test_redis *r, const char *cluster_nodes, int db) {
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    if (cluster_nodes != NULL)
        rc.cluster_nodes = cluster_nodes;
    else
        rc.port = r->port;
    rc.db = db;
    rc.username = "breaker";
    rc.password = PASSWORD;
    return fleet_open_or_fail(&rc);
}

static void flushed(breaker_redis *f) {
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_JOINED);
}

static breaker *attach(breaker_redis *f, const char *name) {
    breaker_config c;
    fleet_dep_cfg(&c, 100 * MS, 30000 * MS);
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, name, &c, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach %s: %s", name, msg);
    return b;
}

static void call(breaker *b, enum breaker_outcome outcome) {
    breaker_permit p;
    assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
    (void)breaker_complete(b, &p, outcome);
}

/* Everything the fleet does, as two hosts of user "breaker" on `name`:
 * a trip the other host follows, a leased probe that closes the fleet, a
 * timed open order and a reset, forced open and closed, shadow mode on and
 * off, the limits read and changed. Every call succeeds, every round is
 * answered. */
static void exercise(const struct test_redis *r, const char *cluster_nodes, int db,
                     const char *name) {
    breaker_redis *fa = host(r, cluster_nodes, db), *fb = host(r, cluster_nodes, db);
    breaker *a = attach(fa, name), *b = attach(fb, name);
    flushed(fa);
    flushed(fb);
    /* The trip: A's three failures; B follows. The probe: A's, leased,
     * succeeds; the fleet closes, and B with it. */
    assert_true(fleet_trip_followed(fa, a, fb, b, 3));
    nap_ms(250); /* every open wait is over */
    assert_true(fleet_probe_closes(fa, a, fb, b));
    /* Orders: a timed open, a reset, forced open, forced closed, a reset;
     * B applies each at its next round. */
    static const struct {
        int kind; /* 0 reset, 1 open for a minute, else the forced state */
        enum breaker_state want;
    } orders[] = {{1, BREAKER_OPEN},
                  {0, BREAKER_CLOSED},
                  {BREAKER_FORCED_OPEN, BREAKER_FORCED_OPEN},
                  {BREAKER_FORCED_CLOSED, BREAKER_FORCED_CLOSED},
                  {0, BREAKER_CLOSED}};
    char msg[256] = "";
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
        int k = orders[i].kind;
        int st = k == 0   ? fleet_reset(fa, name, "acl-test", "", msg, sizeof msg)
                 : k == 1 ? fleet_open_for(fa, name, 60000 * MS, "acl-test", "", msg, sizeof msg)
                          : fleet_force(fa, name, (enum breaker_state)k, 0, "acl-test", "", msg,
                                        sizeof msg);
        if (st != BREAKER_OK) fail_msg("order %zu: %s", i, msg);
        flushed(fb);
        assert_int_equal(breaker_get_state(b), orders[i].want);
    }
    /* Shadow mode on and off. */
    assert_int_equal(fleet_set_shadow(fa, name, 1, "acl-test", "on", msg, sizeof msg), BREAKER_OK);
    flushed(fb);
    assert_int_equal(breaker_shadow(b), 1);
    assert_int_equal(fleet_set_shadow(fa, name, 0, "acl-test", "off", msg, sizeof msg), BREAKER_OK);
    flushed(fb);
    assert_int_equal(breaker_shadow(b), 0);
    /* The limits: read, changed, read back, reached by B. */
    breaker_redis_control_state lim;
    assert_int_equal(breaker_redis_control_get(fa, name, &lim, msg, sizeof msg), BREAKER_OK);
    lim.limits.open_ns = lim.limits.open_max_ns = 200 * MS;
    assert_int_equal(fleet_reconfigure(fa, name, &lim.limits, lim.version, "acl-test", "longer",
                                       msg, sizeof msg),
                     BREAKER_OK);
    flushed(fb);
    breaker_config now;
    breaker_get_config(b, &now);
    assert_int_equal(now.open_ns, 200 * MS);
    breaker_redis_close(fa);
    breaker_redis_close(fb);
}

/* A time window's trip (the window is read whole: HGETALL), on `name`. */
static void window_trip(const struct test_redis *r, const char *name) {
    breaker_redis *f = host(r, NULL, 0);
    breaker_config c;
    breaker_config_init(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    c.window_ns = 60000 * MS;
    c.min_calls = 4;
    c.failure_rate = 0.5;
    breaker *b = NULL;
    char msg[256] = "";
    assert_int_equal(breaker_redis_attach(f, name, &c, &b, msg, sizeof msg), BREAKER_OK);
    for (int i = 0; i < 4; i++)
        call(b, BREAKER_FAILURE);
    flushed(f);
    assert_int_equal(test_redis_int(r, "HGET breaker:v2:{%s}:s st", name), 1); /* open */
    breaker_redis_close(f);
}

/* Every command the grant names was called on `r` (cmdstat_*: a script's
 * inner calls included), so none of them could be left out. */
static void every_granted_command_was_called(const struct test_redis *r) {
    char rules[] = BREAKER_REDIS_ACL_RULES;
    int unused = 0;
    for (char *save = NULL, *w = strtok_r(rules, " ", &save); w != NULL;
         w = strtok_r(NULL, " ", &save)) {
        if (w[0] != '+') continue;
        const char *cmd = w + 1; /* script|load is cmdstat_script|load */
        long long calls = test_redis_cmdstat(r, cmd);
        printf("  %-16s %lld calls%s\n", cmd, calls, calls > 0 ? "" : ": never called");
        unused += calls <= 0;
    }
    assert_int_equal(unused, 0);
}

static void the_documented_user_runs_the_whole_fleet(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    char line[2048];
    documented_line("docs/redis-production.md", LINE_HEAD, line, sizeof line);
    run_grant(&r, line, NULL);
    assert_int_equal(test_redis_ok(&r, "CONFIG RESETSTAT"), 0);
    exercise(&r, NULL, 0, "acl.one");
    window_trip(&r, "acl.window");
    nothing_refused(&r);
    every_granted_command_was_called(&r);
    /* A database other than 0: the same and +select. */
    run_grant(&r, line, "+select");
    exercise(&r, NULL, 3, "acl.db");
    nothing_refused(&r);
    test_redis_stop(&r);
}

static void the_documented_user_runs_a_cluster_fleet(void **state) {
    (void)state;
    struct test_cluster c;
    assert_int_equal(test_cluster_start(&c, 3, 0, 2000), 0);
    char line[2048];
    documented_line("docs/redis-production.md", LINE_HEAD, line, sizeof line);
    for (int k = 0; k < c.count; k++)
        run_grant(&c.node[k], line, BREAKER_REDIS_ACL_CLUSTER_RULES);
    /* Names on every master (their slots differ). */
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof name, "acl.cluster.%d", i);
        exercise(&c.node[0], c.seeds, 0, name);
    }
    for (int k = 0; k < c.count; k++)
        nothing_refused(&c.node[k]);
    test_cluster_stop(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_documented_grant_is_the_header_s),
        cmocka_unit_test(the_documented_user_runs_the_whole_fleet),
        cmocka_unit_test(the_documented_user_runs_a_cluster_fleet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
