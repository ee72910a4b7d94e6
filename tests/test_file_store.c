/* SPDX-License-Identifier: MIT */
/*
 * test_file_store.c - breakers shared by the processes of one host through a
 * memory-mapped store file: one breaker per name across handles and real
 * processes (fork), the first creator's limits winning, the file's safety
 * rules, race-free creation, the probe bound and the statistics identity
 * under eight processes, and a probe whose process is killed with SIGKILL
 * being reclaimed at its deadline.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void one_breaker_per_name_across_handles_and_processes(void **state) {
    (void)state;
    breaker_store *st = open_store();
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    breaker_config cfg = consecutive_config(2);
    breaker *a = attach(st, "payments", &cfg);
    breaker *b = attach(st, "payments", &cfg);
    call_ok(a, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* the second failure in a row, whoever saw the first */
    assert_int_equal(breaker_get_state(a), BREAKER_OPEN);
    uint64_t gen = breaker_generation(a);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        breaker_store *cs = NULL;
        breaker *c = child_attach("payments", &cfg, &cs);
        breaker_permit p;
        int ok = breaker_get_state(c) == BREAKER_OPEN && breaker_generation(c) == gen &&
                 breaker_acquire(c, &p) == BREAKER_REJECTED_OPEN;
        breaker_stats s;
        (void)breaker_stats_get(c, &s);
        ok = ok && s.failures == 2 && s.rejected_open == 1;
        breaker_destroy(c);
        breaker_store_close(cs);
        /* The parent's handles, inherited: freed so memcheck sees no leak
         * (freeing a handle or closing a store touches nothing shared). */
        breaker_destroy(a);
        breaker_destroy(b);
        breaker_store_close(st);
        _exit(ok ? 0 : 1);
    }
    assert_int_equal(reap(pid), 0);
    assert_int_equal(stats_of(a).rejected_open, 1); /* the child's refusal, counted here */
    breaker_destroy(a);
    breaker_destroy(b);
    breaker_store_close(st);
}

static int count_name(void *ctx, const char *name) {
    (void)name;
    (*(int *)ctx)++;
    return 0;
}

/* The first creator's limits win; a different configuration is told so and
 * sees the stored limits. Its own callbacks stay its own. */
static void the_first_creators_limits_win(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config first = consecutive_config(5);
    breaker *a = attach(st, "search", &first);
    breaker_config other = consecutive_config(9);
    struct event_log log = {0};
    other.on_event = event_log_record;
    other.event_ctx = &log;
    breaker *b = NULL;
    char msg[256];
    assert_int_equal(breaker_store_attach(st, "search", &other, &b, msg, sizeof(msg)),
                     BREAKER_CONFIG_DIFFERS);
    assert_non_null(b);
    assert_non_null(strstr(msg, "search"));
    breaker_config got;
    breaker_get_config(b, &got);
    assert_int_equal(got.failure_threshold, 5);
    assert_ptr_equal(got.on_event, event_log_record);
    for (int i = 0; i < 5; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(a), BREAKER_OPEN);
    /* The transition is reported once, by the handle that made it. */
    assert_int_equal(atomic_load(&log.count), 1);
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 1);
    breaker_destroy(a);
    breaker_destroy(b);
    breaker_store_close(st);
}

static void write_file(const char *p, const void *data, size_t n, mode_t mode) {
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
}

static int refused(const char *p, unsigned flags, char *msg, size_t len) {
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.flags = flags;
    breaker_store *st = NULL;
    int rc = breaker_store_open(p, &c, &st, msg, len);
    if (rc == BREAKER_OK) breaker_store_close(st);
    return rc;
}

static void the_file_is_checked_before_it_is_trusted(void **state) {
    (void)state;
    char msg[256];
    /* No file, no CREATE. */
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_NOT_FOUND);
    /* Garbage, and too short. */
    write_file(path, "hello, not a store", 18, 0600);
    assert_int_equal(refused(path, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    char zeros[8192] = {0};
    write_file(path, zeros, sizeof(zeros), 0600);
    assert_int_equal(refused(path, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    assert_non_null(strstr(msg, "magic"));
    unlink(path);
    /* A good file, then damaged: another version; truncated. */
    breaker_store *st = open_store();
    breaker_store_close(st);
    int fd = open(path, O_RDWR);
    uint32_t version = 99;
    assert_int_equal(pwrite(fd, &version, sizeof(version), 8), (ssize_t)sizeof(version));
    close(fd);
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    assert_non_null(strstr(msg, "version 99"));
    assert_int_equal(truncate(path, 4096), 0);
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    unlink(path);
    /* Group-writable: refused unless allowed. */
    st = open_store();
    breaker_store_close(st);
    assert_int_equal(chmod(path, 0660), 0);
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EIO);
    assert_non_null(strstr(msg, "writable"));
    assert_int_equal(refused(path, BREAKER_STORE_ALLOW_SHARED, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(chmod(path, 0600), 0);
    /* A symbolic link: refused. */
    char link[160];
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(refused(link, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_EIO);
    assert_non_null(strstr(msg, "symbolic link"));
    unlink(link);
}

/* A file of an earlier boot is reinitialised: its names are gone. The boot
 * identifier sits after magic, version, header size and abi. */
static void a_file_from_an_earlier_boot_starts_over(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(3);
    breaker_destroy(attach(st, "old", &cfg));
    breaker_store_close(st);
    int fd = open(path, O_RDWR);
    char fake[8] = "00000000";
    assert_int_equal(pwrite(fd, fake, sizeof(fake), 24), (ssize_t)sizeof(fake));
    close(fd);
    st = open_store();
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 0);
    breaker_store_close(st);
}

/* Eight processes create the same file and the same name at once: one file,
 * one breaker (each process's one call is counted in it). */
static void processes_creating_at_once_get_one_breaker(void **state) {
    (void)state;
    enum { N = 8 };
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) != 0) _exit(4); /* EOF: everyone starts */
            breaker_config cfg = consecutive_config(3);
            breaker_store *cs = NULL;
            breaker *b = child_attach("shared", &cfg, &cs);
            breaker_permit p;
            int ok = breaker_acquire(b, &p) == BREAKER_OK &&
                     breaker_complete(b, &p, BREAKER_SUCCESS) == BREAKER_OK;
            breaker_destroy(b);
            breaker_store_close(cs);
            _exit(ok ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]);
    for (int i = 0; i < N; i++)
        assert_int_equal(reap(pids[i]), 0);
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(3);
    breaker *b = attach(st, "shared", &cfg);
    breaker_stats s = stats_of(b);
    assert_int_equal(s.admitted, N);
    assert_int_equal(s.successes, N);
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 1);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* What the processes share besides the breaker: the dependency's view. */
struct shared_counts {
    _Atomic int probes_in_flight;
    _Atomic int max_probes_in_flight;
    _Atomic uint64_t events;  /* transitions reported, in all processes */
    _Atomic uint64_t settled; /* completions that answered OK or STALE */
};

static void count_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    (void)ev;
    atomic_fetch_add(&((struct shared_counts *)ctx)->events, 1);
}

static void hammer(struct shared_counts *sh, unsigned seed, uint64_t until,
                   breaker_store *inherited) {
    breaker_store_close(inherited); /* the parent's: not used here */
    breaker_config cfg = consecutive_config(3);
    cfg.open_ns = 2 * MS;
    cfg.half_open_max_probes = 2;
    cfg.half_open_successes = 2;
    /* Long enough that no probe overruns it, even under valgrind with eight
     * processes on two cores: a probe past its deadline is failed and its
     * slot freed (a hung probe must not wedge the breaker), and the
     * dependency would then rightly see one more probe than the limit. */
    cfg.probe_timeout_ns = 5 * SEC;
    cfg.on_event = count_event;
    cfg.event_ctx = sh;
    breaker_store *cs = NULL;
    breaker *b = child_attach("hammered", &cfg, &cs);
    uint64_t x = seed * 2654435761u + 1;
    while (monotonic_ns() < until) {
        breaker_permit p;
        if (breaker_acquire(b, &p) != BREAKER_OK) continue;
        bool probe = breaker_permit_is_probe(&p);
        if (probe) {
            int now = atomic_fetch_add(&sh->probes_in_flight, 1) + 1;
            int max = atomic_load(&sh->max_probes_in_flight);
            while (now > max &&
                   !atomic_compare_exchange_weak(&sh->max_probes_in_flight, &max, now)) {
            }
            for (volatile int spin = 0; spin < 2000; spin++) {
            }
            /* Out of flight before the completion: once it completes, the
             * slot may go to another process's probe. */
            atomic_fetch_sub(&sh->probes_in_flight, 1);
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        enum breaker_outcome o = (x % 100) < 30 ? BREAKER_FAILURE : BREAKER_SUCCESS;
        int rc = breaker_complete(b, &p, o);
        if (rc == BREAKER_OK || rc == BREAKER_STALE) atomic_fetch_add(&sh->settled, 1);
    }
    breaker_destroy(b);
    breaker_store_close(cs);
    _exit(0);
}

/* Eight processes on one breaker: never more probes in flight than the limit
 * across all of them, every transition reported exactly once (in the process
 * that made it), and the statistics identity at quiescence. */
static void eight_processes_share_one_probe_budget(void **state) {
    (void)state;
    enum { N = 8 };
    struct shared_counts *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    breaker_store *st = open_store();
    uint64_t until = monotonic_ns() + 1500 * MS;
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) hammer(sh, (unsigned)i + 1, until, st);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(reap(pids[i]), 0);
    breaker *b = attach(st, "hammered", NULL);
    breaker_stats s = stats_of(b);
    print_message("8 processes: %llu admitted, %llu transitions (%llu reported), max %d probes in "
                  "flight, %llu probes\n",
                  (unsigned long long)s.admitted, (unsigned long long)s.transitions,
                  (unsigned long long)atomic_load(&sh->events),
                  atomic_load(&sh->max_probes_in_flight), (unsigned long long)s.probes_admitted);
    assert_true(atomic_load(&sh->max_probes_in_flight) <= 2);
    assert_true(s.transitions > 10); /* it went round the state machine */
    assert_true(s.probes_admitted > 0);
    assert_int_equal(atomic_load(&sh->events), s.transitions);
    assert_int_equal(s.admitted, s.successes + s.failures + s.ignored + s.stale);
    assert_int_equal(s.admitted, atomic_load(&sh->settled));
    assert_int_equal(s.duplicates, 0);
    breaker_destroy(b);
    breaker_store_close(st);
    munmap(sh, sizeof(*sh));
}

/* A process holding the probe is killed with SIGKILL: another process gets a
 * probe no later than the dead probe's deadline (a few ms of slack for the
 * scheduler), and the breaker recovers. */
static void a_killed_probe_is_reclaimed_at_its_deadline(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(1);
    cfg.open_ns = 10 * MS;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = 200 * MS;
    breaker *b = attach(st, "flaky", &cfg);
    call_ok(b, BREAKER_FAILURE);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        breaker_store *cs = NULL;
        breaker *c = child_attach("flaky", &cfg, &cs);
        breaker_permit p;
        while (breaker_acquire(c, &p) != BREAKER_OK) {
        }
        uint64_t admitted = monotonic_ns();
        if (write(ready[1], &admitted, sizeof(admitted)) != (ssize_t)sizeof(admitted)) _exit(4);
        for (;;)
            pause(); /* hangs holding the probe */
    }
    uint64_t admitted = 0;
    assert_int_equal(read(ready[0], &admitted, sizeof(admitted)), (ssize_t)sizeof(admitted));
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(reap(pid), 128 + SIGKILL);
    breaker_permit p;
    uint64_t t;
    for (;;) {
        int rc = breaker_acquire(b, &p);
        t = monotonic_ns();
        if (rc == BREAKER_OK) break;
        assert_true(t < admitted + 2 * SEC);
    }
    uint64_t deadline = admitted + 200 * MS;
    /* Reopened at the deadline, then the open wait (10 ms, doubled) runs
     * from it: the next probe no later than deadline + 20 ms + slack. */
    if (t > deadline + 20 * MS + 50 * MS)
        fail_msg("next probe %llu ms after the dead probe's deadline",
                 (unsigned long long)((t - deadline) / MS));
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_destroy(b);
    breaker_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_breaker_per_name_across_handles_and_processes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_first_creators_limits_win, setup, teardown),
        cmocka_unit_test_setup_teardown(the_file_is_checked_before_it_is_trusted, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_from_an_earlier_boot_starts_over, setup, teardown),
        cmocka_unit_test_setup_teardown(processes_creating_at_once_get_one_breaker, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(eight_processes_share_one_probe_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(a_killed_probe_is_reclaimed_at_its_deadline, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
