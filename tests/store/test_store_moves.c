/* SPDX-License-Identifier: MIT */
/*
 * test_store_moves.c - a store file unlinked (a tmp cleaner) or replaced (a
 * rename over it) under running processes: the store notices (its watcher,
 * or breaker_store_check()), moves to the file at the path, and every
 * handle attached before follows it, so the processes of the host agree
 * again (breaker/store.h, "The file at the path wins"). What a move keeps (an
 * open wait, a forced state, the handle the user holds in events, permits
 * given before it) and what it does not (a full file strands handles until
 * it has room), two real processes converging, and calls racing moves.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include <breaker/registry.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>

/* A store on `where` that only moves when the test says so. */
static breaker_store *open_quiet(const char *where, uint32_t capacity) {
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.flags |= BREAKER_STORE_NO_WATCHER;
    c.capacity = capacity;
    breaker_store *st = NULL;
    char msg[256];
    if (breaker_store_open(where, &c, &st, msg, sizeof(msg)) != BREAKER_OK)
        fail_msg("open %s: %s", where, msg);
    return st;
}

static void check_ok(breaker_store *st) {
    char msg[256];
    int rc = breaker_store_check(st, msg, sizeof(msg));
    if (rc != BREAKER_OK) fail_msg("check: %s (%s)", breaker_strerror(rc), msg);
}

static breaker_store_stats store_stats(breaker_store *st) {
    breaker_store_stats s;
    breaker_store_stats_get(st, &s);
    return s;
}

/* Another store file at `dir`/link of `capacity` names (0: the default),
 * holding `name` with `successes` successes, renamed over the path. */
static void replace_with_file(uint32_t capacity, const char *name, int successes) {
    char other[160];
    snprintf(other, sizeof(other), "%s/link", dir);
    breaker_store *ost = open_quiet(other, capacity);
    breaker_config cfg = consecutive_config(1);
    breaker *o = attach(ost, name, &cfg);
    for (int i = 0; i < successes; i++)
        call_ok(o, BREAKER_SUCCESS);
    breaker_destroy(o);
    breaker_store_close(ost);
    assert_int_equal(rename(other, path), 0);
}

/* A file of the default size holding `name` with `successes` successes,
 * renamed over the path, and `st`'s check, which moves to it. */
static void replace_and_check(breaker_store *st, const char *name, int successes) {
    replace_with_file(0, name, successes);
    check_ok(st);
}

/* The file unlinked (a tmp cleaner), and `st`'s check, which makes it again
 * at the path and moves there. */
static void unlink_and_check(breaker_store *st) {
    assert_int_equal(unlink(path), 0);
    check_ok(st);
}

/* A file of one name, `only`, renamed over the path: `st`'s check moves to
 * it and cannot attach any other name there. */
static void replace_with_a_full_file(breaker_store *st, const char *only) {
    replace_with_file(1, only, 0);
    char msg[256];
    assert_int_equal(breaker_store_check(st, msg, sizeof(msg)), BREAKER_ENOSPC);
    assert_non_null(strstr(msg, "all 1 names are used"));
}

/* Unlinked, then made again at the path by "another process" (a second
 * store): the handle attached before follows, so a trip there reaches it.
 * On the old code the handle stayed on the unlinked file, closed. */
static void a_handle_follows_an_unlinked_file(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    call_ok(h, BREAKER_SUCCESS);
    unlink_and_check(st);
    assert_int_equal(access(path, F_OK), 0); /* made again (CREATE) */
    breaker_store_stats s = store_stats(st);
    assert_int_equal(s.moves, 1);
    assert_int_equal(s.forwarded, 1);
    assert_int_equal(s.stranded, 0);
    assert_int_equal(s.handles, 1);
    assert_int_equal(s.last_status, BREAKER_OK);
    /* The other process attaches to the file at the path and trips it. */
    breaker_store *other = open_quiet(path, 0);
    breaker *o = attach(other, "svc", &cfg);
    assert_int_equal(stats_of(o).successes, 0); /* the old file's counts stay there */
    call_ok(o, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(h), BREAKER_OPEN);
    breaker_permit p;
    assert_int_equal(breaker_acquire(h, &p), BREAKER_REJECTED_OPEN);
    assert_int_equal(stats_of(o).rejected_open, 1); /* h's refusal, counted in the new file */
    assert_int_equal(breaker_generation(h), breaker_generation(o));
    /* A check with nothing to do changes nothing. */
    check_ok(st);
    assert_int_equal(store_stats(st).moves, 1);
    breaker_destroy(o);
    breaker_store_close(other);
    breaker_destroy(h);
    assert_int_equal(store_stats(st).handles, 0);
    breaker_store_close(st);
}

/* Renamed over: the new file's breaker wins (its counts, its state), and
 * foreach lists its names. */
static void a_replaced_files_breaker_wins(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    call_ok(h, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(h), BREAKER_OPEN);
    replace_and_check(st, "svc", 7);
    assert_int_equal(breaker_get_state(h), BREAKER_CLOSED);
    assert_int_equal(stats_of(h).successes, 7);
    call_ok(h, BREAKER_SUCCESS);
    assert_int_equal(stats_of(h).successes, 8);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* A process that creates the name in the new file carries its open wait
 * there: a move costs no protection. */
static void an_open_breaker_stays_open_for_the_wait_it_had_left(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    cfg.open_ns = 60 * SEC;
    cfg.open_max_ns = 60 * SEC;
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    call_ok(h, BREAKER_FAILURE);
    uint64_t before = breaker_retry_after_ns(h);
    unlink_and_check(st);
    breaker_store *other = open_quiet(path, 0);
    breaker *o = attach(other, "svc", &cfg);
    assert_int_equal(breaker_get_state(o), BREAKER_OPEN);
    uint64_t left = breaker_retry_after_ns(o);
    assert_true(left > 0 && left <= before);
    assert_true(left > 30 * SEC); /* the wait carried, not a fresh 1 ns */
    breaker_destroy(o);
    breaker_store_close(other);
    /* Forced states are carried too. */
    assert_int_equal(breaker_force_open(h), BREAKER_OK);
    unlink_and_check(st);
    other = open_quiet(path, 0);
    o = attach(other, "svc", &cfg);
    assert_int_equal(breaker_get_state(o), BREAKER_FORCED_OPEN);
    breaker_destroy(o);
    breaker_store_close(other);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* The backoff level is carried too: a breaker that had backed off once
 * (its second wait twice the first) backs off again from there after the
 * move. A clock on CLOCK_MONOTONIC plus an offset the test moves (store
 * breakers must count on CLOCK_MONOTONIC). */
static _Atomic uint64_t clock_offset;
static uint64_t offset_clock(void *ctx) {
    (void)ctx;
    return monotonic_ns() + atomic_load(&clock_offset);
}

static void the_backoff_level_is_carried(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    cfg.clock = offset_clock;
    cfg.open_ns = 10 * SEC;
    cfg.open_backoff = 2;
    cfg.open_max_ns = 3600 * SEC;
    cfg.half_open_max_probes = 1;
    cfg.half_open_successes = 1;
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    call_ok(h, BREAKER_FAILURE); /* OPEN, 10 s */
    /* Past the wait by a millisecond: a block keeps its deadlines in whole
     * microseconds (rounded up), so the wait's end itself may be refused. */
    atomic_fetch_add(&clock_offset, 10 * SEC + MS);
    call_ok(h, BREAKER_FAILURE); /* the probe fails: OPEN, 20 s */
    assert_true(breaker_retry_after_ns(h) > 15 * SEC);
    unlink_and_check(st); /* this process makes the new file's breaker, OPEN for what was left */
    atomic_fetch_add(&clock_offset, 20 * SEC + MS);
    call_ok(h, BREAKER_FAILURE); /* the next probe fails: 40 s, not 20 s again */
    uint64_t wait = breaker_retry_after_ns(h);
    printf("wait after the move's failed probe: %.1f s (40 s carried, 20 s without)\n",
           (double)wait / 1e9);
    assert_true(wait > 30 * SEC);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* What operators set on a running breaker moves with it when this process
 * makes the new file's breaker: a live change of its limits (not the
 * configuration it was attached with), shadow mode, and a forced close's
 * expiry (not a forced close for ever). */
static void a_move_keeps_live_limits_shadow_mode_and_a_forced_expiry(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(2);
    cfg.clock = offset_clock;
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    breaker_config next;
    breaker_get_config(h, &next);
    next.failure_threshold = 5;
    char msg[256];
    assert_int_equal(breaker_reconfigure(h, &next, 0, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(breaker_set_shadow(h, 1), BREAKER_OK);
    assert_int_equal(breaker_force_closed_for(h, 60 * SEC), BREAKER_OK);
    unlink_and_check(st);
    assert_int_equal(store_stats(st).forwarded, 1);
    breaker_config now;
    breaker_get_config(h, &now);
    assert_int_equal(now.failure_threshold, 5);
    assert_int_equal(breaker_shadow(h), 1);
    assert_int_equal(breaker_get_state(h), BREAKER_FORCED_CLOSED);
    atomic_fetch_add(&clock_offset, 60 * SEC + MS);
    assert_int_equal(breaker_get_state(h), BREAKER_CLOSED); /* the expiry, carried */
    assert_int_equal(breaker_shadow(h), 1);
    for (int i = 0; i < 4; i++)
        call_ok(h, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(h), BREAKER_CLOSED); /* 5 to trip, not 2 */
    call_ok(h, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(h), BREAKER_OPEN);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* A permit given before the move completes on the old file; one given
 * after, through the same handle, on the new one; both answer OK. */
static void permits_complete_on_the_file_that_gave_them(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    breaker_permit before, after;
    assert_int_equal(breaker_acquire(h, &before), BREAKER_OK);
    replace_and_check(st, "svc", 0);
    assert_int_equal(breaker_acquire(h, &after), BREAKER_OK);
    assert_int_equal(breaker_complete(h, &before, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(breaker_get_state(h), BREAKER_CLOSED); /* the old file tripped, not this */
    assert_int_equal(breaker_complete(h, &after, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(breaker_get_state(h), BREAKER_OPEN);
    assert_int_equal(stats_of(h).failures, 1);
    /* A permit completed twice stays refused as ever. */
    assert_int_equal(breaker_complete(h, &after, BREAKER_FAILURE), BREAKER_ALREADY_SETTLED);
    breaker_destroy(h);
    breaker_store_close(st);
}

struct seen {
    breaker *b;
    int events;
};

static void note_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ev;
    struct seen *s = ctx;
    s->b = b;
    s->events++;
}

/* The events of a forwarded handle name the handle the user holds. */
static void events_name_the_handle_the_user_holds(void **state) {
    (void)state;
    struct seen seen = {0};
    breaker_config cfg = consecutive_config(1);
    cfg.on_event = note_event;
    cfg.event_ctx = &seen;
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    replace_and_check(st, "svc", 0);
    assert_int_equal(seen.events, 0); /* a move is no transition */
    call_ok(h, BREAKER_FAILURE);
    assert_int_equal(seen.events, 1);
    assert_ptr_equal(seen.b, h);
    breaker_store *other = open_quiet(path, 0);
    breaker *o = attach(other, "svc", &cfg);
    assert_int_equal(breaker_get_state(o), BREAKER_OPEN); /* the new file's transition */
    breaker_destroy(o);
    breaker_store_close(other);
    breaker_config got;
    breaker_get_config(h, &got);
    assert_ptr_equal(got.on_event, note_event); /* its own callbacks, still */
    breaker_destroy(h);
    breaker_store_close(st);
}

/* A new file that cannot hold the name strands the handle on the old file
 * (counted, named in the message); a later file with room takes it. */
static void a_full_file_strands_handles_until_one_has_room(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    replace_with_a_full_file(st, "taken");
    breaker_store_stats s = store_stats(st);
    assert_int_equal(s.moves, 1);
    assert_int_equal(s.stranded, 1);
    assert_int_equal(s.last_status, BREAKER_ENOSPC);
    call_ok(h, BREAKER_SUCCESS); /* still works, on the old file */
    assert_int_equal(stats_of(h).successes, 1);
    replace_and_check(st, "svc", 3);
    s = store_stats(st);
    assert_int_equal(s.moves, 2);
    assert_int_equal(s.stranded, 0);
    assert_int_equal(stats_of(h).successes, 3);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* One handle that cannot move does not hold the others back: each is tried
 * (the file at the path holds one more name, which the second handle has). */
static void each_handle_is_tried_whatever_the_ones_before_did(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    breaker_store *st = open_quiet(path, 0);
    breaker *a = attach(st, "a", &cfg);
    breaker *b = attach(st, "b", &cfg);
    replace_with_a_full_file(st, "b");
    breaker_store_stats s = store_stats(st);
    assert_int_equal(s.forwarded, 1); /* b, though a (listed first) could not */
    assert_int_equal(s.stranded, 1);
    breaker_store *o = open_quiet(path, 0);
    breaker *ob = attach(o, "b", &cfg);
    call_ok(ob, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN); /* b follows the file at the path */
    assert_int_equal(breaker_get_state(a), BREAKER_CLOSED);
    breaker_destroy(ob);
    breaker_store_close(o);
    breaker_destroy(a);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* A permit given before a move trips the abandoned block when it fails:
 * no event for it (the breaker the handle follows did not trip), and none
 * in the registry's history either. */
static void an_abandoned_blocks_transitions_are_not_reported(void **state) {
    (void)state;
    struct seen seen = {0};
    breaker_config cfg = consecutive_config(1);
    cfg.on_event = note_event;
    cfg.event_ctx = &seen;
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    breaker_permit before;
    assert_int_equal(breaker_acquire(h, &before), BREAKER_OK);
    replace_and_check(st, "svc", 0);
    assert_int_equal(breaker_complete(h, &before, BREAKER_FAILURE), BREAKER_OK);
    assert_int_equal(seen.events, 0);
    assert_int_equal(breaker_get_state(h), BREAKER_CLOSED);
    call_ok(h, BREAKER_FAILURE); /* the live breaker's trip is reported */
    assert_int_equal(seen.events, 1);
    assert_ptr_equal(seen.b, h);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* Many moves: a permit given between two early moves still completes on
 * its own block, one given now on the newest, and calls go to the newest
 * handle in one step (breaker__live follows `newest`). */
static void permits_of_every_move_complete_where_they_were_given(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1000);
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    breaker_permit early, now;
    for (int i = 0; i < 50; i++) {
        if (i == 10) assert_int_equal(breaker_acquire(h, &early), BREAKER_OK);
        replace_and_check(st, "svc", 0);
    }
    assert_int_equal(breaker_acquire(h, &now), BREAKER_OK);
    assert_int_equal(breaker_complete(h, &early, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_complete(h, &now, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(stats_of(h).successes, 1); /* the early one counted on its own file */
    assert_int_equal(breaker_complete(h, &early, BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
    assert_int_equal(store_stats(st).moves, 50);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* A registry on the store: the breaker it hands out follows the move, and
 * its listeners hear the new file's transitions. */
static int listened;
static breaker *listened_b;
static void listen(void *ctx, const breaker_registry_event *ev) {
    (void)ctx;
    if (ev->kind != BREAKER_REGISTRY_TRANSITION || strcmp(ev->name, "svc") != 0) return;
    listened++;
    listened_b = ev->b;
}

static void a_registrys_breaker_follows_the_move(void **state) {
    (void)state;
    breaker_store *st = open_quiet(path, 0);
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.defaults = consecutive_config(1);
    rc.store = st;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    assert_int_equal(breaker_registry_add_listener(reg, listen, NULL), BREAKER_OK);
    breaker *b = NULL;
    assert_int_equal(breaker_registry_get(reg, "svc", &b), BREAKER_OK);
    breaker_registry_release(reg, b);
    replace_and_check(st, "svc", 0);
    breaker_store *other = open_quiet(path, 0);
    breaker_config cfg = consecutive_config(1);
    breaker *o = attach(other, "svc", &cfg);
    call_ok(o, BREAKER_FAILURE); /* the other process trips it */
    assert_int_equal(breaker_registry_get(reg, "svc", &b), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(breaker_reset(b), BREAKER_OK); /* heard by the listener */
    assert_int_equal(breaker_get_state(o), BREAKER_CLOSED);
    assert_int_equal(listened, 1);
    assert_ptr_equal(listened_b, b); /* the registry's handle, not its forward */
    breaker_registry_release(reg, b);
    breaker_destroy(o);
    breaker_store_close(other);
    breaker_registry_destroy(reg);
    assert_int_equal(store_stats(st).handles, 0);
    breaker_store_close(st);
}

/* Two real processes, each with its store's watcher (10 ms), and a third
 * that starts after the file was unlinked (a new `breaker exec`): it trips
 * the breaker in the file at the path, and both older processes' handles
 * follow. The bound is the watcher's interval; the test allows 10 s before
 * it calls it a failure. */
static bool wait_for_state(breaker *b, enum breaker_state want) {
    for (int i = 0; i < 10000; i++) {
        if (breaker_get_state(b) == want) return true;
        usleep(1000);
    }
    return false;
}

static breaker_store *open_watched(void) {
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.check_ns = 10 * MS;
    breaker_store *st = NULL;
    char msg[256];
    if (breaker_store_open(path, &c, &st, msg, sizeof(msg)) != BREAKER_OK)
        fail_msg("open: %s", msg);
    return st;
}

static void two_processes_converge_through_their_watchers(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    int to_child[2], to_parent[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(to_parent), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(to_child[1]);
        close(to_parent[0]);
        breaker_store *cs = open_watched();
        breaker *c = NULL;
        if (breaker_store_attach(cs, "svc", &cfg, &c, NULL, 0) != BREAKER_OK) _exit(3);
        char step = 's';
        if (write(to_parent[1], &step, 1) != 1) _exit(4);
        /* The parent unlinked the file: a newcomer trips the breaker in the
         * file at the path, and this process's handle follows it there. */
        if (read(to_child[0], &step, 1) != 1) _exit(4);
        pid_t newcomer = fork();
        if (newcomer == 0) {
            /* No watcher: it needs none, and a thread started in the child
             * of a threaded process is more than ThreadSanitizer allows. */
            breaker_store *ns = open_quiet(path, 0);
            breaker *n = NULL;
            if (breaker_store_attach(ns, "svc", &cfg, &n, NULL, 0) != BREAKER_OK) _exit(3);
            breaker_permit p;
            int ok = breaker_acquire(n, &p) == BREAKER_OK &&
                     breaker_complete(n, &p, BREAKER_FAILURE) == BREAKER_OK;
            breaker_destroy(n);
            breaker_store_close(ns);
            _exit(ok ? 0 : 1);
        }
        int status = -1;
        if (newcomer < 0 || waitpid(newcomer, &status, 0) != newcomer || status != 0) _exit(6);
        bool open = false;
        for (int i = 0; i < 10000 && !open; i++) {
            open = breaker_get_state(c) == BREAKER_OPEN;
            if (!open) usleep(1000);
        }
        breaker_store_stats s;
        breaker_store_stats_get(cs, &s);
        int ok = open && s.moves == 1 && s.forwarded == 1;
        if (write(to_parent[1], &step, 1) != 1) _exit(4);
        if (read(to_child[0], &step, 1) != 1) _exit(4);
        ok = ok && breaker_get_state(c) == BREAKER_CLOSED; /* the parent's reset */
        breaker_destroy(c);
        breaker_store_close(cs);
        _exit(ok ? 0 : 1);
    }
    /* The ends the child writes and reads closed here: a child that dies
     * early is an end of file, not a wait for ever. */
    close(to_child[0]);
    close(to_parent[1]);
    breaker_store *st = open_watched();
    char step;
    assert_int_equal(read(to_parent[0], &step, 1), 1);
    breaker *h = attach(st, "svc", &cfg);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(write(to_child[1], "s", 1), 1);
    assert_int_equal(read(to_parent[0], &step, 1), 1);
    assert_true(wait_for_state(h, BREAKER_OPEN)); /* the child's trip, here */
    assert_int_equal(store_stats(st).moves, 1);
    assert_int_equal(breaker_reset(h), BREAKER_OK);
    assert_int_equal(write(to_child[1], "s", 1), 1);
    assert_int_equal(reap(pid), 0);
    breaker_destroy(h);
    breaker_store_close(st);
    close(to_child[1]);
    close(to_parent[0]);
}

/* Threads call through one handle while the file is replaced under them
 * again and again: every call is admitted and every completion accepted
 * (on whichever file gave its permit), with no data race (TSan) and no
 * use of freed memory (ASan). */
struct racer {
    breaker *b;
    atomic_bool *stop;
    unsigned long calls, bad;
};

static void *race(void *arg) {
    struct racer *r = arg;
    while (!atomic_load_explicit(r->stop, memory_order_relaxed)) {
        breaker_permit p;
        int rc = breaker_acquire(r->b, &p);
        if (rc != BREAKER_OK) {
            r->bad++;
            continue;
        }
        if (breaker_complete(r->b, &p, BREAKER_SUCCESS) != BREAKER_OK) r->bad++;
        (void)breaker_get_state(r->b);
        r->calls++;
    }
    return NULL;
}

static void calls_race_moves(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1000);
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    atomic_bool stop = false;
    struct racer r[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        r[i] = (struct racer){.b = h, .stop = &stop};
        assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < 20; i++) {
        replace_and_check(st, "svc", 0);
        usleep(2000);
    }
    atomic_store(&stop, true);
    unsigned long calls = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(r[i].bad, 0);
        calls += r[i].calls;
    }
    assert_true(calls > 0);
    breaker_store_stats s = store_stats(st);
    assert_int_equal(s.moves, 20);
    assert_int_equal(s.forwarded, 20);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* fork() while another thread moves the store (holding its lock): the
 * child's store still answers (the fork handlers take and give back every
 * store's lock). Without them a child that forked mid-move hung on its
 * first call that takes the lock; alarm() turns a hang into a failure. */
struct mover {
    breaker_store *st;
    atomic_bool stop;
    unsigned long moves;
};

static void *keep_moving(void *arg) {
    struct mover *m = arg;
    char other[160];
    snprintf(other, sizeof(other), "%s/link", dir);
    breaker_store_config c = quiet_store_config();
    while (!atomic_load(&m->stop)) {
        breaker_store *o = NULL;
        if (breaker_store_open(other, &c, &o, NULL, 0) != BREAKER_OK) continue;
        breaker_store_close(o);
        if (rename(other, path) != 0) continue;
        if (breaker_store_check(m->st, NULL, 0) == BREAKER_OK) m->moves++;
    }
    return NULL;
}

static void a_fork_during_a_move_leaves_the_childs_store_usable(void **state) {
    (void)state;
    breaker_config cfg = consecutive_config(1);
    breaker_store *st = open_quiet(path, 0);
    breaker *h = attach(st, "svc", &cfg);
    struct mover m = {.st = st};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, keep_moving, &m), 0);
    int hung = 0;
    for (int i = 0; i < 300; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            alarm(10);
            breaker_store_stats s;
            breaker_store_stats_get(st, &s);
            _exit(s.handles == 1 ? 0 : 1);
        }
        if (reap(pid) != 0) hung++;
    }
    atomic_store(&m.stop, true);
    assert_int_equal(pthread_join(t, NULL), 0);
    printf("forks during moves: 300, children that failed or hung: %d, moves: %lu\n", hung,
           m.moves);
    assert_int_equal(hung, 0);
    assert_true(m.moves > 0);
    breaker_destroy(h);
    breaker_store_close(st);
}

/* check_ns out of its range is refused, naming the field. */
static void check_ns_is_validated(void **state) {
    (void)state;
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.check_ns = 1000;
    breaker_store *st = NULL;
    char msg[256];
    assert_int_equal(breaker_store_open(path, &c, &st, msg, sizeof(msg)), BREAKER_EINVAL);
    assert_null(st);
    assert_non_null(strstr(msg, "check_ns: must be between 1 ms and 1 h"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_handle_follows_an_unlinked_file, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replaced_files_breaker_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(an_open_breaker_stays_open_for_the_wait_it_had_left, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_backoff_level_is_carried, setup, teardown),
        cmocka_unit_test_setup_teardown(a_move_keeps_live_limits_shadow_mode_and_a_forced_expiry,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(permits_complete_on_the_file_that_gave_them, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(events_name_the_handle_the_user_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(a_full_file_strands_handles_until_one_has_room, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_registrys_breaker_follows_the_move, setup, teardown),
        cmocka_unit_test_setup_teardown(each_handle_is_tried_whatever_the_ones_before_did, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_abandoned_blocks_transitions_are_not_reported, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(permits_of_every_move_complete_where_they_were_given, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(two_processes_converge_through_their_watchers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(calls_race_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(a_fork_during_a_move_leaves_the_childs_store_usable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(check_ns_is_validated, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
