/* SPDX-License-Identifier: MIT */
/*
 * test_fork_jitter.c - a fleet must not probe in lockstep: processes forked
 * after a breaker was created (a pre-fork server) wait differently when the
 * seed was drawn, and exactly alike when the user fixed it (simulation,
 * replay, tests).
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

/* The first wait of a breaker tripped in this process. */
static uint64_t first_wait(breaker *b, struct event_log *log) {
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(atomic_load(&log->count), 1);
    return log->events[0].open_ns;
}

/* Trip a copy of `b` in a child process (forked after `b` was created) and
 * one here; return both first waits. */
static void waits_in_two_processes(uint64_t seed, uint64_t waits[2]) {
    struct fake_clock clock = {0};
    struct event_log log = {0};
    breaker_config cfg;
    test_config(&cfg, &clock, &log);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    cfg.open_ns = 10 * SEC;
    cfg.open_jitter = 0.5;
    cfg.seed = seed;
    breaker *b = make_breaker(&cfg);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(fds[0]);
        uint64_t w = first_wait(b, &log);
        ssize_t n = write(fds[1], &w, sizeof(w));
        test_breaker_destroy(b); /* the child's copy (memcheck follows it) */
        _exit(n == (ssize_t)sizeof(w) ? 0 : 1);
    }
    close(fds[1]);
    waits[0] = first_wait(b, &log);
    assert_int_equal(read(fds[0], &waits[1], sizeof(waits[1])), (ssize_t)sizeof(waits[1]));
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    test_breaker_destroy(b);
}

static void drawn_seeds_give_forked_processes_different_waits(void **state) {
    (void)state;
    uint64_t waits[2];
    waits_in_two_processes(0, waits);
    assert_true(waits[0] >= 10 * SEC && waits[0] < 15 * SEC);
    assert_true(waits[1] >= 10 * SEC && waits[1] < 15 * SEC);
    if (waits[0] == waits[1])
        fail_msg("parent and child both wait %llu ns", (unsigned long long)waits[0]);
}

static void fixed_seeds_repeat_across_processes(void **state) {
    (void)state;
    uint64_t waits[2];
    waits_in_two_processes(42, waits);
    assert_int_equal(waits[0], waits[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(drawn_seeds_give_forked_processes_different_waits),
        cmocka_unit_test(fixed_seeds_repeat_across_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
