/* SPDX-License-Identifier: MIT */
/*
 * harness.h - timing loops, repetitions and statistics for the benchmarks.
 *
 * A benchmark is a loop function that performs `iters` operations and returns
 * how many of them did what the case expects (an admitted permit, a refusal);
 * the harness treats any other count as a broken case and stops, so a figure
 * is never printed for a breaker that was not in the state the case claims.
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

/* The most threads a case may run at once (an oversubscribed pool). */
#define BENCH_MAX_THREADS 64

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_REPS 101
#define BENCH_MAX_REDO 30

/* Perform `iters` operations on `ctx`; @return the number that behaved as
 * expected (must equal `iters`). May run on several threads at once when the
 * case is marked thread-safe. */
typedef uint64_t bench_loop_fn(void *ctx, uint64_t iters);

/* One thing to time. */
struct bench_case {
    const char *name;               /* short identifier, used by --filter and --callgrind */
    const char *title;              /* what the table prints */
    bench_loop_fn *run;             /* the timed loop */
    void *ctx;                      /* its state (a breaker, a counter...) */
    unsigned threads;               /* 0: run on the calling thread; n: on n new threads at once */
    uint64_t iters;                 /* per thread per repetition, set by calibration */
    double samples[BENCH_MAX_REPS]; /* ns per operation, one per repetition */
    unsigned nsamples;
    unsigned redone;           /* repetitions run again: the scheduler interrupted them */
    unsigned kept_interrupted; /* repetitions kept although interrupted every time */
    /* Fixed duration (harness.c): every worker runs the loop in batches until
     * the end of one shared wall-clock window and counts what it completed.
     * The workers are `processes` forked processes or, with processes 0,
     * `threads` threads (at least one). */
    bool fixed_duration;
    unsigned processes;
    /* Processes only, a diagnostic: every forked worker but the first runs on
     * a new thread, which takes a counter stripe of its own, where the first
     * thread of every child writes the stripe its parent's thread holds. */
    bool spread_stripes;
    uint64_t duration_ns; /* the window, set by calibration */
    /* The shortest window (0: none). An oversubscribed pool needs windows of
     * many scheduler time slices, or some threads never run in one. */
    uint64_t min_duration_ns;
    /* Fixed duration, per repetition: the lowest calls per CPU-second of any
     * worker that ran at least 1 ms, against all such workers' (1: every
     * thread makes the same use of the CPU it gets). */
    double shares[BENCH_MAX_REPS];
    /* ... and the mean of those workers' calls per CPU-ns: what the workers
     * deliver when each gets an equal share of the cores, whichever the
     * scheduler favoured in the window. */
    double rates[BENCH_MAX_REPS];
    unsigned nshares;
};

/* Monotonic time in ns for the harness itself (CLOCK_MONOTONIC). */
uint64_t bench_now_ns(void);

/* Pick `c->iters` so one repetition takes about `rep_ms` milliseconds, and run
 * the loop once at that size as warm-up. */
void bench_calibrate(struct bench_case *c, double rep_ms);

/* Time one repetition and append ns/op to c->samples. For a threaded case the
 * figure is wall time over all threads' operations (inverse throughput), and
 * for a fixed-duration case the window over all workers' operations. A
 * repetition during which a thread was not running (its CPU time falls more
 * than 3% short of its wall time) is run again, up to BENCH_MAX_REDO times. */
void bench_repeat(struct bench_case *c);

/* Statistics of the samples. */
double bench_median(const struct bench_case *c);
double bench_min(const struct bench_case *c);
double bench_max(const struct bench_case *c);
/* The median of the repetitions' slowest-worker shares (1 when none). The
 * median, not the least: a VM's steal time is counted as the thread's own
 * CPU time, and one repetition's burst of it should not decide. */
double bench_share_median(const struct bench_case *c);
/* The median of the repetitions' mean worker rates (calls per CPU-ns). */
double bench_rate_median(const struct bench_case *c);

/* Abort with a message (a case that misbehaves, an allocation that fails). */
_Noreturn void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Run `c` once for `iters` operations on the calling thread: the region that
 * `valgrind --tool=callgrind --toggle-collect=bench_callgrind_region`
 * measures. Not inlined, so callgrind sees it by name. */
uint64_t bench_callgrind_region(const struct bench_case *c, uint64_t iters);

/* Keep a value alive so the compiler cannot delete the loop that made it. */
extern volatile uint64_t bench_sink;

#endif /* BENCH_HARNESS_H */
