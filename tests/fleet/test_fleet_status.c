/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_status.c - the fleet as Redis holds it (breaker_redis_status(),
 * `breaker status --redis`; issue 37), against real redis-servers: two
 * hosts make names in every state the status shows (open after a trip,
 * half-open with a probe's lease out, forced open by an order with who and
 * why, a timed open, shadow mode on with its limits changed live, a state
 * corrupted by hand); the status lists each once, sorted, with its state,
 * generation, wait, leases, hosts and control record, and writes nothing
 * (Redis counts no change); one name, a name it does not hold and a bad
 * name; a read-only ACL user (the documented line); a Cluster's every
 * master. With the `breaker` binary ($BREAKER_TEST_TOOL): the table,
 * --json, --prometheus (promtool when the build found it) and the exit
 * statuses.
 */
#define _GNU_SOURCE /* mkstemp */

#include "fleet_control.h"
#include "fleet_util.h"
#include "redis_group.h"
#include "run_tool.h"

#include <breaker/redis.h>

#include "store/redis/hiredis/net.h" /* breaker__redis_key_slot(): slots.c is compiled in */

#include <hiredis/hiredis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS       ((uint64_t)1000000)
#define SEC      (1000 * MS)
#define MAX_ROWS 32

static void nap_ms(long ms) { test_redis_nap_ms(ms); }

/* A host on `r`, rounds when asked. */
static breaker_redis *host(const struct test_redis *r, const char *cluster_nodes) {
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    if (cluster_nodes != NULL)
        rc.cluster_nodes = cluster_nodes;
    else
        rc.port = r->port;
    return fleet_open_or_fail(&rc);
}

static breaker *attach(breaker_redis *f, const char *name, uint64_t open_ns) {
    breaker_config c;
    fleet_dep_cfg(&c, open_ns, 30 * SEC);
    breaker *b = NULL;
    char msg[256] = "";
    int rc = breaker_redis_attach(f, name, &c, &b, msg, sizeof msg);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) fail_msg("attach %s: %s", name, msg);
    return b;
}

/* What breaker_redis_status() reported. */
struct seen {
    int count;
    breaker_redis_name_status row[MAX_ROWS];
};

static int collect(void *ctx, const breaker_redis_name_status *st) {
    struct seen *s = ctx;
    if (s->count < MAX_ROWS) s->row[s->count++] = *st;
    return 0;
}

static const breaker_redis_name_status *row_of(const struct seen *s, const char *name) {
    for (int i = 0; i < s->count; i++)
        if (strcmp(s->row[i].name, name) == 0) return &s->row[i];
    fail_msg("no row for %s", name);
    return NULL;
}

/* Redis's count of changes since its last save (INFO persistence). */
static long long changes(const struct test_redis *r) {
    redisContext *c = redisConnect("127.0.0.1", r->port);
    assert_true(c != NULL && !c->err);
    redisReply *rep = redisCommand(c, "INFO persistence");
    long long n = -1;
    const char *at = rep != NULL && rep->type == REDIS_REPLY_STRING
                         ? strstr(rep->str, "rdb_changes_since_last_save:")
                         : NULL;
    if (at != NULL) n = strtoll(at + strlen("rdb_changes_since_last_save:"), NULL, 10);
    if (rep != NULL) freeReplyObject(rep);
    redisFree(c);
    return n;
}

/* The names of every state, by two hosts; `held` is left holding d's
 * probe lease (complete it after). */
static void make_fleet(breaker_redis *fa, breaker_redis *fb, breaker **held, breaker_permit *p) {
    /* a: tripped by A, followed by B. */
    breaker *a = attach(fa, "a.open", 60 * SEC), *ab = attach(fb, "a.open", 60 * SEC);
    assert_true(fleet_trip_followed(fa, a, fb, ab, 3));
    /* b: forced open by an order, with who and why. */
    (void)attach(fa, "b.forced", 60 * SEC);
    char msg[256] = "";
    assert_int_equal(fleet_force(fa, "b.forced", BREAKER_FORCED_OPEN, 0, "ops@test", "maintenance",
                                 msg, sizeof msg),
                     BREAKER_OK);
    /* c: shadow mode on, its limits changed live. */
    breaker *c = attach(fa, "c.shadow", 60 * SEC);
    (void)attach(fb, "c.shadow", 60 * SEC);
    (void)c;
    assert_int_equal(fleet_set_shadow(fa, "c.shadow", 1, "ops@test", "trial", msg, sizeof msg),
                     BREAKER_OK);
    breaker_redis_control_state lim;
    assert_int_equal(breaker_redis_control_get(fa, "c.shadow", &lim, msg, sizeof msg), BREAKER_OK);
    lim.limits.open_ns = lim.limits.open_max_ns = 90 * SEC;
    assert_int_equal(fleet_reconfigure(fa, "c.shadow", &lim.limits, lim.version, "ops@test",
                                       "longer", msg, sizeof msg),
                     BREAKER_OK);
    /* d: tripped, its wait over, A's probe holding a lease. */
    breaker *d = attach(fa, "d.probing", 100 * MS), *db = attach(fb, "d.probing", 100 * MS);
    assert_true(fleet_trip_followed(fa, d, fb, db, 3));
    nap_ms(250);
    assert_int_equal(breaker_acquire(d, p), BREAKER_OK);
    assert_true(breaker_permit_gate_token(p) != 0);
    *held = d;
    /* e: a timed open, ten minutes. */
    (void)attach(fa, "e.timed", 60 * SEC);
    assert_int_equal(fleet_open_for(fa, "e.timed", 600 * SEC, "ops@test", "", msg, sizeof msg),
                     BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    /* z: corrupted by hand. */
    (void)attach(fa, "z.corrupt", 60 * SEC);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(test_redis_int(&group_redis, "HSET breaker:v2:{z.corrupt}:s st 9"), 0);
}

static void the_status_shows_every_name_and_writes_nothing(void **state) {
    (void)state;
    breaker_redis *fa = host(&group_redis, NULL), *fb = host(&group_redis, NULL);
    breaker *held = NULL;
    breaker_permit p;
    make_fleet(fa, fb, &held, &p);
    breaker_redis *reader = host(&group_redis, NULL);
    long long before = changes(&group_redis);
    struct seen s = {0};
    char msg[256] = "";
    assert_int_equal(breaker_redis_status(reader, NULL, collect, &s, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(changes(&group_redis), before); /* nothing written */
    assert_int_equal(s.count, 6);
    for (int i = 1; i < s.count; i++) /* sorted, each once */
        assert_true(strcmp(s.row[i - 1].name, s.row[i].name) < 0);
    const breaker_redis_name_status *r = row_of(&s, "a.open");
    assert_string_equal(r->problem, "");
    assert_int_equal(r->state, BREAKER_OPEN);
    assert_int_equal(r->generation,
                     (uint64_t)test_redis_int(&group_redis, "HGET breaker:v2:{a.open}:s gen"));
    assert_true(r->wait_left_ns > 50 * SEC && r->wait_left_ns <= 60 * SEC);
    /* A's flush carried its failures; B's round was a read (a healthy
     * host's flush goes every full_flush_rounds rounds), which no host
     * record comes from. */
    assert_int_equal(r->hosts, 1);
    assert_true(r->last_flush_age_ns < 60 * SEC);
    assert_int_equal(r->control.version, 1); /* as made */
    assert_int_equal(r->control.forced, BREAKER_CLOSED);
    assert_int_equal(r->control.limits.failure_threshold, 3);
    r = row_of(&s, "b.forced");
    assert_int_equal(r->state, BREAKER_FORCED_OPEN);
    assert_int_equal(r->control.version, 2);
    assert_int_equal(r->control.forced, BREAKER_FORCED_OPEN);
    assert_string_equal(r->control.who, "ops@test");
    assert_string_equal(r->control.why, "maintenance");
    assert_int_equal(r->wait_left_ns, 0);
    r = row_of(&s, "c.shadow");
    assert_int_equal(r->state, BREAKER_CLOSED);
    assert_int_equal(r->control.shadow, 1);
    assert_int_equal(r->control.version, 3); /* shadow, then the limits */
    assert_int_equal(r->control.limits.open_ns, 90 * SEC);
    assert_string_equal(r->control.why, "longer");
    r = row_of(&s, "d.probing");
    assert_int_equal(r->state, BREAKER_HALF_OPEN);
    assert_int_equal(r->leases_out, 1);
    r = row_of(&s, "e.timed");
    assert_int_equal(r->state, BREAKER_OPEN);
    assert_true(r->wait_left_ns > 590 * SEC && r->wait_left_ns <= 600 * SEC);
    assert_int_equal(r->control.forced, BREAKER_OPEN);
    assert_true(r->control.left_ns > 590 * SEC && r->control.left_ns <= 600 * SEC);
    r = row_of(&s, "z.corrupt");
    printf("  z.corrupt: %s\n", r->problem);
    assert_true(r->problem[0] != '\0');
    /* One name; one Redis does not hold; a bad one. */
    s.count = 0;
    assert_int_equal(breaker_redis_status(reader, "d.probing", collect, &s, msg, sizeof msg),
                     BREAKER_OK);
    assert_int_equal(s.count, 1);
    assert_int_equal(s.row[0].leases_out, 1);
    assert_int_equal(breaker_redis_status(reader, "nobody", collect, &s, msg, sizeof msg),
                     BREAKER_EIO);
    assert_string_equal(msg, "nobody: no fleet state in Redis");
    assert_int_equal(breaker_redis_status(reader, "bad name", collect, &s, msg, sizeof msg),
                     BREAKER_EINVAL);
    (void)breaker_complete(held, &p, BREAKER_SUCCESS);
    breaker_redis_close(reader);
    breaker_redis_close(fa);
    breaker_redis_close(fb);
}

/* The documented read-only user of the status (docs/redis-production.md). */
static void a_read_only_user_reads_the_status(void **state) {
    (void)state;
    char line[1024] = "";
    char path[512];
    snprintf(path, sizeof path, "%s/docs/redis-production.md", BREAKER_SOURCE_DIR);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    while (fgets(line, sizeof line, fp) != NULL &&
           strncmp(line, "ACL SETUSER breaker-status ", 27) != 0) {
    }
    fclose(fp);
    line[strcspn(line, "\n")] = '\0';
    assert_true(strncmp(line, "ACL SETUSER breaker-status ", 27) == 0);
    printf("  %s\n", line);
    const char *argv[32];
    int argc = 0;
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w != NULL && argc < 32;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(w, ">PASSWORD") == 0 ? ">status-pass" : w;
    redisContext *c = redisConnect("127.0.0.1", group_redis.port);
    assert_true(c != NULL && !c->err);
    redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
    assert_true(rep != NULL && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    redisFree(c);
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.port = group_redis.port;
    rc.username = "breaker-status";
    rc.password = "status-pass";
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    struct seen s = {0};
    char msg[256] = "";
    int st = breaker_redis_status(f, NULL, collect, &s, msg, sizeof msg);
    if (st != BREAKER_OK) fail_msg("status as breaker-status: %s", msg);
    assert_true(s.count >= 1);
    breaker_redis_close(f);
}

static void a_cluster_s_every_master_is_read(void **state) {
    (void)state;
    struct test_cluster c;
    assert_int_equal(test_cluster_start(&c, 3, 0, 2000), 0);
    breaker_redis *f = host(NULL, c.seeds);
    char name[16];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "n%02d", i);
        (void)attach(f, name, 60 * SEC);
    }
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    int on[3] = {0};
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "n%02d", i);
        char key[64];
        snprintf(key, sizeof key, "breaker:v2:{%s}:s", name);
        int k = test_cluster_master_of(&c, breaker__redis_key_slot(key, strlen(key)));
        assert_true(k >= 0 && k < 3);
        on[k]++;
    }
    printf("  names per master: %d %d %d\n", on[0], on[1], on[2]);
    assert_true(on[0] > 0 && on[1] > 0 && on[2] > 0);
    breaker_redis *reader = host(NULL, c.seeds);
    struct seen s = {0};
    char msg[256] = "";
    assert_int_equal(breaker_redis_status(reader, NULL, collect, &s, msg, sizeof msg), BREAKER_OK);
    assert_int_equal(s.count, 12);
    breaker_redis_close(reader);
    breaker_redis_close(f);
    test_cluster_stop(&c);
}

/* ---- The command line ----------------------------------------------------------------- */

static void breaker_status_redis_prints_the_fleet(void **state) {
    (void)state;
    const char *tool = getenv("BREAKER_TEST_TOOL");
    if (tool == NULL) skip();
    char dir[] = "/tmp/breaker-status-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char err[64], out[64], addr[32];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", group_redis.port);
    /* The names the first test made are there still (one server), but for
     * the corrupt state its hosts' last rounds rebuilt: another, by hand. */
    assert_int_equal(test_redis_int(&group_redis, "HSET breaker:v2:{y.corrupt}:s st 9"), 1);
    const char *table[] = {"status", "--redis", addr, NULL};
    assert_int_equal(test_run_tool_out(tool, out, err, table), 0);
    assert_true(test_file_says(out, "Fleet store 127.0.0.1:"));
    assert_true(
        test_file_says(out, "b.forced: control version 2, forced_open by ops@test: maintenance"));
    assert_true(test_file_says(out, "c.shadow: control version 3 by ops@test: longer"));
    assert_true(test_file_says(out, "c.shadow: shadow mode"));
    assert_false(test_file_says(out, "a.open: control")); /* never changed */
    assert_true(test_file_says(out, "y.corrupt: unreadable: "));
    const char *json[] = {"status", "a.open", "--redis", addr, "--json", NULL};
    assert_int_equal(test_run_tool_out(tool, out, err, json), 0);
    assert_true(test_file_says(out, "\"name\": \"a.open\", \"state\": \"open\""));
    assert_true(test_file_says(out, "\"hosts\": 1"));
    const char *prom[] = {"status", "--redis", addr, "--prometheus", NULL};
    assert_int_equal(test_run_tool_out(tool, out, err, prom), 0);
    assert_true(test_file_says(out, "breaker_fleet_state{breaker=\"b.forced\"} 3"));
#ifdef BREAKER_PROMTOOL
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' check metrics < '%s'", BREAKER_PROMTOOL, out);
    assert_int_equal(system(cmd), 0);
#endif
    const char *nobody[] = {"status", "nobody", "--redis", addr, NULL};
    assert_int_equal(test_run_tool_out(tool, out, err, nobody), 66);
    const char *down[] = {"status", "--redis", "127.0.0.1:1", NULL};
    assert_int_equal(test_run_tool_out(tool, out, err, down), 69);
    const char *watch[] = {"status", "--redis", addr, "--watch", NULL};
    assert_int_equal(test_run_tool_out(tool, out, err, watch), 64);
    unlink(err);
    unlink(out);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_status_shows_every_name_and_writes_nothing),
        cmocka_unit_test(breaker_status_redis_prints_the_fleet),
        cmocka_unit_test(a_read_only_user_reads_the_status),
        cmocka_unit_test(a_cluster_s_every_master_is_read),
    };
    return cmocka_run_group_tests(tests, group_redis_start, group_redis_stop);
}
