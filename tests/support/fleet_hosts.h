/* SPDX-License-Identifier: MIT */
/*
 * fleet_hosts.h - the host processes of a fleet test: children forked to
 * run one host each against the test's redis-server, a page they share with
 * the test (each file lays out what its hosts report there), and their end.
 *
 *     sh = fleet_hosts_share(sizeof *sh);
 *     fleet_hosts_fork(pid, NHOST, host, &r);   // child i: host(&r, i)
 *     fleet_hosts_wait_ready(&sh->ready, NHOST);
 *     ...
 *     atomic_store(&sh->stop, 1);
 *     assert_int_equal(fleet_hosts_reap(pid, NHOST), 0);
 */
#ifndef BREAKER_TEST_FLEET_HOSTS_H
#define BREAKER_TEST_FLEET_HOSTS_H

#include "redis_server.h"

#include <breaker.h>
#include <breaker/redis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* A zeroed page of `size` bytes that the processes forked after share with
 * the test (munmap() it at the end). */
static inline void *fleet_hosts_share(size_t size) {
    void *page = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(page != MAP_FAILED);
    memset(page, 0, size);
    return page;
}

/* `n` processes, `pid[i]` running host(r, i) and leaving with what it
 * returns: 0, or the step that failed, named on stderr. */
static inline void fleet_hosts_fork(pid_t *pid, int n, int (*host)(const struct test_redis *, int),
                                    const struct test_redis *r) {
    for (int i = 0; i < n; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            int rc = host(r, i);
            if (rc != 0) fprintf(stderr, "host %d: failed at step %d\n", i, rc);
            _exit(rc);
        }
    }
}

/* The host's process is to go on calling: the test has not said stop, and
 * `parent` (getppid() when the host began) is still its parent, so a host
 * never outlives a test that failed on the way. */
static inline int fleet_host_running(_Atomic int *stop, pid_t parent) {
    return !atomic_load(stop) && getppid() == parent;
}

/* One call of a host through `b`: admitted (counted in `admitted`, and a
 * failure while `failing` is set, else a success) or refused (counted in
 * `refused`). */
static inline void fleet_host_call(breaker *b, _Atomic int *failing, _Atomic long *admitted,
                                   _Atomic long *refused) {
    breaker_permit p;
    if (breaker_acquire(b, &p) == BREAKER_OK) {
        atomic_fetch_add(admitted, 1);
        (void)breaker_complete(b, &p, atomic_load(failing) ? BREAKER_FAILURE : BREAKER_SUCCESS);
    } else {
        atomic_fetch_add(refused, 1);
    }
}

/* Wait, at most 20 s, until `ready` (each host adds one once attached)
 * counts `n` hosts; asserts it does. */
static inline void fleet_hosts_wait_ready(_Atomic int *ready, int n) {
    for (int t = 0; t < 20000 && atomic_load(ready) < n; t++)
        test_redis_nap_ms(1);
    assert_int_equal(atomic_load(ready), n);
}

/* Reap the `n` hosts (told to stop already). @return 0 when every one left
 * with 0, else 1 + the index of the last that did not. */
static inline int fleet_hosts_reap(const pid_t *pid, int n) {
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int st = 0;
        while (waitpid(pid[i], &st, 0) < 0) {
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = i + 1;
    }
    return failed;
}

/* A fleet test's world: a redis-server, its host processes (at most
 * FLEET_WORLD_HOSTS), and the operator's handle with the name attached. */
#define FLEET_WORLD_HOSTS 8
struct fleet_world {
    struct test_redis r;
    pid_t pid[FLEET_WORLD_HOSTS];
    breaker_redis *op;
    breaker *b;
};

/* The world's end: the operator's handle closed, the `hosts` hosts told to
 * stop (`stop`) and reaped, the server stopped and the shared `page`
 * unmapped; then asserts that every host left with 0. */
static inline void fleet_world_finish(struct fleet_world *w, int hosts, _Atomic int *stop,
                                      void *page, size_t page_size) {
    breaker_redis_close(w->op);
    atomic_store(stop, 1);
    int failed = fleet_hosts_reap(w->pid, hosts);
    test_redis_stop(&w->r);
    munmap(page, page_size);
    assert_int_equal(failed, 0);
}

#endif
