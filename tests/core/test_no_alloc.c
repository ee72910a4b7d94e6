/* SPDX-License-Identifier: MIT */
/*
 * test_no_alloc.c - the call path allocates nothing: a million
 * acquire/complete pairs in every state, with every heap allocation in the
 * process counted.
 *
 * How allocations are counted:
 * - Normal builds (release, UBSan): this binary defines malloc, calloc,
 *   realloc, free, aligned_alloc, posix_memalign and memalign itself. The
 *   dynamic linker binds every caller in the process to the executable's
 *   definitions first, so the library (static or shared) and libc's own
 *   internal callers come here; each counts, then forwards to glibc's
 *   allocator through its __libc_* entry points.
 * - ASan/TSan builds: the sanitizer owns malloc and must not be replaced, so
 *   the test registers __sanitizer_install_malloc_and_free_hooks(), which the
 *   sanitizer's allocator calls for every allocation and free.
 * Each test first proves the counter works by counting test_breaker_create()'s
 * own allocations (it must see at least one), so a counter that silently
 * stopped counting would fail the test rather than pass it.
 */
#define _GNU_SOURCE
#include <breaker.h>

#include "test_breaker.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define PAIRS 1000000u
#define MS    UINT64_C(1000000)
#define HOUR  (UINT64_C(3600) * UINT64_C(1000) * MS)

/* ---- Counting ------------------------------------------------------------- */

static _Atomic int counting;
static _Atomic unsigned long allocations;

static void note_allocation(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SANITIZER_OWNS_MALLOC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_OWNS_MALLOC 1
#endif

#if defined(SANITIZER_OWNS_MALLOC)
/* From <sanitizer/allocator_interface.h>, which not every compiler ships;
 * the function is in every sanitizer runtime that has an allocator. */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

static void malloc_hook(const volatile void *ptr, size_t size) {
    (void)ptr;
    (void)size;
    note_allocation();
}
static void free_hook(const volatile void *ptr) { (void)ptr; }

static const char *install_counter(void) {
    if (!__sanitizer_install_malloc_and_free_hooks(malloc_hook, free_hook))
        return "the sanitizer refused the allocation hooks";
    return NULL;
}
#define COUNTER_METHOD "sanitizer allocator hooks"

#elif defined(__GLIBC__)
#include <malloc.h> /* memalign */

/* glibc's allocator under its own names. */
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *ptr);

void *malloc(size_t size) {
    note_allocation();
    return __libc_malloc(size);
}
void *calloc(size_t n, size_t size) {
    note_allocation();
    return __libc_calloc(n, size);
}
void *realloc(void *ptr, size_t size) {
    note_allocation();
    return __libc_realloc(ptr, size);
}
void *aligned_alloc(size_t align, size_t size) {
    note_allocation();
    return __libc_memalign(align, size);
}
void *memalign(size_t align, size_t size) {
    note_allocation();
    return __libc_memalign(align, size);
}
int posix_memalign(void **out, size_t align, size_t size) {
    note_allocation();
    if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(align, size);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}
void free(void *ptr) { __libc_free(ptr); }

static const char *install_counter(void) { return NULL; }
#define COUNTER_METHOD "malloc family interposed in the test binary"

#else
static const char *install_counter(void) {
    (void)note_allocation; /* nothing calls it: no counter here */
    return "no way to count allocations on this C library (needs glibc or a sanitizer)";
}
#define COUNTER_METHOD "none"
#endif

static void count_start(void) {
    atomic_store(&allocations, 0);
    atomic_store(&counting, 1);
}

static unsigned long count_stop(void) {
    atomic_store(&counting, 0);
    return atomic_load(&allocations);
}

/* ---- A clock the test moves --------------------------------------------- */

struct test_clock {
    _Atomic uint64_t now;
};

static uint64_t test_clock_read(void *ctx) {
    return atomic_load_explicit(&((struct test_clock *)ctx)->now, memory_order_relaxed);
}

static void advance(struct test_clock *c, uint64_t ns) { atomic_fetch_add(&c->now, ns); }

static unsigned long events_seen;

static void count_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    (void)ev;
    events_seen++;
}

/* Create a breaker, checking on the way that the counter sees its memory. */
static breaker *create_counted(const breaker_config *cfg) {
    breaker *b = NULL;
    count_start();
    int rc = test_breaker_create(cfg, &b);
    unsigned long n = count_stop();
    assert_int_equal(rc, BREAKER_OK);
    if (n == 0)
        fail_msg("the allocation counter (%s) did not see test_breaker_create() allocate: it "
                 "cannot prove anything",
                 COUNTER_METHOD);
    return b;
}

/* Check the count after releasing `b`, so a failure leaks nothing. */
static void expect_no_allocations(breaker *b, unsigned long n, const char *what) {
    test_breaker_destroy(b);
    if (n != 0) fail_msg("%s: %lu heap allocations, expected none", what, n);
}

/* ---- Closed state, real clock: acquire + complete ----------------------- */

static void closed_pairs(enum breaker_trip trip, uint64_t slow_call_ns, unsigned fail_every) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = trip;
    cfg.slow_call_ns = slow_call_ns;
    breaker *b = create_counted(&cfg);
    unsigned long admitted = 0, recorded = 0;
    count_start();
    for (unsigned i = 0; i < PAIRS; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) != BREAKER_OK) continue;
        admitted++;
        enum breaker_outcome o =
            fail_every != 0 && i % fail_every == 0 ? BREAKER_FAILURE : BREAKER_SUCCESS;
        recorded += breaker_complete(b, &p, o) == BREAKER_OK;
    }
    unsigned long n = count_stop();
    assert_int_equal(admitted, PAIRS);
    assert_int_equal(recorded, PAIRS);
    enum breaker_state st = breaker_get_state(b);
    expect_no_allocations(b, n, breaker_trip_name(trip));
    assert_int_equal(st, BREAKER_CLOSED);
}

static void closed_consecutive_allocates_nothing(void **state) {
    (void)state;
    closed_pairs(BREAKER_TRIP_CONSECUTIVE, 0, 0);
}

static void closed_count_window_allocates_nothing(void **state) {
    (void)state;
    closed_pairs(BREAKER_TRIP_COUNT_WINDOW, 0, 0);
}

static void closed_time_window_allocates_nothing(void **state) {
    (void)state;
    closed_pairs(BREAKER_TRIP_TIME_WINDOW, 0, 0);
}

static void closed_with_slow_call_timing_allocates_nothing(void **state) {
    (void)state;
    closed_pairs(BREAKER_TRIP_CONSECUTIVE, HOUR, 0);
    closed_pairs(BREAKER_TRIP_COUNT_WINDOW, HOUR, 0);
    closed_pairs(BREAKER_TRIP_TIME_WINDOW, HOUR, 0);
}

static void closed_with_failures_below_threshold_allocates_nothing(void **state) {
    (void)state;
    closed_pairs(BREAKER_TRIP_CONSECUTIVE, 0, 20);
    closed_pairs(BREAKER_TRIP_COUNT_WINDOW, 0, 20);
    closed_pairs(BREAKER_TRIP_TIME_WINDOW, 0, 20);
}

/* ---- Refusals --------------------------------------------------------------*/

static void trip(breaker *b) {
    for (int i = 0; i < 100 && breaker_get_state(b) == BREAKER_CLOSED; i++) {
        breaker_permit p;
        assert_int_equal(breaker_acquire(b, &p), BREAKER_OK);
        (void)breaker_complete(b, &p, BREAKER_FAILURE);
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
}

/* A million refused acquires. @return the allocations they made. */
static unsigned long refusals(breaker *b, int expect, unsigned long *refused_out) {
    unsigned long refused = 0;
    count_start();
    for (unsigned i = 0; i < PAIRS; i++) {
        breaker_permit p;
        int rc = breaker_acquire(b, &p);
        refused += rc == expect;
        /* A refused permit must not be completed; doing so is an error the
         * library reports, and the report must not allocate either. */
        if (rc != BREAKER_OK && i % 64 == 0)
            refused -= breaker_complete(b, &p, 0) != BREAKER_EINVAL;
    }
    *refused_out = refused;
    return count_stop();
}

static void open_refusal_allocates_nothing(void **state) {
    (void)state;
    breaker_config cfg;
    breaker_config_init(&cfg); /* the real clock, as in production */
    cfg.open_ns = HOUR;
    cfg.open_max_ns = HOUR;
    breaker *b = create_counted(&cfg);
    trip(b);
    unsigned long refused;
    unsigned long n = refusals(b, BREAKER_REJECTED_OPEN, &refused);
    enum breaker_state st = breaker_get_state(b);
    expect_no_allocations(b, n, "open refusal");
    assert_int_equal(refused, PAIRS);
    assert_int_equal(st, BREAKER_OPEN);
}

static void half_open_refusal_allocates_nothing(void **state) {
    (void)state;
    struct test_clock clock = {MS};
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.clock = test_clock_read;
    cfg.clock_ctx = &clock;
    cfg.half_open_max_probes = 1;
    breaker *b = create_counted(&cfg);
    trip(b);
    advance(&clock, HOUR);
    breaker_permit probe;
    assert_int_equal(breaker_acquire(b, &probe), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_HALF_OPEN);
    unsigned long refused;
    unsigned long n = refusals(b, BREAKER_REJECTED_HALF_OPEN, &refused);
    int rc = breaker_complete(b, &probe, BREAKER_SUCCESS);
    expect_no_allocations(b, n, "half-open refusal");
    assert_int_equal(refused, PAIRS);
    assert_int_equal(rc, BREAKER_OK);
}

static void forced_states_allocate_nothing(void **state) {
    (void)state;
    breaker *b = create_counted(NULL);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    unsigned long refused;
    unsigned long n_open = refusals(b, BREAKER_REJECTED_OPEN, &refused);
    assert_int_equal(breaker_force_closed(b), BREAKER_OK);
    unsigned long ok = 0;
    count_start();
    for (unsigned i = 0; i < PAIRS; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) == BREAKER_OK)
            ok += breaker_complete(b, &p, BREAKER_FAILURE) == BREAKER_OK;
    }
    unsigned long n = count_stop();
    enum breaker_state st = breaker_get_state(b);
    expect_no_allocations(b, n_open + n, "forced open and forced closed");
    assert_int_equal(refused, PAIRS);
    assert_int_equal(ok, PAIRS);
    assert_int_equal(st, BREAKER_FORCED_CLOSED);
}

/* ---- Probes and every transition ------------------------------------------
 * One cycle trips the breaker, waits, and probes it; probes succeed, fail,
 * come back slow, are ignored or hang past their timeout, so every
 * transition, the event callback, the stats snapshot and the manual controls
 * run inside the counted region. */
static void probe_cycles_allocate_nothing(void **state) {
    (void)state;
    struct test_clock clock = {MS};
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    cfg.open_ns = MS;
    cfg.open_max_ns = MS; /* no backoff growth: every wait is 1 ms */
    cfg.half_open_max_probes = 2;
    cfg.half_open_successes = 2;
    cfg.probe_timeout_ns = 10 * MS;
    cfg.clock = test_clock_read;
    cfg.clock_ctx = &clock;
    cfg.on_event = count_event;
    breaker *b = create_counted(&cfg);
    unsigned long pairs = 0, probes = 0, bad = 0;
    events_seen = 0;
    count_start();
    for (unsigned cycle = 0; pairs < PAIRS; cycle++) {
        breaker_permit p, q;
        /* Trip: one failure. */
        bad += breaker_acquire(b, &p) != BREAKER_OK;
        bad += breaker_complete(b, &p, BREAKER_FAILURE) != BREAKER_OK;
        pairs++;
        advance(&clock, 2 * MS);
        /* Two probes at once (max_probes 2). */
        bad += breaker_acquire(b, &p) != BREAKER_OK;
        bad += breaker_acquire(b, &q) != BREAKER_OK;
        probes += 2;
        switch (cycle % 4) {
        case 0: /* both succeed: closes */
            bad += breaker_complete(b, &p, BREAKER_SUCCESS) != BREAKER_OK;
            bad += breaker_complete(b, &q, BREAKER_SUCCESS) != BREAKER_OK;
            break;
        case 1: /* one fails: reopens; the other is stale */
            bad += breaker_complete(b, &p, BREAKER_FAILURE) != BREAKER_OK;
            bad += breaker_complete(b, &q, BREAKER_SUCCESS) != BREAKER_STALE;
            break;
        case 2: /* one ignored, one hangs past its timeout */
            bad += breaker_complete(b, &p, BREAKER_IGNORED) != BREAKER_OK;
            advance(&clock, 20 * MS);
            bad += breaker_get_state(b) != BREAKER_OPEN;
            bad += breaker_complete(b, &q, BREAKER_SUCCESS) != BREAKER_STALE;
            break;
        default: { /* a duplicate completion, then the operator steps in */
            bad += breaker_complete(b, &p, BREAKER_SUCCESS) != BREAKER_OK;
            bad += breaker_complete(b, &p, BREAKER_SUCCESS) != BREAKER_ALREADY_SETTLED;
            bad += breaker_complete(b, &q, BREAKER_CANCELLED) != BREAKER_OK;
            breaker_stats st;
            bad += breaker_stats_get(b, &st) != BREAKER_OK;
            bad += breaker_retry_after_ns(b) == UINT64_MAX;
            bad += breaker_force_open(b) != BREAKER_OK;
            bad += breaker_reset(b) != BREAKER_OK;
            break;
        }
        }
        pairs += 2;
        if (breaker_get_state(b) != BREAKER_CLOSED) {
            /* Close it again for the next cycle: wait, then two good probes. */
            advance(&clock, 2 * MS);
            for (int i = 0; i < 2; i++) {
                bad += breaker_acquire(b, &p) != BREAKER_OK;
                bad += breaker_complete(b, &p, BREAKER_SUCCESS) != BREAKER_OK;
                pairs++;
                probes++;
            }
        }
        bad += breaker_get_state(b) != BREAKER_CLOSED;
    }
    unsigned long n = count_stop();
    expect_no_allocations(b, n, "probe cycles");
    assert_int_equal(bad, 0);
    assert_true(probes >= PAIRS / 2);
    assert_true(events_seen >= PAIRS / 2);
}

/* ctest's SKIP_RETURN_CODE (tests/core/perf.cmake). */
#define EXIT_SKIPPED 77

/* @return NULL if the counter sees this binary's own allocations, else why
 * not. Under valgrind, for one, the tool replaces malloc everywhere, this
 * binary's definitions included. */
static const char *counter_works(void) {
    const char *why = install_counter();
    if (why != NULL) return why;
    /* Through pointers: a direct call here could be inlined from the
     * definitions above and count even where the symbols are replaced.
     * (aligned_alloc is left out: GCC 12's TSan runtime does not call the
     * hooks for it. The release and ASan runs count it.) */
    void *(*volatile m)(size_t) = malloc;
    void *(*volatile c)(size_t, size_t) = calloc;
    void (*volatile f)(void *) = free;
    count_start();
    f(m(24));
    f(c(1, 24));
    if (count_stop() < 2)
        return "malloc is replaced by a tool (valgrind?), so this binary cannot count "
               "allocations; run it natively or under ASan/TSan";
    return NULL;
}

int main(void) {
    const char *why = counter_works();
    if (why != NULL) {
        printf("test_no_alloc: SKIPPED: %s\n", why);
        return EXIT_SKIPPED;
    }
    printf("test_no_alloc: counting allocations with the %s; %u pairs per state\n", COUNTER_METHOD,
           PAIRS);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(closed_consecutive_allocates_nothing),
        cmocka_unit_test(closed_count_window_allocates_nothing),
        cmocka_unit_test(closed_time_window_allocates_nothing),
        cmocka_unit_test(closed_with_slow_call_timing_allocates_nothing),
        cmocka_unit_test(closed_with_failures_below_threshold_allocates_nothing),
        cmocka_unit_test(open_refusal_allocates_nothing),
        cmocka_unit_test(half_open_refusal_allocates_nothing),
        cmocka_unit_test(forced_states_allocate_nothing),
        cmocka_unit_test(probe_cycles_allocate_nothing),
    };
    return cmocka_run_group_tests_name("no_alloc", tests, NULL, NULL);
}
