/* SPDX-License-Identifier: MIT */
/*
 * test_reclaim.c - the reclamation primitive of the registry (read sections
 * and grace periods, src/registry/reclaim.h), on its own: a grace period
 * waits for the readers that were inside when it began and for no one else,
 * and under stress no reader ever sees an object that was freed.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include "registry/reclaim.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A writer thread that runs one grace period and says when it returned. */
struct writer {
    struct breaker__reclaim *r;
    _Atomic int started;
    _Atomic int done;
};

static void *writer_sync(void *arg) {
    struct writer *w = arg;
    atomic_store(&w->started, 1);
    breaker__reclaim_synchronize(w->r);
    atomic_store(&w->done, 1);
    return NULL;
}

static void start_writer(struct writer *w, struct breaker__reclaim *r, pthread_t *t) {
    w->r = r;
    atomic_init(&w->started, 0);
    atomic_init(&w->done, 0);
    assert_int_equal(pthread_create(t, NULL, writer_sync, w), 0);
    while (!atomic_load(&w->started))
        sched_yield();
}

static void synchronize_without_readers_returns(void **state) {
    (void)state;
    struct breaker__reclaim r;
    breaker__reclaim_init(&r);
    for (int i = 0; i < 1000; i++)
        breaker__reclaim_synchronize(&r);
    /* And a section entered and left between grace periods holds nothing. */
    breaker__reclaim_leave(breaker__reclaim_enter(&r));
    breaker__reclaim_synchronize(&r);
}

static void reader_inside_a_section_delays_synchronize_until_it_leaves(void **state) {
    (void)state;
    struct breaker__reclaim r;
    breaker__reclaim_init(&r);
    _Atomic uint64_t *rs = breaker__reclaim_enter(&r);
    struct writer w;
    pthread_t t;
    start_writer(&w, &r, &t);
    sleep_ms(100);
    assert_int_equal(atomic_load(&w.done), 0); /* still waiting for us */
    breaker__reclaim_leave(rs);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(atomic_load(&w.done), 1);
}

/* Readers on other threads, parked inside a section until told to leave. */
struct parked {
    struct breaker__reclaim *r;
    _Atomic int inside;
    _Atomic int leave;
};

static void *parked_reader(void *arg) {
    struct parked *p = arg;
    _Atomic uint64_t *rs = breaker__reclaim_enter(p->r);
    atomic_store(&p->inside, 1);
    while (!atomic_load(&p->leave))
        sched_yield();
    breaker__reclaim_leave(rs);
    return NULL;
}

static void synchronize_returns_once_the_last_reader_leaves(void **state) {
    (void)state;
    enum { READERS = 4 };
    struct breaker__reclaim r;
    breaker__reclaim_init(&r);
    struct parked p[READERS];
    pthread_t rt[READERS];
    for (int i = 0; i < READERS; i++) {
        p[i].r = &r;
        atomic_init(&p[i].inside, 0);
        atomic_init(&p[i].leave, 0);
        assert_int_equal(pthread_create(&rt[i], NULL, parked_reader, &p[i]), 0);
        while (!atomic_load(&p[i].inside))
            sched_yield();
    }
    struct writer w;
    pthread_t wt;
    start_writer(&w, &r, &wt);
    for (int i = 0; i < READERS; i++) {
        sleep_ms(20);
        assert_int_equal(atomic_load(&w.done), 0); /* readers i.. are still inside */
        atomic_store(&p[i].leave, 1);
        assert_int_equal(pthread_join(rt[i], NULL), 0);
    }
    assert_int_equal(pthread_join(wt, NULL), 0);
    assert_int_equal(atomic_load(&w.done), 1);
}

static void reader_entering_after_the_flip_does_not_delay_synchronize(void **state) {
    (void)state;
    struct breaker__reclaim r;
    breaker__reclaim_init(&r);
    _Atomic uint64_t *old = breaker__reclaim_enter(&r);
    unsigned e0 = atomic_load(&r.epoch);
    struct writer w;
    pthread_t t;
    start_writer(&w, &r, &t);
    while (atomic_load(&r.epoch) == e0) /* the grace period has begun */
        sched_yield();
    struct parked late = {.r = &r};
    atomic_init(&late.inside, 0);
    atomic_init(&late.leave, 0);
    pthread_t lt;
    assert_int_equal(pthread_create(&lt, NULL, parked_reader, &late), 0);
    while (!atomic_load(&late.inside))
        sched_yield();
    breaker__reclaim_leave(old);
    /* Returns although `late` is still inside: it started after the unlink. */
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(atomic_load(&w.done), 1);
    atomic_store(&late.leave, 1);
    assert_int_equal(pthread_join(lt, NULL), 0);
}

/* ---- Stress: readers dereference what a writer unlinks and frees ----------- */

#define OBJ_MAGIC UINT64_C(0x5245434c41494d21)
#define CELLS     8

struct obj {
    uint64_t magic; /* OBJ_MAGIC while reachable; poisoned before free */
    uint64_t value;
    uint64_t check; /* ~value */
};

struct stress {
    struct breaker__reclaim r;
    _Atomic(struct obj *) cells[CELLS];
    _Atomic int stop;
    _Atomic uint64_t bad;   /* reads of a poisoned or torn object */
    _Atomic uint64_t reads; /* objects dereferenced */
    _Atomic int started;    /* readers running */
};

static struct obj *obj_new(uint64_t v) {
    struct obj *o = malloc(sizeof(*o));
    assert_non_null(o);
    o->magic = OBJ_MAGIC;
    o->value = v;
    o->check = ~v;
    return o;
}

static void *stress_reader(void *arg) {
    struct stress *s = arg;
    uint64_t reads = 0, bad = 0;
    atomic_fetch_add(&s->started, 1);
    for (unsigned i = 0; !atomic_load_explicit(&s->stop, memory_order_relaxed); i++) {
        _Atomic uint64_t *rs = breaker__reclaim_enter(&s->r);
        /* Acquire pairs with the writer's release exchange: the object is
         * fully written. */
        struct obj *o = atomic_load_explicit(&s->cells[i % CELLS], memory_order_acquire);
        if (o != NULL) {
            if (o->magic != OBJ_MAGIC || o->check != ~o->value) bad++;
            if ((i & 63) == 0) sched_yield(); /* stretch some sections */
            if (o->magic != OBJ_MAGIC || o->check != ~o->value) bad++;
            reads++;
        }
        breaker__reclaim_leave(rs);
        if ((i & 1023) == 1023) { /* progress, for the writer to see */
            atomic_fetch_add_explicit(&s->reads, reads, memory_order_relaxed);
            reads = 0;
        }
    }
    atomic_fetch_add(&s->reads, reads);
    atomic_fetch_add(&s->bad, bad);
    return NULL;
}

static void readers_never_see_an_object_freed_after_a_grace_period(void **state) {
    (void)state;
    /* At least ROUNDS grace periods, and on until the readers have made
     * MIN_READS dereferences, so that a slow machine still races them. */
    enum { READERS = 3, ROUNDS = 20000, MIN_READS = 200000 };
    struct stress *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    breaker__reclaim_init(&s->r);
    for (int i = 0; i < CELLS; i++)
        atomic_init(&s->cells[i], obj_new((uint64_t)i));
    atomic_init(&s->stop, 0);
    atomic_init(&s->bad, 0);
    atomic_init(&s->reads, 0);
    atomic_init(&s->started, 0);
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, stress_reader, s), 0);

    /* The writer: unlink (replace, or empty every other round), wait for a
     * grace period, poison, free. A reader still holding the old object
     * would see the poison (and ASan the free). */
    while (atomic_load(&s->started) < READERS)
        sched_yield();
    for (uint64_t round = 0;
         round < ROUNDS || atomic_load_explicit(&s->reads, memory_order_relaxed) < MIN_READS;
         round++) {
        struct obj *fresh = round % 2 == 0 ? obj_new(round) : NULL;
        struct obj *old =
            atomic_exchange_explicit(&s->cells[round % CELLS], fresh, memory_order_acq_rel);
        breaker__reclaim_synchronize(&s->r);
        if (old != NULL) {
            old->magic = 0;
            old->check = old->value;
            free(old);
        }
    }
    atomic_store(&s->stop, 1);
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(atomic_load(&s->bad), 0);
    assert_true(atomic_load(&s->reads) >= MIN_READS);
    for (int i = 0; i < CELLS; i++)
        free(atomic_load(&s->cells[i]));
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(synchronize_without_readers_returns),
        cmocka_unit_test(reader_inside_a_section_delays_synchronize_until_it_leaves),
        cmocka_unit_test(synchronize_returns_once_the_last_reader_leaves),
        cmocka_unit_test(reader_entering_after_the_flip_does_not_delay_synchronize),
        cmocka_unit_test(readers_never_see_an_object_freed_after_a_grace_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
