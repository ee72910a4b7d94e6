/* SPDX-License-Identifier: MIT */
/*
 * cases.h - the loops that the benchmark times: hardware baselines
 * (baselines.c) and breaker calls in each state (cases.c).
 */
#ifndef BENCH_CASES_H
#define BENCH_CASES_H

#include "harness.h"

#include <breaker.h>

/* ---- Baselines (baselines.c): ctx is unused. ----------------------------- */
bench_loop_fn base_indirect_call;    /* call through a pointer to an empty function */
bench_loop_fn base_fetch_add;        /* relaxed atomic_fetch_add on a private line */
bench_loop_fn base_atomic_load;      /* acquire atomic_load (what the state word gets) */
bench_loop_fn base_clock;            /* clock_gettime(CLOCK_MONOTONIC) */
bench_loop_fn base_clock_coarse;     /* clock_gettime(CLOCK_MONOTONIC_COARSE) */
bench_loop_fn base_mutex;            /* pthread_mutex_lock + unlock, uncontended */
bench_loop_fn base_coarse_fetch_add; /* coarse clock read + fetch_add */
bench_loop_fn base_clock_fetch_add;  /* precise clock read + fetch_add */
bench_loop_fn base_coarse_load;      /* coarse clock read + atomic_load */
bench_loop_fn base_clock_load;       /* precise clock read + atomic_load */

/* Resolution of CLOCK_MONOTONIC_COARSE in ns, 0 if it has none. */
uint64_t bench_coarse_resolution_ns(void);

/* ---- Floors (floors.c): the least work the public contract allows, for the
 * three cases with time targets. Single-threaded; ctx is unused. ----------- */
bench_loop_fn floor_closed_consecutive;
bench_loop_fn floor_closed_time;
bench_loop_fn floor_open;

/* ---- Breaker cases (cases.c) ---------------------------------------------- */

/* What a breaker case context holds. */
struct breaker_case {
    breaker *b;
    int expect;           /* the status every acquire must return */
    unsigned fail_every;  /* closed: complete every n-th call with FAILURE, 0 = never */
    breaker_permit probe; /* half-open: the outstanding probe that fills the slot */
};

/* acquire + complete(SUCCESS), every call admitted. */
bench_loop_fn case_closed;
/* acquire + complete, every fail_every-th call a FAILURE, none tripping. */
bench_loop_fn case_closed_failures;
/* acquire only, every call refused with ctx->expect. */
bench_loop_fn case_refused;

/* Build a breaker for a case; each aborts the program if the breaker is not
 * in the intended state afterwards. Configuration is breaker_config_init()
 * plus what the name says. */
struct breaker_case *make_closed(enum breaker_trip trip, int slow_calls);
struct breaker_case *make_closed_checked(enum breaker_trip trip);
struct breaker_case *make_closed_failures(enum breaker_trip trip, unsigned fail_every);
struct breaker_case *make_open(void);
struct breaker_case *make_half_open(void);
struct breaker_case *make_forced_open(void);
void breaker_case_free(struct breaker_case *c);

/* What the makers above use, for the same breakers in a store
 * (store_cases.c): the configurations of make_closed() and make_open(),
 * tripping a breaker so configured, and the state check. */
void config_closed(breaker_config *cfg, enum breaker_trip trip, int slow_calls);
void config_open(breaker_config *cfg);
void case_trip(struct breaker_case *c);
void case_expect_state(const struct breaker_case *c, enum breaker_state want, const char *what);

/* ---- Store-backed cases (store_cases.c) ------------------------------------
 * The same breakers attached by name in a store file (breaker/store.h), the
 * file in a new directory under /tmp that an atexit handler removes (in the
 * process that made it, not in the bench's forked workers). The loops are
 * case_closed and case_refused. */
struct breaker_case *make_store_closed(enum breaker_trip trip);
struct breaker_case *make_store_open(void);

#ifdef BENCH_HAVE_FLEET
/* ---- Fleet-backed cases (fleet_cases.c, when breaker_redis is built) -------
 * The same breakers attached through a fleet handle (breaker/redis.h) and
 * called through breaker_redis_acquire()/breaker_redis_complete(). */
struct breaker_case *make_fleet_closed(enum breaker_trip trip);
struct breaker_case *make_fleet_open(void);
bench_loop_fn case_fleet_closed;  /* as case_closed */
bench_loop_fn case_fleet_refused; /* as case_refused */
/* 1 when the fleet handle reached its redis-server (else it is degraded). */
int fleet_bench_connected(void);
#endif

#endif /* BENCH_CASES_H */
