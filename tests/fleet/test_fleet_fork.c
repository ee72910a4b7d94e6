/* SPDX-License-Identifier: MIT */
/*
 * test_fleet_fork.c - a fleet handle across fork() (issue 37; redis.h,
 * "Fork"), against a real redis-server. The handle stays the parent's:
 *  - children forked while its flusher runs (every 5 ms, so that a fork
 *    often falls inside a round) open handles of their own, send their
 *    evidence and exit; the parent's handle goes on answering every round,
 *    its connections untouched by the children's, and the fleet counted
 *    every child's calls;
 *  - a child that execs a program leaves it none of the handle's
 *    descriptors (its connections and its wake pipe are close-on-exec).
 */
#define _GNU_SOURCE /* execl */

#include "fleet_util.h"
#include "redis_group.h"

#include <breaker/redis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MS       ((uint64_t)1000000)
#define CHILDREN 20
#define CALLS    3 /* each child's failures: fewer than a trip */

/* The window's failures of `name`, all buckets (its f<bucket> fields,
 * summed by a script). */
static long long window_failures(const char *name) {
    static const char sum[] = "local n = 0 local h = redis.call('HGETALL', KEYS[1]) "
                              "for i = 1, #h, 2 do if string.sub(h[i], 1, 1) == 'f' then "
                              "n = n + tonumber(h[i + 1]) end end return n";
    return test_redis_int(&group_redis, "EVAL %s 1 breaker:v2:{%s}:w", sum, name);
}

/* The targets of this process's descriptors ("socket:[123]", a path),
 * each into out[i]. @return how many. */
static int fd_targets(char out[][64], int max) {
    int n = 0;
    for (int fd = 0; fd < 1024 && n < max; fd++) {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, out[n], 63);
        if (len <= 0) continue;
        out[n++][len] = '\0';
    }
    return n;
}

/* In a child: a handle of its own, CALLS failures sent, closed. @return
 * the child's exit status: 0 when its round was answered. */
static int child_sends(void) {
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.port = group_redis.port;
    breaker_redis *f = NULL;
    if (breaker_redis_open(&rc, &f, NULL, 0) != BREAKER_OK) return 2;
    breaker_config c;
    breaker_config_init(&c);
    c.trip = BREAKER_TRIP_TIME_WINDOW;
    c.window_ns = 3600 * 1000 * MS;
    c.min_calls = 1000;
    breaker *b = NULL;
    if (breaker_redis_attach(f, "fork.child", &c, &b, NULL, 0) != BREAKER_OK) return 3;
    for (int i = 0; i < CALLS; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) != BREAKER_OK) return 4;
        (void)breaker_complete(b, &p, BREAKER_FAILURE);
    }
    int rc_flush = breaker_redis_flush(f);
    breaker_redis_close(f);
    return rc_flush == BREAKER_OK ? 0 : 5;
}

static void children_use_handles_of_their_own(void **state) {
    (void)state;
    /* The parent's handle, its flusher busy. */
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.port = group_redis.port;
    rc.flush_interval_ns = 5 * MS;
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    (void)fleet_attach_or_fail(f, "fork.parent", NULL);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_stats before;
    breaker_redis_stats_get(f, &before);
    for (int i = 0; i < CHILDREN; i++) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) _exit(child_sends()); /* never touches the parent's handle */
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        test_redis_nap_ms(3);
    }
    /* The parent's rounds were all answered, before and after. */
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK);
    breaker_redis_stats after;
    breaker_redis_stats_get(f, &after);
    printf("  parent: %llu rounds while %d children came and went, %llu failed\n",
           (unsigned long long)(after.flushes - before.flushes), CHILDREN,
           (unsigned long long)(after.flush_errors - before.flush_errors));
    assert_true(after.flushes > before.flushes);
    assert_int_equal(after.flush_errors, before.flush_errors);
    assert_int_equal(after.degraded, BREAKER_REDIS_JOINED);
    assert_int_equal(window_failures("fork.child"), CHILDREN * CALLS);
    breaker_redis_close(f);
}

static void an_exec_keeps_none_of_the_handle_s_descriptors(void **state) {
    (void)state;
    static char before[64][64], after[64][64];
    int nb = fd_targets(before, 64);
    breaker_redis_config rc;
    fleet_patient_cfg(&rc);
    rc.port = group_redis.port;
    breaker_redis *f = NULL;
    assert_int_equal(breaker_redis_open(&rc, &f, NULL, 0), BREAKER_OK);
    (void)fleet_attach_or_fail(f, "fork.exec", NULL);
    assert_int_equal(breaker_redis_flush(f), BREAKER_OK); /* its flush and probe connections */
    /* The handle's descriptors: those it added. */
    int na = fd_targets(after, 64), made = 0;
    const char *mine[64];
    for (int i = 0; i < na; i++) {
        int old = 0;
        for (int j = 0; j < nb && !old; j++)
            old = strcmp(after[i], before[j]) == 0;
        if (!old) mine[made++] = after[i];
    }
    printf("  the handle's descriptors: %d\n", made);
    assert_true(made >= 3); /* a connection or two, the wake pipe's two ends */
    int out[2];
    assert_int_equal(pipe(out), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The program lists the descriptors it was given. */
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execl("/bin/sh", "sh", "-c", "ls -l /proc/$$/fd", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char buf[8192];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof buf - 1 && (got = read(out[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    close(out[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    printf("%s", buf);
    for (int i = 0; i < made; i++)
        if (strstr(buf, mine[i]) != NULL) fail_msg("the program was given %s", mine[i]);
    breaker_redis_close(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(children_use_handles_of_their_own),
        cmocka_unit_test(an_exec_keeps_none_of_the_handle_s_descriptors),
    };
    return cmocka_run_group_tests(tests, group_redis_start, group_redis_stop);
}
