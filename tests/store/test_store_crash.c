/* SPDX-License-Identifier: MIT */
/*
 * test_store_crash.c - processes killed with SIGKILL at random instructions
 * while they use a store file: in the middle of attaching (under the file
 * lock), of acquiring, of completing, of a transition. Many more processes
 * come and go than a breaker has counter stripes. Afterwards the file opens
 * and checks, every breaker in it works through a whole recovery, and the
 * only thing lost is what the issue allows: each dead process's unsettled
 * calls (admitted, never completed), at most one per killed process.
 *
 * And openers killed while they lay the file out: creating it, or
 * reinitialising an earlier boot's file. Afterwards every open succeeds
 * (the header is written under the lock behind an "initialising" mark
 * that the next opener finds and lays out again).
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
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

/* A store with a directory big enough (65536 names, about 20 MiB of
 * entries touched at layout) that a kill 0-3 ms into the open often lands
 * inside the layout. */
static breaker_store_config big_config(void) {
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.flags |= BREAKER_STORE_NO_WATCHER; /* see store_fixture.h */
    c.capacity = 65536;
    c.size = UINT64_C(64) << 20;
    return c;
}

/* The file's magic word, as a kill left it (0: no file or all zeros). */
static uint64_t magic_now(void) {
    uint64_t magic = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    if (pread(fd, &magic, sizeof(magic), 0) != (ssize_t)sizeof(magic)) magic = 0;
    close(fd);
    return magic;
}

/* The store's own magic, "BRKSTORE": anything else non-zero after a kill is
 * a header the victim left half written. */
#define WHOLE_MAGIC UINT64_C(0x45524f54534b5242)

/* Open with `c` after a killed opener: must succeed, and the file must work. */
static void opens_after(const breaker_store_config *c, unsigned round) {
    breaker_store *st = NULL;
    char msg[256];
    int rc = breaker_store_open(path, c, &st, msg, sizeof(msg));
    if (rc != BREAKER_OK) fail_msg("round %u: open after a killed opener: %s", round, msg);
    trips_in(st, "after.kill");
    breaker_store_close(st);
}

/* Fork an opener with `c`, kill it 0-3 ms in; @return whether the kill left
 * a header half written (the victim was inside the layout). */
static bool kill_an_opener(const breaker_store_config *c, uint64_t *x) {
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        breaker_store *cs = NULL;
        int rc = breaker_store_open(path, c, &cs, NULL, 0);
        breaker_store_close(cs);
        _exit(rc == BREAKER_OK ? 0 : 1);
    }
    struct timespec pause_for = {0, (long)(*x % 3000000)};
    nanosleep(&pause_for, NULL);
    kill(pid, SIGKILL);
    int status = reap(pid);
    assert_true(status == 0 || status == 128 + SIGKILL); /* an opener never fails */
    uint64_t magic = magic_now();
    return magic != 0 && magic != WHOLE_MAGIC;
}

static void killed_openers_leave_the_file_usable(void **state) {
    (void)state;
    enum { ROUNDS = 200 };
    breaker_store_config c = big_config();
    uint64_t x = 0x2545f4914f6cdd1du;
    unsigned half_created = 0, half_reinitialised = 0;
    /* Creation: no file, an opener creating it killed. */
    for (unsigned r = 0; r < ROUNDS; r++) {
        unlink(path);
        if (kill_an_opener(&c, &x)) half_created++;
        opens_after(&c, r);
    }
    /* Reinitialisation: a whole file of an earlier boot (its boot id
     * changed), an opener laying it out again killed; then an opener without
     * CREATE must open it too. */
    breaker_store_config plain = c;
    plain.flags = BREAKER_STORE_NO_WATCHER;
    for (unsigned r = 0; r < ROUNDS; r++) {
        int fd = open(path, O_RDWR);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, "00000000", 8, 24), 8); /* the boot id */
        close(fd);
        if (kill_an_opener(&c, &x)) half_reinitialised++;
        opens_after(&plain, r);
    }
    print_message("%u openers killed: %u creating left a half-written header, %u "
                  "reinitialising; every later open succeeded\n",
                  2 * ROUNDS, half_created, half_reinitialised);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(killed_processes_leave_the_file_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(killed_openers_leave_the_file_usable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
