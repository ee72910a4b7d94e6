/* SPDX-License-Identifier: MIT */
/*
 * test_store_crash.c - processes killed with SIGKILL at random instructions
 * while they use a store file: in the middle of attaching (under the file
 * lock), of acquiring, of completing, of a transition. Many more processes
 * come and go than a breaker has counter stripes. Afterwards the file opens
 * and checks, every breaker in it works through a whole recovery, and the
 * only thing lost is what the issue allows: each dead process's unsettled
 * calls (admitted, never completed), at most one per killed process.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

/* What the processes share besides the store: the test's own count. */
struct shared_counts {
    _Atomic uint64_t settled; /* completions answered OK or STALE */
};

static breaker_config policy_config(enum breaker_trip trip) {
    breaker_config cfg = consecutive_config(3);
    cfg.trip = trip;
    cfg.window_size = 40;
    cfg.window_ns = 200 * MS;
    cfg.window_buckets = 4;
    cfg.min_calls = 10;
    cfg.failure_rate = 0.5;
    cfg.open_ns = 2 * MS;
    cfg.open_max_ns = 4 * MS;
    cfg.half_open_max_probes = 2;
    cfg.half_open_successes = 2;
    cfg.probe_timeout_ns = 30 * MS;
    return cfg;
}

static const char *const names[] = {"crash.consecutive", "crash.count", "crash.time"};
static const enum breaker_trip trips[] = {BREAKER_TRIP_CONSECUTIVE, BREAKER_TRIP_COUNT_WINDOW,
                                          BREAKER_TRIP_TIME_WINDOW};
enum { POLICIES = 3 };

/* A child: attach (and every 400 calls detach and attach again, so kills
 * land in attach too), then calls until killed: phases of 10% and of 80%
 * failures, so the breakers go round their states. */
static _Noreturn void worker(struct shared_counts *sh, unsigned seed, breaker_store *inherited) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
    breaker_store_close(inherited);
    uint64_t x = seed * 2654435761u + 7;
    for (;;) {
        unsigned which = (unsigned)(x % POLICIES);
        breaker_config cfg = policy_config(trips[which]);
        breaker_store *cs = NULL;
        breaker *b = child_attach(names[which], &cfg, &cs);
        for (int i = 0; i < 400; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            unsigned failing = (monotonic_ns() / (20 * MS)) % 2 ? 80 : 10;
            breaker_permit p;
            if (breaker_acquire(b, &p) != BREAKER_OK) continue;
            enum breaker_outcome o = (x % 100) < failing ? BREAKER_FAILURE : BREAKER_SUCCESS;
            int rc = breaker_complete(b, &p, o);
            if (rc == BREAKER_OK || rc == BREAKER_STALE) atomic_fetch_add(&sh->settled, 1);
        }
        breaker_destroy(b);
        breaker_store_close(cs);
    }
}

/* Drive `b` back to CLOSED with successes (probes admitted as the waits
 * end), then trip it with failures: one transition to OPEN. Real clock: a
 * probe a dead process held is reclaimed at its 30 ms deadline. */
static void recovers_and_trips_once(breaker *b) {
    uint64_t give_up = monotonic_ns() + 5 * SEC;
    while (breaker_get_state(b) != BREAKER_CLOSED) {
        if (monotonic_ns() > give_up) {
            breaker_stats s = stats_of(b);
            fail_msg("still %s after 5 s: generation %llu, %llu probes admitted, %llu "
                     "succeeded, %llu failed, %llu timed out",
                     breaker_state_name(breaker_get_state(b)),
                     (unsigned long long)breaker_generation(b),
                     (unsigned long long)s.probes_admitted, (unsigned long long)s.probes_succeeded,
                     (unsigned long long)s.probes_failed, (unsigned long long)s.probes_timed_out);
        }
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK)
            assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    uint64_t transitions = stats_of(b).transitions;
    while (breaker_get_state(b) == BREAKER_CLOSED) {
        assert_true(monotonic_ns() < give_up);
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK)
            assert_int_equal(breaker_complete(b, &p, BREAKER_FAILURE), BREAKER_OK);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(stats_of(b).transitions, transitions + 1);
}

static void killed_processes_leave_the_file_usable(void **state) {
    (void)state;
    enum { LIVE = 4, SPAWNS = 200 }; /* 200 processes over time: more than the stripes */
    struct shared_counts *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    breaker_store *st = open_store();
    pid_t live[LIVE];
    unsigned spawned = 0, killed = 0;
    for (int i = 0; i < LIVE; i++) {
        live[i] = fork();
        assert_true(live[i] >= 0);
        if (live[i] == 0) worker(sh, ++spawned, st);
        spawned++;
    }
    uint64_t x = 0x9e3779b97f4a7c15u;
    while (spawned < SPAWNS) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* A random moment (0..3 ms): the kill lands wherever the victim is. */
        struct timespec pause_for = {0, (long)(x % 3000000)};
        nanosleep(&pause_for, NULL);
        int victim = (int)((x >> 32) % LIVE);
        assert_int_equal(kill(live[victim], SIGKILL), 0);
        assert_int_equal(reap(live[victim]), 128 + SIGKILL);
        killed++;
        live[victim] = fork();
        assert_true(live[victim] >= 0);
        if (live[victim] == 0) worker(sh, ++spawned, st);
        spawned++;
    }
    for (int i = 0; i < LIVE; i++) {
        assert_int_equal(kill(live[i], SIGKILL), 0);
        assert_int_equal(reap(live[i]), 128 + SIGKILL);
        killed++;
    }
    breaker_store_close(st);

    /* A fresh mapping: the file and every stored breaker pass their checks. */
    st = open_store();
    uint64_t admitted = 0, outcomes = 0;
    for (int i = 0; i < POLICIES; i++) {
        breaker_config cfg = policy_config(trips[i]);
        breaker *b = attach(st, names[i], &cfg);
        breaker_stats s = stats_of(b);
        admitted += s.admitted;
        outcomes += s.successes + s.failures + s.ignored + s.stale;
        print_message("%s: %llu admitted, %llu transitions, state %s\n", names[i],
                      (unsigned long long)s.admitted, (unsigned long long)s.transitions,
                      breaker_state_name(breaker_get_state(b)));
        recovers_and_trips_once(b);
        breaker_destroy(b);
    }
    uint64_t settled = atomic_load(&sh->settled);
    print_message("%u processes killed; %llu admitted, %llu settled, %llu unsettled\n", killed,
                  (unsigned long long)admitted, (unsigned long long)outcomes,
                  (unsigned long long)(admitted - outcomes));
    /* Lost: at most the one call each killed process had in flight. */
    assert_true(outcomes <= admitted);
    assert_true(admitted - outcomes <= killed);
    /* A kill between a completion and the test's own count: off by one each. */
    assert_true(settled <= outcomes && outcomes - settled <= killed);
    assert_true(admitted > 1000); /* the workers did run */
    breaker_store_close(st);
    munmap(sh, sizeof(*sh));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(killed_processes_leave_the_file_usable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
