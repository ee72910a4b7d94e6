/* SPDX-License-Identifier: MIT */
/*
 * harness.c - timing, calibration and statistics for the benchmarks.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "common/time_ns.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile uint64_t bench_sink;

uint64_t bench_now_ns(void) { return breaker__clock_ns(CLOCK_MONOTONIC); }

void bench_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* CPU time of the calling thread: a repetition whose wall time exceeds it
 * was interrupted (the machine is shared with other jobs). */
static uint64_t thread_cpu_ns(void) { return breaker__clock_ns(CLOCK_THREAD_CPUTIME_ID); }

/* Interrupted: more than 3% of the wall time spent not running. */
static bool was_interrupted(uint64_t wall, uint64_t cpu) { return wall > cpu + wall / 32; }

/* ---- Threads ---------------------------------------------------------------
 * Every thread of a threaded repetition waits at a barrier, then runs the
 * same number of operations on the shared context. The repetition's time is
 * from the earliest start to the latest end. */
struct worker {
    pthread_t tid;
    const struct bench_case *c;
    pthread_barrier_t *start;
    uint64_t t0, t1, cpu, ok;
};

static void *worker_main(void *arg) {
    struct worker *w = arg;
    pthread_barrier_wait(w->start);
    uint64_t c0 = thread_cpu_ns();
    w->t0 = bench_now_ns();
    w->ok = w->c->run(w->c->ctx, w->c->iters);
    w->t1 = bench_now_ns();
    w->cpu = thread_cpu_ns() - c0;
    return NULL;
}

/* @return elapsed ns for one repetition of `c` at c->iters per thread;
 * `*interrupted` says whether a thread lost its core meanwhile, or the
 * threads did not run at the same time. */
static uint64_t run_once(const struct bench_case *c, bool *interrupted) {
    if (c->threads == 0) {
        uint64_t c0 = thread_cpu_ns();
        uint64_t t0 = bench_now_ns();
        uint64_t ok = c->run(c->ctx, c->iters);
        uint64_t t1 = bench_now_ns();
        uint64_t cpu = thread_cpu_ns() - c0;
        if (ok != c->iters)
            bench_die("case %s: %llu of %llu operations did not behave as expected", c->name,
                      (unsigned long long)(c->iters - ok), (unsigned long long)c->iters);
        *interrupted = was_interrupted(t1 - t0, cpu);
        return t1 - t0;
    }
    struct worker w[BENCH_MAX_THREADS];
    unsigned n = c->threads > BENCH_MAX_THREADS ? BENCH_MAX_THREADS : c->threads;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, n);
    for (unsigned i = 0; i < n; i++) {
        w[i] = (struct worker){.c = c, .start = &start};
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0)
            bench_die("case %s: pthread_create failed", c->name);
    }
    uint64_t t0 = UINT64_MAX, t1 = 0;
    *interrupted = false;
    for (unsigned i = 0; i < n; i++) {
        pthread_join(w[i].tid, NULL);
        *interrupted |= was_interrupted(w[i].t1 - w[i].t0, w[i].cpu);
        if (w[i].ok != c->iters)
            bench_die("case %s: thread %u: %llu operations did not behave as expected", c->name, i,
                      (unsigned long long)(c->iters - w[i].ok));
        if (w[i].t0 < t0) t0 = w[i].t0;
        if (w[i].t1 > t1) t1 = w[i].t1;
    }
    pthread_barrier_destroy(&start);
    /* More threads than cores (an oversubscribed pool) cannot all run at
     * once: taking turns is what such a case measures, not noise. */
    if (n > 2) {
        *interrupted = false;
        return t1 - t0;
    }
    /* Threads that ran one after the other also lost a core. */
    for (unsigned i = 0; i < n; i++)
        *interrupted |= was_interrupted(t1 - t0, w[i].t1 - w[i].t0);
    return t1 - t0;
}

void bench_calibrate(struct bench_case *c, double rep_ms) {
    uint64_t target = (uint64_t)(rep_ms * 1e6);
    c->iters = 1000;
    bool interrupted;
    for (;;) {
        uint64_t t = run_once(c, &interrupted);
        if (t >= target / 8 || c->iters >= (UINT64_C(1) << 34)) {
            double scale = (double)target / (double)(t ? t : 1);
            uint64_t n = (uint64_t)((double)c->iters * scale);
            c->iters = n < 1000 ? 1000 : n;
            break;
        }
        c->iters *= 4;
    }
    (void)run_once(c, &interrupted); /* warm-up at the final size */
}

void bench_repeat(struct bench_case *c) {
    bool interrupted;
    uint64_t t = run_once(c, &interrupted);
    /* Redo a repetition that the scheduler interrupted: its time is the other
     * jobs' as much as ours. After BENCH_MAX_REDO tries keep it, and say so. */
    for (unsigned i = 0; interrupted && i < BENCH_MAX_REDO; i++) {
        c->redone++;
        t = run_once(c, &interrupted);
    }
    c->kept_interrupted += interrupted;
    if (c->nsamples < BENCH_MAX_REPS)
        c->samples[c->nsamples++] =
            (double)t / ((double)c->iters * (c->threads == 0                  ? 1
                                             : c->threads > BENCH_MAX_THREADS ? BENCH_MAX_THREADS
                                                                              : c->threads));
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(const struct bench_case *c) {
    if (c->nsamples == 0) return 0.0;
    double tmp[BENCH_MAX_REPS];
    unsigned n = c->nsamples;
    memcpy(tmp, c->samples, n * sizeof(double));
    qsort(tmp, n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2.0;
}

double bench_min(const struct bench_case *c) {
    double m = c->nsamples ? c->samples[0] : 0.0;
    for (unsigned i = 1; i < c->nsamples; i++)
        if (c->samples[i] < m) m = c->samples[i];
    return m;
}

double bench_max(const struct bench_case *c) {
    double m = c->nsamples ? c->samples[0] : 0.0;
    for (unsigned i = 1; i < c->nsamples; i++)
        if (c->samples[i] > m) m = c->samples[i];
    return m;
}

__attribute__((noinline)) uint64_t bench_callgrind_region(const struct bench_case *c,
                                                          uint64_t iters) {
    return c->run(c->ctx, iters);
}
