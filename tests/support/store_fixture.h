/* SPDX-License-Identifier: MIT */
/*
 * store_fixture.h - what the store-file tests share: a fresh store path in a
 * temporary directory per test, opening and attaching that fail the test
 * with the library's message, and the pieces of a forked child (its own
 * store and handle, exiting with a code since a child cannot fail a cmocka
 * assertion for its parent).
 */
#ifndef BREAKER_TEST_STORE_FIXTURE_H
#define BREAKER_TEST_STORE_FIXTURE_H

#include "test_util.h"

#include <breaker/store.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static char path[128];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/breaker_store_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/store", dir);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    char other[160];
    snprintf(other, sizeof(other), "%s/link", dir);
    unlink(other);
    rmdir(dir);
    return 0;
}

static inline uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The defaults, without the watcher thread (tests of moves, which use it,
 * are test_store_moves.c): these tests fork children that open stores of
 * their own, and ThreadSanitizer refuses a thread started in the child of a
 * threaded process. */
static inline breaker_store_config quiet_store_config(void) {
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.flags |= BREAKER_STORE_NO_WATCHER;
    return c;
}

static inline breaker_store *open_store(void) {
    breaker_store *st = NULL;
    char msg[256];
    breaker_store_config c = quiet_store_config();
    int rc = breaker_store_open(path, &c, &st, msg, sizeof(msg));
    if (rc != BREAKER_OK) fail_msg("open: %s", msg);
    return st;
}

static inline breaker *attach(breaker_store *st, const char *name, const breaker_config *cfg) {
    breaker *b = NULL;
    char msg[256];
    int rc = breaker_store_attach(st, name, cfg, &b, msg, sizeof(msg));
    if (rc != BREAKER_OK) fail_msg("attach %s: %s", name, msg);
    return b;
}

/* In a forked child: this process's own store and handle on `name`, or
 * _exit (2: open failed, 3: attach failed). */
static inline breaker *child_attach(const char *name, const breaker_config *cfg,
                                    breaker_store **cs) {
    breaker *b = NULL;
    breaker_store_config c = quiet_store_config();
    if (breaker_store_open(path, &c, cs, NULL, 0) != BREAKER_OK) _exit(2);
    if (breaker_store_attach(*cs, name, cfg, &b, NULL, 0) != BREAKER_OK) _exit(3);
    return b;
}

static inline breaker_config consecutive_config(uint32_t threshold) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = threshold;
    cfg.open_jitter = 0;
    return cfg;
}

/* Attach `name` (one failure trips it) in `st`, trip it and detach: the
 * store's file works, directory and block. */
static inline void trips_in(breaker_store *st, const char *name) {
    breaker_config cfg = consecutive_config(1);
    breaker *b = attach(st, name, &cfg);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    breaker_destroy(b);
}

/* Wait for a child; its exit status, or 128 + the signal that killed it. */
static inline int reap(pid_t pid) {
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#endif /* BREAKER_TEST_STORE_FIXTURE_H */
