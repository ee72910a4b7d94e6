/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_tls.c - the fleet store over TLS (issue 37,
 * docs/redis-production.md "TLS"), against real redis-servers that speak
 * TLS only on TCP (--tls-port, --port 0), with certificates the test makes
 * (tests/support/tls_certs.sh, the openssl command): two hosts join, trip
 * the fleet and probe it closed through TLS; a CA that did not sign the
 * server's certificate, an expired certificate and one for another name
 * each give a configuration error that names the cause (and
 * tls_server_name fixes the last); a server that wants a client
 * certificate refuses a handle without one and takes one with it; TLS to a
 * plain server and plain TCP to a TLS-only one are said as such; bad files
 * are refused at open, naming the field.
 *
 * Linked with breaker_redis_tls: the fleet store over a hiredis with
 * hiredis_ssl (the system's when it has it, else one that
 * tests/support/hiredis_tls.sh built from Debian's next release's source).
 *
 *   test_fleet_tls CERTS_SCRIPT
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define MS ((uint64_t)1000000)

static const char *certs_script;
static char certs[64]; /* the certificates' directory */
static char path_buf[16][128];
static int path_used;

/* certs/`file`. */
static const char *cert(const char *file) {
    char *p = path_buf[path_used++ % 16];
    snprintf(p, sizeof path_buf[0], "%s/%s", certs, file);
    return p;
}

static void nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A TLS-only server and its files' paths. */
struct tls_server {
    struct test_redis r;
    char crt[128], key[128], ca[128];
};

/* Start `s` with the certificate `name` (server, expired, elsewhere),
 * asking clients for theirs when `auth_clients`. */
static struct test_redis *start_tls(struct tls_server *s, const char *name,
                                    const char *auth_clients) {
    memset(s, 0, sizeof *s);
    snprintf(s->crt, sizeof s->crt, "%s/%s.crt", certs, name);
    snprintf(s->key, sizeof s->key, "%s/%s.key", certs, name);
    snprintf(s->ca, sizeof s->ca, "%s/ca.crt", certs);
    s->r.tls_cert = s->crt;
    s->r.tls_key = s->key;
    s->r.tls_ca = s->ca;
    s->r.tls_auth_clients = auth_clients;
    assert_int_equal(test_redis_start(&s->r), 0);
    return &s->r;
}

/* A TLS handle's configuration for `r`, trusting the test's CA. */
static void tls_cfg(breaker_redis_config *rc, const struct test_redis *r) {
    fleet_patient_cfg(rc);
    rc->port = r->port;
    rc->tls = 1;
    rc->tls_ca_file = cert("ca.crt");
}

static breaker_redis *open_ok(const breaker_redis_config *rc) {
    breaker_redis *f = NULL;
    char msg[256] = "";
    if (breaker_redis_open(rc, &f, msg, sizeof msg) != BREAKER_OK) fail_msg("open: %s", msg);
    return f;
}

/* One round of a handle of `rc`: refused as a configuration error whose
 * reason has `words` and `more`. */
static void misconfigured(breaker_redis_config *rc, const char *words, const char *more) {
    assert_true(fleet_round_fails(rc, BREAKER_REDIS_MISCONFIGURED, words));
    assert_true(fleet_round_fails(rc, BREAKER_REDIS_MISCONFIGURED, more));
}

/* ---- Joining through TLS ------------------------------------------------------------- */

static void two_hosts_trip_and_probe_through_tls(void **state) {
    (void)state;
    struct tls_server s;
    struct test_redis *r = start_tls(&s, "server", NULL);
    breaker_redis_config rc;
    tls_cfg(&rc, r);
    breaker_redis *fa = open_ok(&rc), *fb = open_ok(&rc);
    breaker_config c;
    fleet_dep_cfg(&c, 100 * MS, 30000 * MS);
    breaker *a, *b;
    assert_int_equal(breaker_redis_attach(fa, "tls.dep", &c, &a, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_attach(fb, "tls.dep", &c, &b, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fa), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(fb), BREAKER_OK);
    assert_int_equal(breaker_redis_degraded(fa), BREAKER_REDIS_JOINED);
    /* A's three failures trip the fleet; B follows. */
    assert_true(fleet_trip_followed(fa, a, fb, b, 3));
    assert_int_equal(test_redis_int(r, "HGET breaker:v2:{tls.dep}:s st"), 1);
    /* B's probe takes its lease on the probe connection (TLS too) and
     * closes the fleet; A follows. */
    nap_ms(250);
    assert_true(fleet_probe_closes(fb, b, fa, a));
    breaker_redis_stats st;
    breaker_redis_stats_get(fb, &st);
    assert_int_equal(st.leases_granted, 1);
    breaker_redis_close(fa);
    breaker_redis_close(fb);
    /* Plain TCP to the TLS-only port: the reason says what may be wrong. */
    breaker_redis_config plain;
    fleet_patient_cfg(&plain);
    plain.port = r->port;
    assert_true(fleet_round_fails(&plain, BREAKER_REDIS_DEGRADED, "speaks only TLS"));
    test_redis_stop(r);
}

/* ---- The three certificate mistakes ---------------------------------------------------- */

static void a_wrong_ca_an_expired_certificate_and_another_name_are_refused(void **state) {
    (void)state;
    struct tls_server s[3];
    struct test_redis *good = start_tls(&s[0], "server", NULL);
    struct test_redis *expired = start_tls(&s[1], "expired", NULL);
    struct test_redis *elsewhere = start_tls(&s[2], "elsewhere", NULL);
    breaker_redis_config rc;
    /* A CA that signed none of the server's certificates. */
    tls_cfg(&rc, good);
    rc.tls_ca_file = cert("other-ca.crt");
    misconfigured(&rc, "TLS: the server's certificate is refused",
                  "no CA of tls_ca_file or tls_ca_dir signed it");
    /* ... unless verification is off (a test bench). */
    rc.tls_no_verify = 1;
    breaker_redis *f = open_ok(&rc);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_close(f);
    /* Expired. */
    tls_cfg(&rc, expired);
    misconfigured(&rc, "TLS: the server's certificate is refused", "certificate has expired");
    /* For another name than the address connected to. */
    tls_cfg(&rc, elsewhere);
    misconfigured(&rc, "TLS: the server's certificate is refused", "mismatch");
    /* ... which tls_server_name names. */
    rc.tls_server_name = "redis.elsewhere.example";
    f = open_ok(&rc);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_close(f);
    /* A name the good certificate does not carry. */
    tls_cfg(&rc, good);
    rc.tls_server_name = "redis.elsewhere.example";
    misconfigured(&rc, "TLS: the server's certificate is refused", "mismatch");
    /* TLS to a Redis that speaks none: it waits for the end of what it
     * takes for a command, silent as a stalled server (an outage), and
     * the reason says both. */
    struct test_redis plain = {0};
    assert_int_equal(test_redis_start(&plain), 0);
    tls_cfg(&rc, &plain);
    rc.io_timeout_ns = 300 * MS;
    assert_true(fleet_round_fails(&rc, BREAKER_REDIS_DEGRADED, "does not speak TLS"));
    test_redis_stop(&plain);
    for (int i = 0; i < 3; i++)
        test_redis_stop(&s[i].r);
}

static void a_server_that_wants_a_client_certificate_gets_one(void **state) {
    (void)state;
    struct tls_server s;
    struct test_redis *r = start_tls(&s, "server", "yes");
    breaker_redis_config rc;
    tls_cfg(&rc, r);
    misconfigured(&rc, "TLS: ", "client certificate");
    rc.tls_cert_file = cert("client.crt");
    rc.tls_key_file = cert("client.key");
    breaker_redis *f = open_ok(&rc);
    breaker *b = NULL;
    assert_int_equal(breaker_redis_attach(f, "tls.mutual", NULL, &b, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    assert_int_equal(test_redis_int(r, "HGET breaker:v2:{tls.mutual}:s st"), 0);
    breaker_redis_close(f);
    test_redis_stop(r);
}

/* The good server certificate's files, in `s`, as a test_redis carries
 * them (for a Cluster's or Sentinels' every node). */
static struct test_redis tls_files(struct tls_server *s) {
    snprintf(s->crt, sizeof s->crt, "%s/server.crt", certs);
    snprintf(s->key, sizeof s->key, "%s/server.key", certs);
    snprintf(s->ca, sizeof s->ca, "%s/ca.crt", certs);
    return (struct test_redis){.tls_cert = s->crt, .tls_key = s->key, .tls_ca = s->ca};
}

/* ---- A Cluster over TLS ----------------------------------------------------------------- */

/* Three masters speaking TLS only (their bus too): the seeds, the nodes
 * CLUSTER SLOTS names (by IP address, which the certificate carries) and
 * every master's names, through TLS. */
static void a_cluster_over_tls(void **state) {
    (void)state;
    struct tls_server files;
    struct test_redis tls = tls_files(&files);
    struct test_cluster c;
    assert_int_equal(test_cluster_start_tls(&c, 3, 0, 2000, &tls), 0);
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.cluster_nodes = c.seeds;
    rc.tls = 1;
    rc.tls_ca_file = cert("ca.crt");
    breaker_redis *f = open_ok(&rc);
    char name[16];
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof name, "tls.c%d", i);
        breaker *b = NULL;
        assert_int_equal(breaker_redis_attach(f, name, NULL, &b, NULL, 0), BREAKER_OK);
    }
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    int masters_used[3] = {0};
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof name, "tls.c%d", i);
        for (int k = 0; k < 3; k++)
            if (test_redis_int(&c.node[k], "EXISTS breaker:v2:{%s}:s", name) == 1)
                masters_used[k]++;
    }
    printf("  names per master: %d %d %d\n", masters_used[0], masters_used[1], masters_used[2]);
    assert_int_equal(masters_used[0] + masters_used[1] + masters_used[2], 9);
    assert_true(masters_used[0] > 0 && masters_used[1] > 0 && masters_used[2] > 0);
    breaker_redis_close(f);
    test_cluster_stop(&c);
}

/* ---- Sentinel over TLS ------------------------------------------------------------------ */

/* A master, a replica and three Sentinels, all TLS only: the handle asks
 * the Sentinels over TLS, joins the master, and follows a failover. */
static void sentinels_over_tls(void **state) {
    (void)state;
    struct tls_server files;
    struct test_redis tls = tls_files(&files);
    static struct test_sentinels set;
    assert_int_equal(test_sentinels_start_tls(&set, 1, 3, 1000, &tls), 0);
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.sentinel_nodes = set.addrs;
    rc.sentinel_master = set.master_name;
    rc.tls = 1;
    rc.tls_ca_file = cert("ca.crt");
    breaker_redis *f = open_ok(&rc);
    breaker *b = NULL;
    assert_int_equal(breaker_redis_attach(f, "tls.sentinel", NULL, &b, NULL, 0), BREAKER_OK);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    int old = test_sentinels_master(&set);
    assert_true(old >= 0);
    assert_int_equal(test_redis_int(&set.node[old], "EXISTS breaker:v2:{tls.sentinel}:s"), 1);
    test_redis_kill(&set.node[old]);
    int m = test_sentinels_wait_failover(&set, old, 60000);
    assert_true(m >= 0);
    /* The handle's rounds find the new master (bounded: 30 s). */
    breaker_redis_stats st;
    for (int i = 0; i < 300; i++) {
        if (breaker_redis_flush(f) == BREAKER_OK) break;
        nap_ms(100);
    }
    breaker_redis_stats_get(f, &st);
    assert_int_equal(st.degraded, BREAKER_REDIS_JOINED);
    assert_true(st.master_switches >= 1);
    printf("  over TLS: master %d killed, %d promoted, the handle on it\n", old, m);
    breaker_redis_close(f);
    test_sentinels_stop(&set);
}

/* ---- The command line ------------------------------------------------------------------- */

/* `breaker exec --redis-tls`: joins with the test's CA, and is refused
 * (78, COMMAND not run) with another. */
static void breaker_exec_speaks_tls(void **state) {
    (void)state;
    const char *tool = getenv("BREAKER_TEST_TOOL");
    if (tool == NULL) skip();
    struct tls_server s;
    struct test_redis *r = start_tls(&s, "server", NULL);
    char addr[32], err[128], ran[128];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", r->port);
    snprintf(err, sizeof err, "%s/err", certs);
    snprintf(ran, sizeof ran, "%s/ran", certs);
    const char *ok[] = {"exec",         "tls.cli", "--redis", addr, "--redis-tls", "--redis-tls-ca",
                        cert("ca.crt"), "--",      "touch",   ran,  NULL};
    assert_int_equal(test_run_tool(tool, err, ok), 0);
    assert_int_equal(access(ran, F_OK), 0);
    assert_int_equal(test_redis_int(r, "HGET breaker:v2:{tls.cli}:s st"), 0);
    unlink(ran);
    const char *other[] = {
        "exec", "tls.cli", "--redis", addr, "--redis-tls", "--redis-tls-ca", cert("other-ca.crt"),
        "--",   "touch",   ran,       NULL};
    assert_int_equal(test_run_tool(tool, err, other), 78);
    assert_true(test_file_says(err, "certificate is refused"));
    assert_int_not_equal(access(ran, F_OK), 0);
    unlink(err);
    test_redis_stop(r);
}

/* ---- Refused at open -------------------------------------------------------------------- */

static void expect_einval(const breaker_redis_config *rc, const char *words) {
    breaker_redis *f = NULL;
    char msg[256] = "";
    assert_int_equal(breaker_redis_open(rc, &f, msg, sizeof msg), BREAKER_EINVAL);
    printf("  %s\n", msg);
    if (strstr(msg, words) == NULL) fail_msg("\"%s\" does not say \"%s\"", msg, words);
}

static void bad_tls_settings_are_refused_at_open(void **state) {
    (void)state;
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.tls_ca_file = cert("ca.crt");
    expect_einval(&rc, "tls_ca_file: set, but tls is 0");
    tls_cfg(&rc, &(struct test_redis){.port = 1});
    rc.tls_ca_file = "/nonexistent/ca.crt";
    expect_einval(&rc, "tls_ca_file: /nonexistent/ca.crt: No such file or directory");
    rc.tls_ca_file = cert("client.key"); /* not a certificate */
    expect_einval(&rc, "tls_ca_file: ");
    rc.tls_ca_file = NULL;
    rc.tls_ca_dir = "/nonexistent";
    expect_einval(&rc, "tls_ca_dir: /nonexistent: No such file or directory");
    rc.tls_ca_dir = NULL;
    rc.tls_cert_file = cert("client.crt");
    expect_einval(&rc, "tls_cert_file: set without tls_key_file");
    rc.tls_key_file = cert("server.key");
    expect_einval(&rc, "tls_key_file: ");
    rc.tls_cert_file = rc.tls_key_file = NULL;
    rc.unix_path = "/tmp/redis.sock";
    expect_einval(&rc, "TLS on TCP only");
}

/* ---- Set-up ----------------------------------------------------------------------------- */

static int setup(void **state) {
    (void)state;
    snprintf(certs, sizeof certs, "/tmp/breaker-tls-XXXXXX");
    if (mkdtemp(certs) == NULL) return -1;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh '%s' '%s'", certs_script, certs);
    if (system(cmd) != 0) {
        fprintf(stderr, "%s failed\n", cmd);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", certs);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_fleet_tls CERTS_SCRIPT\n");
        return 2;
    }
    certs_script = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_hosts_trip_and_probe_through_tls),
        cmocka_unit_test(a_wrong_ca_an_expired_certificate_and_another_name_are_refused),
        cmocka_unit_test(a_server_that_wants_a_client_certificate_gets_one),
        cmocka_unit_test(bad_tls_settings_are_refused_at_open),
        cmocka_unit_test(breaker_exec_speaks_tls),
        cmocka_unit_test(a_cluster_over_tls),
        cmocka_unit_test(sentinels_over_tls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
