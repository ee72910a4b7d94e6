/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_misconfigured.c - a configuration error is not an outage
 * (issue 37, docs/redis-production.md): against real redis-servers, each
 * way Redis refuses a fleet handle's configuration (a wrong password, none
 * where one is needed, one where none is, an ACL user without a command
 * the scripts call, scripting renamed away, a database out of range) makes
 * the handle BREAKER_REDIS_MISCONFIGURED with Redis's own words, in
 * breaker_redis_degraded(), on_degraded, the statistics and the Prometheus
 * export (breaker_fleet_degraded_cause{cause="configuration"}), while a
 * server that is killed is BREAKER_REDIS_DEGRADED; the cause changing while
 * degraded is told; the fix rejoins.
 *
 * With the `breaker` binary ($BREAKER_TEST_TOOL): `breaker exec --redis` with a refused password
 * exits 78 without running its COMMAND, runs it with --redis-run-anyway,
 * and runs it (with a note) when Redis is only down; `breaker open --redis`
 * and `breaker config --redis` exit 78 too.
 */
#define _GNU_SOURCE /* mkdtemp */

#include "fleet_util.h"
#include "redis_server.h"
#include "run_tool.h"

#include <breaker/redis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define MS ((uint64_t)1000000)

static const char *tool; /* the breaker binary, or NULL */

/* What on_degraded said, in order. */
#define MAX_CALLS 16
struct heard {
    int n;
    int cause[MAX_CALLS];
    char why[MAX_CALLS][256];
};

static void hear(void *ctx, int degraded, const char *why) {
    struct heard *h = ctx;
    if (h->n >= MAX_CALLS) return;
    h->cause[h->n] = degraded;
    snprintf(h->why[h->n], sizeof h->why[0], "%s", why);
    printf("  on_degraded(%d, \"%s\")\n", degraded, why);
    h->n++;
}

/* A handle on `r` (rounds only when the test asks), on_degraded to `h`,
 * with `password`, `user` and `db`. */
static breaker_redis *open_on(const struct test_redis *r, const char *user, const char *password,
                              int db, struct heard *h) {
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.port = r->port;
    rc.username = user;
    rc.password = password;
    rc.db = db;
    rc.on_degraded = hear;
    rc.degraded_ctx = h;
    breaker_redis *f = NULL;
    char msg[256] = "";
    if (breaker_redis_open(&rc, &f, msg, sizeof msg) != BREAKER_OK) fail_msg("open: %s", msg);
    breaker *b = NULL;
    int st = breaker_redis_attach(f, "misconf", NULL, &b, msg, sizeof msg);
    if (st != BREAKER_OK && st != BREAKER_CONFIG_DIFFERS) fail_msg("attach: %s", msg);
    return f;
}

/* The handle's Prometheus text has `line`. */
static void exported(breaker_redis *f, const char *line) {
    char buf[16384];
    assert_int_equal(breaker_redis_export_prometheus(f, buf, sizeof buf, NULL), BREAKER_OK);
    if (strstr(buf, line) == NULL) fail_msg("no \"%s\" in the export", line);
}

/* One round of a fresh handle: refused with `words` in the reason, as a
 * configuration error everywhere it shows. */
static void refused(const struct test_redis *r, const char *user, const char *password, int db,
                    const char *words) {
    struct heard h = {0};
    breaker_redis *f = open_on(r, user, password, db, &h);
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_MISCONFIGURED);
    assert_int_equal(h.n, 1);
    assert_int_equal(h.cause[0], BREAKER_REDIS_MISCONFIGURED);
    if (strstr(h.why[0], words) == NULL) fail_msg("\"%s\" does not say \"%s\"", h.why[0], words);
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.degraded, BREAKER_REDIS_MISCONFIGURED);
    assert_int_equal(st.degraded_entered, 1);
    exported(f, "breaker_fleet_degraded 1\n");
    exported(f, "breaker_fleet_degraded_cause{cause=\"configuration\"} 1\n");
    exported(f, "breaker_fleet_degraded_cause{cause=\"outage\"} 0\n");
    /* Every later round is refused the same way: no new announcement. */
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    assert_int_equal(h.n, 1);
    breaker_redis_close(f);
}

/* ---- The library ------------------------------------------------------------------ */

static void a_refused_password_is_a_configuration_error(void **state) {
    (void)state;
    struct test_redis r = {.password = "right"};
    assert_int_equal(test_redis_start(&r), 0);
    refused(&r, NULL, "wrong", 0, "AUTH: WRONGPASS");
    refused(&r, NULL, NULL, 0, "NOAUTH");
    assert_int_equal(test_redis_ok(&r, "ACL SETUSER someone on >theirs ~* +@all"), 0);
    refused(&r, "someone", "not-theirs", 0, "WRONGPASS");
    test_redis_stop(&r);
    /* A password sent to a server that has none. */
    struct test_redis open_server = {0};
    assert_int_equal(test_redis_start(&open_server), 0);
    refused(&open_server, NULL, "unneeded", 0, "without any password configured");
    /* A database the server does not have (16 by default). */
    refused(&open_server, NULL, NULL, 99, "DB index is out of range");
    test_redis_stop(&open_server);
}

static void a_missing_permission_or_command_is_a_configuration_error(void **state) {
    (void)state;
    /* EVALSHA renamed away, as some managed services do to scripting. */
    static const char *const no_evalsha[] = {"--rename-command", "EVALSHA", "", NULL};
    struct test_redis r = {.extra = no_evalsha};
    assert_int_equal(test_redis_start(&r), 0);
    refused(&r, NULL, NULL, 0, "unknown command");
    test_redis_stop(&r);
    /* A user that may run the scripts but not a command inside them
     * (Redis checks a script's inner calls against the caller's ACL). */
    struct test_redis s = {0};
    assert_int_equal(test_redis_start(&s), 0);
    assert_int_equal(test_redis_ok(&s, "ACL SETUSER scripted reset on >pw ~breaker:v2:* +@all "
                                       "-hset"),
                     0);
    refused(&s, "scripted", "pw", 0, "flush: ");
    /* A user without the keys. */
    assert_int_equal(test_redis_ok(&s, "ACL SETUSER keyless reset on >pw ~other:* +@all"), 0);
    refused(&s, "keyless", "pw", 0, "flush: ");
    test_redis_stop(&s);
}

/* An outage is DEGRADED; the cause changes while degraded and is told; a
 * fixed configuration rejoins. */
static void an_outage_is_not_and_the_cause_follows_the_server(void **state) {
    (void)state;
    struct test_redis r = {0};
    assert_int_equal(test_redis_start(&r), 0);
    assert_int_equal(test_redis_ok(&r, "ACL SETUSER ops reset on >pw ~breaker:v2:* +@all"), 0);
    struct heard h = {0};
    breaker_redis *f = open_on(&r, "ops", "pw", 0, &h);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_JOINED);
    exported(f, "breaker_fleet_degraded_cause{cause=\"configuration\"} 0\n");
    /* Killed: an outage. */
    test_redis_kill(&r);
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_DEGRADED);
    exported(f, "breaker_fleet_degraded_cause{cause=\"outage\"} 1\n");
    exported(f, "breaker_fleet_degraded_cause{cause=\"configuration\"} 0\n");
    /* Back, empty, so without the user: now the password is refused. */
    assert_int_equal(test_redis_restart(&r), 0);
    assert_int_equal(breaker_redis_flush(f), BREAKER_EIO);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_MISCONFIGURED);
    /* Someone makes the user again: the next round rejoins. */
    assert_int_equal(test_redis_ok(&r, "ACL SETUSER ops reset on >pw ~breaker:v2:* +@all"), 0);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(f), BREAKER_REDIS_JOINED);
    /* Told: joined, outage, configuration (the cause changed while
     * degraded), joined; one degraded episode. */
    assert_int_equal(h.n, 4);
    assert_int_equal(h.cause[0], BREAKER_REDIS_JOINED);
    assert_int_equal(h.cause[1], BREAKER_REDIS_DEGRADED);
    assert_int_equal(h.cause[2], BREAKER_REDIS_MISCONFIGURED);
    assert_non_null(strstr(h.why[2], "WRONGPASS"));
    assert_int_equal(h.cause[3], BREAKER_REDIS_JOINED);
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.degraded_entered, 1);
    breaker_redis_close(f);
    test_redis_stop(&r);
}

/* A build without TLS refuses it at open, saying so (a build with it:
 * test_fleet_tls). */
static void a_build_without_tls_says_so(void **state) {
    (void)state;
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.tls = 1;
    breaker_redis *f = NULL;
    char msg[256] = "";
    int st = breaker_redis_open(&rc, &f, msg, sizeof msg);
    if (BREAKER_TEST_REDIS_TLS) {
        assert_int_equal(st, BREAKER_OK);
        breaker_redis_close(f);
        skip();
    }
    assert_int_equal(st, BREAKER_EINVAL);
    assert_string_equal(msg, "tls: this build has no TLS (hiredis < 1.0 or hiredis_ssl not found)");
}

/* ---- The command line ----------------------------------------------------------------- */

static char workdir[64];

static int run(const char *err_path, const char *const *args) {
    return test_run_tool(tool, err_path, args);
}

/* The text of `path` has `words`. */
static void says(const char *path, const char *words) {
    if (!test_file_says(path, words)) fail_msg("%s does not say \"%s\"", path, words);
}

static void breaker_exec_exits_78_on_a_configuration_error(void **state) {
    (void)state;
    if (tool == NULL) skip();
    struct test_redis r = {.password = "right"};
    assert_int_equal(test_redis_start(&r), 0);
    snprintf(workdir, sizeof workdir, "/tmp/breaker-misconf-XXXXXX");
    assert_non_null(mkdtemp(workdir));
    char err[128], ran[128], pwfile[128], addr[64];
    snprintf(err, sizeof err, "%s/err", workdir);
    snprintf(ran, sizeof ran, "%s/ran", workdir);
    snprintf(pwfile, sizeof pwfile, "%s/password", workdir);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", r.port);
    FILE *fp = fopen(pwfile, "w");
    assert_non_null(fp);
    fputs("wrong\n", fp);
    fclose(fp);
    /* The COMMAND leaves a file when it runs. */
    const char *exec_args[] = {"exec", "misconf", "--redis", addr, "--redis-password-file",
                               pwfile, "--",      "touch",   ran,  NULL};
    assert_int_equal(run(err, exec_args), 78);
    says(err, "refuses this configuration");
    says(err, "WRONGPASS");
    assert_int_not_equal(access(ran, F_OK), 0); /* not run */
    const char *anyway[] = {
        "exec", "misconf", "--redis", addr, "--redis-password-file", pwfile, "--redis-run-anyway",
        "--",   "touch",   ran,       NULL};
    assert_int_equal(run(err, anyway), 0);
    says(err, "note:");
    assert_int_equal(access(ran, F_OK), 0);
    unlink(ran);
    /* The operator's controls: 78 too. */
    const char *open_args[] = {"open", "misconf", "--redis", addr, "--redis-password-file",
                               pwfile, NULL};
    assert_int_equal(run(err, open_args), 78);
    says(err, "WRONGPASS");
    const char *config_args[] = {"config", "misconf", "--redis", addr, "--redis-password-file",
                                 pwfile,   NULL};
    assert_int_equal(run(err, config_args), 78);
    /* --redis-run-anyway is exec's alone; the TLS and Sentinel options go
     * together as documented. */
    const char *misplaced[] = {"open", "misconf", "--redis", addr, "--redis-run-anyway", NULL};
    assert_int_equal(run(err, misplaced), 64);
    const char *ca_alone[] = {"exec", "misconf", "--redis", addr, "--redis-tls-ca",
                              pwfile, "--",      "true",    NULL};
    assert_int_equal(run(err, ca_alone), 64);
    says(err, "only with --redis-tls");
    const char *cert_alone[] = {
        "exec", "misconf", "--redis", addr, "--redis-tls", "--redis-tls-cert",
        pwfile, "--",      "true",    NULL};
    assert_int_equal(run(err, cert_alone), 64);
    const char *no_master[] = {"exec", "misconf", "--redis-sentinel", addr, "--", "true", NULL};
    assert_int_equal(run(err, no_master), 64);
    says(err, "--redis-master");
    const char *two[] = {"exec", "misconf",        "--redis", addr, "--redis-sentinel",
                         addr,   "--redis-master", "m",       "--", "true",
                         NULL};
    assert_int_equal(run(err, two), 64);
    if (!BREAKER_TEST_REDIS_TLS) { /* this build's breaker has no TLS: said, 78 */
        const char *tls[] = {"exec", "misconf", "--redis", addr, "--redis-tls", "--", "true", NULL};
        assert_int_equal(run(err, tls), 78);
        says(err, "this build has no TLS");
    }
    /* Redis down is an outage: the call runs, with a note. */
    test_redis_kill(&r);
    assert_int_equal(run(err, exec_args), 0);
    says(err, "is unreachable");
    assert_int_equal(access(ran, F_OK), 0);
    unlink(ran);
    unlink(err);
    unlink(pwfile);
    rmdir(workdir);
    test_redis_stop(&r);
}

int main(void) {
    tool = getenv("BREAKER_TEST_TOOL");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_refused_password_is_a_configuration_error),
        cmocka_unit_test(a_missing_permission_or_command_is_a_configuration_error),
        cmocka_unit_test(an_outage_is_not_and_the_cause_follows_the_server),
        cmocka_unit_test(a_build_without_tls_says_so),
        cmocka_unit_test(breaker_exec_exits_78_on_a_configuration_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
