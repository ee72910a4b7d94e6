/* SPDX-License-Identifier: MIT */
/*
 * test_store_stripes.c - owned counter stripes across the processes of a
 * host (core/stripes.c, the host domain): a thread claims one of the store
 * file's owned stripes and writes it with plain stores, so no other thread
 * of any process may hold the same claim. Counts stay exact with more
 * threads than claims across processes; a live claim is never taken; a
 * thread that exits gives its claim back; a forked child does not inherit
 * its parent's; and the claims of killed processes are taken over, so a
 * host that restarts workers all day does not run out of them.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include "core/internal.h"
#include "store/file/file_store.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/prctl.h>

/* The calling thread's claim in b's host domain: the stripe offset + 1, or 0. */
static uintptr_t claim_of(const breaker *b) {
    assert_true(b->host_domain < BREAKER__HOST_DOMAINS);
    return breaker__tls_host_offset[b->host_domain];
}

static unsigned claims_held(breaker_store *st) {
    uint64_t w[8];
    breaker__store_claims(st, w);
    unsigned n = 0;
    for (int i = 0; i < 8; i++)
        n += w[i] != 0;
    return n;
}

static bool holds(breaker_store *st, pid_t pid) {
    uint64_t w[8];
    breaker__store_claims(st, w);
    for (int i = 0; i < 8; i++)
        if (w[i] != 0 && (pid_t)(w[i] >> 32) == pid) return true;
    return false;
}

/* ---- Exact counts: 4 processes x 3 threads (12 writers, 8 claims) ---------- */

enum { PROCS = 4, THREADS = 3, CALLS = 200000 };

static void *count_calls(void *arg) {
    breaker *b = arg;
    for (int i = 0; i < CALLS; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) != BREAKER_OK) return (void *)1;
        if (breaker_complete(b, &p, BREAKER_SUCCESS) != BREAKER_OK) return (void *)1;
    }
    return NULL;
}

static int counting_child(breaker_store *inherited, const char *name, const breaker_config *cfg) {
    breaker_store_close(inherited);
    breaker_store *cs = NULL;
    breaker *b = child_attach(name, cfg, &cs);
    if (b->host_domain >= BREAKER__HOST_DOMAINS) return 6; /* would count atomically only */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, count_calls, b) != 0) return 4;
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    breaker_destroy(b);
    breaker_store_close(cs);
    return bad ? 5 : 0;
}

static void counts_stay_exact_with_more_writers_than_claims(void **state) {
    (void)state;
    breaker_store *st = open_store();
    for (int policy = 0; policy < 3; policy++) {
        breaker_config cfg = consecutive_config(3);
        cfg.trip = (enum breaker_trip)policy;
        const char *name = breaker_trip_name(cfg.trip);
        breaker *b = attach(st, name, &cfg);
        pid_t pids[PROCS];
        for (int i = 0; i < PROCS; i++) {
            pids[i] = fork();
            assert_true(pids[i] >= 0);
            if (pids[i] == 0) _exit(counting_child(st, name, &cfg));
        }
        for (int i = 0; i < PROCS; i++)
            assert_int_equal(reap(pids[i]), 0);
        breaker_stats s = stats_of(b);
        uint64_t want = (uint64_t)PROCS * THREADS * CALLS;
        print_message("%s: %llu admitted, %llu successes (want %llu each)\n", name,
                      (unsigned long long)s.admitted, (unsigned long long)s.successes,
                      (unsigned long long)want);
        assert_int_equal(s.admitted, want);
        assert_int_equal(s.successes, want);
        breaker_destroy(b);
    }
    breaker_store_close(st);
}

/* ---- Claims: given back, not inherited, never stolen, reclaimed ------------ */

static void call_once(breaker *b) {
    breaker_permit p;
    if (breaker_acquire(b, &p) == BREAKER_OK) (void)breaker_complete(b, &p, BREAKER_SUCCESS);
}

static void *call_and_exit(void *arg) {
    call_once(arg);
    return (void *)claim_of(arg); /* nonzero: it held a claim */
}

static void an_exiting_thread_gives_its_claim_back(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker *b = attach(st, "threads", NULL);
    unsigned before = claims_held(st);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, call_and_exit, b), 0);
    void *held = NULL;
    assert_int_equal(pthread_join(t, &held), 0);
    assert_true(held != NULL);
    assert_int_equal(claims_held(st), before);
    breaker_destroy(b);
    breaker_store_close(st);
}

static void a_forked_child_does_not_inherit_a_claim(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker *b = attach(st, "forked", NULL);
    call_once(b); /* this thread claims */
    uintptr_t mine = claim_of(b);
    assert_true(mine != 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (claim_of(b) != 0) _exit(1); /* the parent's claim */
        call_once(b);
        if (claim_of(b) == 0) _exit(2);    /* claimed its own */
        if (claim_of(b) == mine) _exit(3); /* not the parent's */
        if (!holds(st, getpid()) || !holds(st, getppid())) _exit(4);
        _exit(0);
    }
    assert_int_equal(reap(pid), 0);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* A child that claims and then waits to be killed; tells the parent
 * whether it got a claim. */
static _Noreturn void claim_and_wait(breaker_store *inherited, int tell) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
    breaker_store_close(inherited);
    breaker_store *cs = NULL;
    breaker *b = child_attach("workers", NULL, &cs);
    call_once(b);
    char got =
        b->host_domain < BREAKER__HOST_DOMAINS && breaker__tls_host_offset[b->host_domain] != 0
            ? 'y'
            : 'n';
    if (write(tell, &got, 1) != 1) _exit(5);
    for (;;)
        pause();
}

static pid_t spawn_claimer(breaker_store *st, char *got) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        claim_and_wait(st, fds[1]);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], got, 1), 1);
    close(fds[0]);
    return pid;
}

static void kill_and_reap(pid_t pid) {
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(reap(pid), 128 + SIGKILL);
}

static void live_claims_are_kept_and_dead_ones_reclaimed(void **state) {
    (void)state;
    breaker_store *st = open_store();
    /* Eight live processes hold the eight claims. */
    pid_t live[8];
    for (int i = 0; i < 8; i++) {
        char got = 0;
        live[i] = spawn_claimer(st, &got);
        assert_int_equal(got, 'y');
    }
    assert_int_equal(claims_held(st), 8);
    /* A ninth finds none free and takes none from the living. */
    char got = 0;
    pid_t ninth = spawn_claimer(st, &got);
    assert_int_equal(got, 'n');
    kill_and_reap(ninth);
    for (int i = 0; i < 8; i++)
        assert_true(holds(st, live[i]));
    /* All eight are killed: their words still name them... */
    for (int i = 0; i < 8; i++)
        kill_and_reap(live[i]);
    assert_int_equal(claims_held(st), 8);
    /* ...and 40 more processes, one after another, each get a claim from
     * the dead: more processes over time than there are stripes. */
    for (int round = 0; round < 40; round++) {
        pid_t pid = spawn_claimer(st, &got);
        assert_int_equal(got, 'y');
        assert_true(holds(st, pid));
        kill_and_reap(pid);
    }
    breaker_store_close(st);
}

/* A process that cannot read its own start time (no descriptor left for
 * /proc/self/stat) writes no claim others could misjudge: it counts
 * atomically, and exactly. */
static void no_start_time_no_claim(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker *b = attach(st, "no-proc", NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        breaker *c = attach(st, "no-proc", NULL);
        /* No descriptor free: fill them all (valgrind keeps some for
         * itself, so the lowest free number says nothing). */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(2);
        if (rl.rlim_cur > 256) rl.rlim_cur = 256;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(3);
        int n = 0;
        while (n < 4096 && open("/dev/null", O_RDONLY) >= 0)
            n++;
        if (n >= 4096) _exit(2);
        for (int i = 0; i < 1000; i++)
            call_once(c);
        if (c->host_domain < BREAKER__HOST_DOMAINS && breaker__tls_host_offset[c->host_domain] != 0)
            _exit(4); /* claimed with an unknown start time */
        int held = holds(st, getpid());
        breaker_destroy(c);
        breaker_destroy(b); /* the parent's, inherited: freed for memcheck */
        breaker_store_close(st);
        _exit(held ? 5 : 0);
    }
    assert_int_equal(reap(pid), 0);
    assert_int_equal(stats_of(b).admitted, 1000);
    assert_int_equal(stats_of(b).successes, 1000);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* A copy of a store file carries the original's id in its header; its
 * breakers must still not use the original's claim table. */
static void a_copied_store_file_has_its_own_claims(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker *b = attach(st, "copied", NULL);
    call_once(b); /* this thread claims in the original */
    char copy[160];
    snprintf(copy, sizeof(copy), "%s/link", dir); /* teardown removes it */
    int in = open(path, O_RDONLY), out = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
    breaker_store *cs = NULL;
    assert_int_equal(breaker_store_open(copy, NULL, &cs, NULL, 0), BREAKER_OK);
    breaker *c = attach(cs, "copied", NULL);
    assert_true(c->host_domain != b->host_domain);
    breaker_stats before = stats_of(c);
    for (int i = 0; i < 1000; i++)
        call_once(c);
    assert_int_equal(stats_of(c).admitted - before.admitted, 1000);
    breaker_destroy(c);
    breaker_store_close(cs);
    breaker_destroy(b);
    breaker_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(counts_stay_exact_with_more_writers_than_claims, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_exiting_thread_gives_its_claim_back, setup, teardown),
        cmocka_unit_test_setup_teardown(a_forked_child_does_not_inherit_a_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(live_claims_are_kept_and_dead_ones_reclaimed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(no_start_time_no_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(a_copied_store_file_has_its_own_claims, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
