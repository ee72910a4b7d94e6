/* SPDX-License-Identifier: MIT */
/*
 * pg_server.h - a real PostgreSQL server for the libpq integration's tests:
 * a cluster made by initdb in its own temporary directory, run by an
 * unprivileged user (nobody when the test runs as root, PostgreSQL refuses
 * root), listening on a unix socket in that directory only (no TCP), and
 * stopped again on every path: test_pg_stop(), an atexit handler for a
 * failed test, and a parent-death signal when the test process is killed.
 * The server runs in its own process group, and stopping it kills the
 * group: a killed postmaster's backends do not outlive the test.
 */
#ifndef BREAKER_TEST_PG_SERVER_H
#define BREAKER_TEST_PG_SERVER_H

#include <sys/types.h>

struct test_pg {
    pid_t pid;          /* the postmaster; 0 when not running */
    pid_t pgid;         /* its process group (the postmaster's pid); 0 = none */
    char dir[256];      /* temporary directory: data/, the socket, log */
    char conninfo[512]; /* "host=DIR port=PORT dbname=postgres user=postgres" */
    char bindir[256];   /* where initdb and postgres are */
    uid_t uid;          /* who runs the server */
    gid_t gid;
};

/* Find the server's binaries, make the cluster and start it; waits until
 * it accepts connections, at most 60 s. @return 0, or -1 with a message on
 * stderr (no binaries: the caller may skip). */
int test_pg_start(struct test_pg *pg);

/* Start the server again on the same cluster and socket (after
 * test_pg_signal()). @return 0 or -1. */
int test_pg_restart(struct test_pg *pg);

/* Send `sig` to the postmaster and reap it (SIGQUIT: an immediate shutdown,
 * as pg_ctl stop -m immediate; SIGKILL). The directory stays. */
void test_pg_signal(struct test_pg *pg, int sig);

/* Stop the server (SIGINT, a fast shutdown; SIGKILL after 10 s) and remove
 * its directory. Safe to call twice. */
void test_pg_stop(struct test_pg *pg);

#endif
