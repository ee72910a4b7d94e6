/* SPDX-License-Identifier: MIT */
/*
 * test_store_bounded_waits.c - no store call waits without a bound
 * (breaker/store.h, "No wait without a bound"). Another process holds the
 * store file's lock, stopped under it (it took the lock and SIGSTOPped
 * itself: a process stopped by a debugger or a frozen cgroup in its few
 * microseconds of bookkeeping) or holding it on purpose (`flock -x FILE
 * sleep`, util-linux's flock(1)). Every entry point that takes the lock
 * (open, attach of a new and of an existing name, a registry's get of a new
 * name, check, the last control's read, a live change of limits) then
 * gives up with BREAKER_EBUSY after lock_wait_ns, never before, with a
 * message naming the holder; an operator's control stands anyway (only its
 * record is skipped); lock-free paths (a registry's get of a known name,
 * the call path) never notice; a second thread of the process gives up by
 * its own bound, not behind the first; and once the holder is gone every
 * call works again.
 *
 * Real time, as the library promises it: each call returns EBUSY, having
 * waited at least lock_wait_ns (its clock is CLOCK_MONOTONIC); the time it
 * took is printed. The upper check is only that the call returned within
 * HANG_NS: a call that hangs fails the test instead of timing it out.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include <breaker/registry.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>

extern char **environ;

#define BOUND_NS (100 * MS)
/* A call that has not returned this long after its bound hangs: not a
 * measure of the promise (scheduling on a loaded machine adds to any
 * return), only what tells a hang from a slow return. */
#define HANG_NS (10 * SEC)

static breaker_store_config bounded_config(void) {
    breaker_store_config c = quiet_store_config();
    c.lock_wait_ns = BOUND_NS;
    return c;
}

static breaker_store *open_bounded(void) {
    breaker_store *st = NULL;
    char msg[256];
    breaker_store_config c = bounded_config();
    if (breaker_store_open(path, &c, &st, msg, sizeof(msg)) != BREAKER_OK)
        fail_msg("open: %s", msg);
    return st;
}

/* Whether another open file description holds the file's lock now. */
static bool lock_is_held(void) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

/* A child that takes the file's lock and stops itself under it. @return
 * its pid, once it is stopped. */
static pid_t stopped_holder(void) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(2);
        raise(SIGSTOP);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    assert_true(lock_is_held());
    return pid;
}

/* `flock -x PATH sleep 60` in a process group of its own (flock(1) and the
 * sleep it runs, which inherits the lock). @return the group's id (flock's
 * pid), once the lock is held. */
static pid_t flock_holder(void) {
    posix_spawnattr_t attr;
    assert_int_equal(posix_spawnattr_init(&attr), 0);
    assert_int_equal(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP), 0);
    assert_int_equal(posix_spawnattr_setpgroup(&attr, 0), 0);
    char a0[] = "flock", a1[] = "-x", a3[] = "sleep", a4[] = "60";
    char *argv[] = {a0, a1, path, a3, a4, NULL};
    pid_t pid = 0;
    int err = posix_spawnp(&pid, "flock", NULL, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    if (err != 0) fail_msg("flock(1) not startable: %s", strerror(err));
    for (int i = 0; i < 10000 && !lock_is_held(); i++)
        usleep(1000);
    assert_true(lock_is_held());
    return pid;
}

static void end_group(pid_t pgid) {
    assert_int_equal(kill(-pgid, SIGKILL), 0);
    (void)reap(pgid); /* flock(1); the sleep is reaped by init */
}

static void end_stopped(pid_t pid) {
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(reap(pid), 128 + SIGKILL);
}

/* One call, timed: it gave up with EBUSY, having waited at least the bound
 * and returned (HANG_NS), and its message names `holder`. */
struct timed {
    uint64_t start;
    const char *what;
};

static struct timed begin_call(const char *what) {
    return (struct timed){.start = monotonic_ns(), .what = what};
}

static uint64_t worst_ns;

static void gave_up(struct timed t, int rc, const char *msg, const char *holder) {
    uint64_t took = monotonic_ns() - t.start;
    if (rc != BREAKER_EBUSY)
        fail_msg("%s: %s (%s), expected BREAKER_EBUSY", t.what, breaker_status_name(rc), msg);
    if (took < BOUND_NS)
        fail_msg("%s gave up after %llu ns, before its bound of %llu ns", t.what,
                 (unsigned long long)took, (unsigned long long)BOUND_NS);
    if (took > BOUND_NS + HANG_NS) fail_msg("%s took %llu ns", t.what, (unsigned long long)took);
    if (holder != NULL && strstr(msg, holder) == NULL)
        fail_msg("%s: the message does not name %s: %s", t.what, holder, msg);
    if (took > worst_ns) worst_ns = took;
    printf("  %-34s EBUSY after %6.1f ms: %s\n", t.what, (double)took / 1e6, msg);
}

/* Every entry point against a holder whose message names `holder`. `st`
 * holds "known" (attached before the lock was taken) in `known` and a
 * registry `reg` on it. */
static void every_entry_point_gives_up(breaker_store *st, breaker *known, breaker_registry *reg,
                                       const char *holder) {
    char msg[512] = "";
    breaker_store *other = NULL;
    breaker_store_config sc = bounded_config();
    struct timed t = begin_call("breaker_store_open");
    gave_up(t, breaker_store_open(path, &sc, &other, msg, sizeof(msg)), msg, holder);
    assert_null(other);

    breaker *b = NULL;
    breaker_config cfg = consecutive_config(3);
    t = begin_call("breaker_store_attach (a new name)");
    gave_up(t, breaker_store_attach(st, "new", &cfg, &b, msg, sizeof(msg)), msg, holder);
    assert_null(b);
    t = begin_call("breaker_store_attach (a known one)");
    gave_up(t, breaker_store_attach(st, "known", &cfg, &b, msg, sizeof(msg)), msg, holder);
    assert_null(b);

    t = begin_call("breaker_registry_get (a new name)");
    gave_up(t, breaker_registry_get(reg, "fresh", &b), "", NULL);
    assert_null(b);
    /* A name the registry holds is found without a lock. */
    assert_int_equal(breaker_registry_get(reg, "held", &b), BREAKER_OK);
    breaker_registry_release(reg, b);

    /* Nothing to move (the path is the file mapped): no lock taken. The
     * check that must move is the_check_gives_up_on_a_move_it_cannot_lock. */
    assert_int_equal(breaker_store_check(st, msg, sizeof(msg)), BREAKER_OK);

    /* The last control is read without the file's lock. */
    breaker_store_control ctl;
    assert_int_equal(breaker_store_last_control(st, "known", &ctl, msg, sizeof(msg)), BREAKER_OK);

    /* A live change of limits. */
    breaker_config now;
    breaker_get_config(known, &now);
    breaker_config next = now;
    next.failure_threshold = now.failure_threshold + 1;
    t = begin_call("breaker_reconfigure");
    gave_up(t, breaker_reconfigure(known, &next, 0, msg, sizeof(msg)), msg, holder);
    breaker_get_config(known, &next);
    assert_int_equal(next.failure_threshold, now.failure_threshold);

    /* An operator's control stands; its record waits briefly and is
     * skipped. */
    breaker_control c;
    breaker_control_init(&c);
    c.action = BREAKER_CONTROL_FORCE_OPEN;
    c.who = "test";
    assert_int_equal(breaker_control_apply(known, &c, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(breaker_get_state(known), BREAKER_FORCED_OPEN);
    assert_int_equal(breaker_reset(known), BREAKER_OK);

    /* The call path takes no lock. */
    breaker_permit p;
    assert_int_equal(breaker_acquire(known, &p), BREAKER_OK);
    assert_int_equal(breaker_complete(known, &p, BREAKER_SUCCESS), BREAKER_OK);
}

/* After the holder: every call works again. */
static void everything_works_again(breaker_store *st, breaker_registry *reg) {
    breaker_store *other = open_bounded();
    breaker_store_close(other);
    breaker_config cfg = consecutive_config(3);
    breaker_destroy(attach(st, "new", &cfg));
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, "fresh", &b), BREAKER_OK);
    breaker_registry_release(reg, b);
    breaker_store_control ctl;
    assert_int_equal(breaker_store_last_control(st, "known", &ctl, NULL, 0), BREAKER_OK);
}

struct rig {
    breaker_store *st;
    breaker *known;
    breaker_registry *reg;
};

static struct rig rig_up(void) {
    struct rig r;
    r.st = open_bounded();
    breaker_config cfg = consecutive_config(3);
    r.known = attach(r.st, "known", &cfg);
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.store = r.st;
    assert_int_equal(breaker_registry_create(&rc, &r.reg), BREAKER_OK);
    breaker *held = NULL;
    assert_int_equal(breaker_registry_get(r.reg, "held", &held), BREAKER_OK);
    breaker_registry_release(r.reg, held);
    return r;
}

static void rig_down(struct rig *r) {
    breaker_registry_destroy(r->reg);
    breaker_destroy(r->known);
    breaker_store_close(r->st);
}

/* Every entry point against the holder `take` starts (its id in the
 * message as `named`), then everything once `end` has ended it. */
static void holds_no_call_past_its_bound(pid_t (*take)(void), void (*end)(pid_t),
                                         const char *suffix) {
    struct rig r = rig_up();
    pid_t pid = take();
    char holder[64];
    snprintf(holder, sizeof(holder), "process %d%s", (int)pid, suffix);
    printf("holder: %s\n", holder);
    worst_ns = 0;
    every_entry_point_gives_up(r.st, r.known, r.reg, holder);
    end(pid);
    everything_works_again(r.st, r.reg);
    printf("bound %llu ms; slowest return %.1f ms\n", (unsigned long long)(BOUND_NS / MS),
           (double)worst_ns / 1e6);
    rig_down(&r);
}

static void a_stopped_holder_holds_no_call_past_its_bound(void **state) {
    (void)state;
    holds_no_call_past_its_bound(stopped_holder, end_stopped, " (stopped)");
}

static void flock_x_holds_no_call_past_its_bound(void **state) {
    (void)state;
    holds_no_call_past_its_bound(flock_holder, end_group, "");
}

/* Two threads of one process attach while the lock is held: each gives up
 * by its own deadline, the second not a whole bound after the first has
 * released the store's own lock. */
struct attacher {
    breaker_store *st;
    const char *name;
    int rc;
    uint64_t start, took;
    char msg[512];
};

static void *attach_thread(void *arg) {
    struct attacher *a = arg;
    breaker *b = NULL;
    a->start = monotonic_ns();
    a->rc = breaker_store_attach(a->st, a->name, NULL, &b, a->msg, sizeof(a->msg));
    a->took = monotonic_ns() - a->start;
    breaker_destroy(b);
    return NULL;
}

static void two_threads_each_give_up_by_their_own_bound(void **state) {
    (void)state;
    breaker_store *st = open_bounded();
    pid_t pid = stopped_holder();
    struct attacher a[2] = {{.st = st, .name = "first"}, {.st = st, .name = "second"}};
    pthread_t t[2];
    assert_int_equal(pthread_create(&t[0], NULL, attach_thread, &a[0]), 0);
    usleep(20000); /* the first waits for the file's lock, holding the store's */
    assert_int_equal(pthread_create(&t[1], NULL, attach_thread, &a[1]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < 2; i++) {
        printf("  %s: %s after %.1f ms: %s\n", a[i].name, breaker_status_name(a[i].rc),
               (double)a[i].took / 1e6, a[i].msg);
        assert_int_equal(a[i].rc, BREAKER_EBUSY);
        assert_true(a[i].took >= BOUND_NS && a[i].took < BOUND_NS + HANG_NS);
        assert_non_null(strstr(a[i].msg, "(stopped)"));
    }
    end_stopped(pid);
    breaker_store_close(st);
}

/* The path names another store file, whose lock a stopped process holds:
 * the check that would move to it gives up by its bound (the store stays
 * on its file, and says why), foreach walks the file mapped, and the move
 * happens once the holder is gone. */
static int count_name(void *ctx, const char *name) {
    (void)name;
    (*(int *)ctx)++;
    return 0;
}

static void the_check_gives_up_on_a_move_it_cannot_lock(void **state) {
    (void)state;
    breaker_store *st = open_bounded();
    breaker_config cfg = consecutive_config(3);
    breaker *b = attach(st, "known", &cfg);
    char next[160];
    snprintf(next, sizeof(next), "%s/next", dir);
    breaker_store *other = NULL;
    breaker_store_config c = bounded_config();
    assert_int_equal(breaker_store_open(next, &c, &other, NULL, 0), BREAKER_OK);
    breaker_store_close(other);
    assert_int_equal(rename(next, path), 0);
    pid_t pid = stopped_holder();
    char holder[64], msg[512] = "";
    snprintf(holder, sizeof(holder), "process %d (stopped)", (int)pid);
    struct timed t = begin_call("breaker_store_check (a move)");
    gave_up(t, breaker_store_check(st, msg, sizeof(msg)), msg, holder);
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 1);
    breaker_store_stats stats;
    breaker_store_stats_get(st, &stats);
    assert_int_equal(stats.moves, 0);
    assert_int_equal(stats.last_status, BREAKER_EBUSY);
    end_stopped(pid);
    assert_int_equal(breaker_store_check(st, msg, sizeof(msg)), BREAKER_OK);
    breaker_store_stats_get(st, &stats);
    assert_int_equal(stats.moves, 1);
    assert_int_equal(stats.forwarded, 1);
    breaker_destroy(b);
    breaker_store_close(st);
}

static void lock_wait_ns_is_checked(void **state) {
    (void)state;
    breaker_store_config c = quiet_store_config();
    breaker_store *st = NULL;
    char msg[256] = "";
    c.lock_wait_ns = MS - 1;
    assert_int_equal(breaker_store_open(path, &c, &st, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_non_null(strstr(msg, "lock_wait_ns: must be between 1 ms and 1 min"));
    c.lock_wait_ns = 60 * SEC + 1;
    assert_int_equal(breaker_store_open(path, &c, &st, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_null(st);
    breaker_store_config d;
    breaker_store_config_init(&d);
    assert_int_equal(d.lock_wait_ns, SEC);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lock_wait_ns_is_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(a_stopped_holder_holds_no_call_past_its_bound, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(flock_x_holds_no_call_past_its_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(the_check_gives_up_on_a_move_it_cannot_lock, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(two_threads_each_give_up_by_their_own_bound, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
