/* SPDX-License-Identifier: MIT */
/*
 * harness.c - timing, calibration and statistics for the benchmarks.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "common/time_ns.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* The cores the benchmark may use: a case with more threads than these
 * takes turns, which is what it measures. */
static unsigned online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}

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

/* ---- Fixed duration -------------------------------------------------------
 * Processes cannot be joined with their results, and a fixed number of
 * operations per process lets one that started late run alone at the end.
 * So every worker (a forked process, or a thread when threads are measured
 * the same way for comparison) warms up, writes a byte to the ready pipe and
 * blocks on the go pipe; when all are ready the parent picks a start time
 * START_LEAD_NS ahead and sends it to each; each spins until then, runs the
 * loop in batches until start + duration and writes its operations, CPU time
 * and end time to the report pipe. The repetition's figure is the window
 * (start to the latest end) over all workers' operations; a worker whose CPU
 * time falls 3% short of its time from the start to its end was not running
 * for part of the window, and the repetition is redone. */
#define DURATION_BATCH 256
#define START_LEAD_NS  UINT64_C(500000)

/* What a fixed-duration repetition says besides its time: the evenness of
 * its workers (bench_case.shares) and their operations and CPU time. */
struct rep_extra {
    double share, mean_rate;
};

struct duration_report {
    uint64_t ops, ok, cpu_ns, end_ns;
};

struct duration_worker {
    const struct bench_case *c;
    int ready_fd, go_fd, report_fd;
    pthread_t tid;
};

static void write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) bench_die("write to a bench pipe: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

static void read_all(int fd, void *buf, size_t len) {
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) bench_die("read from a bench pipe: %s", n ? strerror(errno) : "closed");
        p += n;
        len -= (size_t)n;
    }
}

static void duration_work(const struct duration_worker *w) {
    const struct bench_case *c = w->c;
    /* Warm up: a forked child's copy-on-write faults, the thread's stripe. */
    if (c->run(c->ctx, 4 * DURATION_BATCH) != 4 * DURATION_BATCH)
        bench_die("case %s: warm-up misbehaved", c->name);
    write_all(w->ready_fd, "r", 1);
    uint64_t start;
    read_all(w->go_fd, &start, sizeof(start));
    while (bench_now_ns() < start) {
    }
    uint64_t c0 = thread_cpu_ns();
    uint64_t end = start + c->duration_ns, now;
    struct duration_report rep = {0};
    do {
        rep.ok += c->run(c->ctx, DURATION_BATCH);
        rep.ops += DURATION_BATCH;
        now = bench_now_ns();
    } while (now < end);
    rep.cpu_ns = thread_cpu_ns() - c0;
    rep.end_ns = now;
    write_all(w->report_fd, &rep, sizeof(rep));
}

static void *duration_thread(void *arg) {
    duration_work(arg);
    return NULL;
}

/* @return the window in ns of one fixed-duration repetition of `c`, with the
 * workers' total operations in `*ops`. */
static uint64_t run_duration(const struct bench_case *c, bool *interrupted, uint64_t *ops,
                             struct rep_extra *extra) {
    unsigned n = c->processes ? c->processes : c->threads ? c->threads : 1;
    if (n > BENCH_MAX_THREADS) n = BENCH_MAX_THREADS;
    int ready[2], go[2], report[2];
    if (pipe(ready) != 0 || pipe(go) != 0 || pipe(report) != 0)
        bench_die("case %s: pipe: %s", c->name, strerror(errno));
    struct duration_worker w[BENCH_MAX_THREADS];
    pid_t pid[BENCH_MAX_THREADS];
    for (unsigned i = 0; i < n; i++) {
        w[i] = (struct duration_worker){
            .c = c, .ready_fd = ready[1], .go_fd = go[0], .report_fd = report[1]};
        if (c->processes) {
            fflush(NULL); /* nothing buffered is written twice */
            pid[i] = fork();
            if (pid[i] < 0) bench_die("case %s: fork: %s", c->name, strerror(errno));
            if (pid[i] == 0) {
                pthread_t t;
                if (c->spread_stripes && i > 0) {
                    if (pthread_create(&t, NULL, duration_thread, &w[i]) != 0)
                        bench_die("case %s: pthread_create failed", c->name);
                    pthread_join(t, NULL);
                } else {
                    duration_work(&w[i]);
                }
                _exit(0); /* not exit(): the parent's atexit handlers are the parent's */
            }
        } else if (pthread_create(&w[i].tid, NULL, duration_thread, &w[i]) != 0) {
            bench_die("case %s: pthread_create failed", c->name);
        }
    }
    if (c->processes) {
        /* Only the children write these now: one that dies closes its end,
         * and the reads below see it instead of waiting for ever. */
        close(ready[1]);
        close(report[1]);
        ready[1] = report[1] = -1;
    }
    char byte[BENCH_MAX_THREADS];
    read_all(ready[0], byte, n);
    uint64_t start[BENCH_MAX_THREADS];
    start[0] = bench_now_ns() + START_LEAD_NS;
    for (unsigned i = 1; i < n; i++)
        start[i] = start[0];
    write_all(go[1], start, n * sizeof(start[0]));
    uint64_t end = start[0];
    /* Evenness: each thread's calls per CPU-second against all threads'.
     * The scheduler decides who runs when (with 64 threads on 2 cores a
     * thread may get one time slice in a window, or none); what a thread
     * makes of the CPU it gets is the breaker's doing: one held back by a
     * lock or a retry loop would show a low rate. Threads that ran under a
     * millisecond are left out (a cold cache dominates their rate). */
    double least_rate = -1.0, busy_ops = 0.0, busy_cpu = 0.0, rate_sum = 0.0;
    unsigned busy = 0;
    *ops = 0;
    *interrupted = false;
    for (unsigned i = 0; i < n; i++) {
        struct duration_report rep;
        read_all(report[0], &rep, sizeof(rep));
        if (rep.ok != rep.ops)
            bench_die("case %s: a worker: %llu of %llu operations did not behave as expected",
                      c->name, (unsigned long long)(rep.ops - rep.ok), (unsigned long long)rep.ops);
        *ops += rep.ops;
        if (rep.cpu_ns >= UINT64_C(1000000)) {
            double rate = (double)rep.ops / (double)rep.cpu_ns;
            if (least_rate < 0 || rate < least_rate) least_rate = rate;
            rate_sum += rate;
            busy++;
            busy_ops += (double)rep.ops;
            busy_cpu += (double)rep.cpu_ns;
        }
        if (rep.end_ns > end) end = rep.end_ns;
        *interrupted |= was_interrupted(rep.end_ns - start[0], rep.cpu_ns);
    }
    /* More threads than cores take turns: that is what such a case
     * measures, not an interruption. Their evenness is its own figure. */
    if (c->processes == 0 && n > online_cpus()) *interrupted = false;
    /* -1: no thread ran 1 ms, nothing to say (not recorded). */
    extra->share = least_rate >= 0 ? least_rate / (busy_ops / busy_cpu) : -1.0;
    extra->mean_rate = busy ? rate_sum / busy : 0.0;
    for (unsigned i = 0; i < n; i++) {
        if (c->processes) {
            int status;
            while (waitpid(pid[i], &status, 0) < 0 && errno == EINTR) {
            }
        } else {
            pthread_join(w[i].tid, NULL);
        }
    }
    int fds[] = {ready[0], ready[1], go[0], go[1], report[0], report[1]};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0) close(fds[i]);
    return end - start[0];
}

/* @return elapsed ns for one repetition of `c` at c->iters per thread (or
 * its fixed duration), with the operations of all threads in `*ops`;
 * `*interrupted` says whether a thread lost its core meanwhile, or the
 * threads did not run at the same time. */
static uint64_t run_once(const struct bench_case *c, bool *interrupted, uint64_t *ops,
                         struct rep_extra *extra) {
    *extra = (struct rep_extra){1.0, 0.0};
    if (c->fixed_duration) return run_duration(c, interrupted, ops, extra);
    *ops = c->iters * (c->threads == 0                  ? 1
                       : c->threads > BENCH_MAX_THREADS ? BENCH_MAX_THREADS
                                                        : c->threads);
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
    if (n > online_cpus()) {
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
    bool interrupted;
    uint64_t ops;
    struct rep_extra extra;
    c->nshares = 0;
    if (c->fixed_duration) {
        c->duration_ns = target < c->min_duration_ns ? c->min_duration_ns : target;
        (void)run_once(c, &interrupted, &ops, &extra); /* warm-up */
        return;
    }
    c->iters = 1000;
    for (;;) {
        uint64_t t = run_once(c, &interrupted, &ops, &extra);
        if (t >= target / 8 || c->iters >= (UINT64_C(1) << 34)) {
            double scale = (double)target / (double)(t ? t : 1);
            uint64_t n = (uint64_t)((double)c->iters * scale);
            c->iters = n < 1000 ? 1000 : n;
            break;
        }
        c->iters *= 4;
    }
    (void)run_once(c, &interrupted, &ops, &extra); /* warm-up at the final size */
}

void bench_repeat(struct bench_case *c) {
    bool interrupted;
    uint64_t ops;
    struct rep_extra extra;
    uint64_t t = run_once(c, &interrupted, &ops, &extra);
    /* Redo a repetition that the scheduler interrupted: its time is the other
     * jobs' as much as ours. After BENCH_MAX_REDO tries keep it, and say so. */
    for (unsigned i = 0; interrupted && i < BENCH_MAX_REDO; i++) {
        c->redone++;
        t = run_once(c, &interrupted, &ops, &extra);
    }
    c->kept_interrupted += interrupted;
    if (c->fixed_duration && c->nshares < BENCH_MAX_REPS) {
        if (extra.share >= 0) {
            c->shares[c->nshares] = extra.share;
            c->rates[c->nshares++] = extra.mean_rate;
        }
    }
    if (c->nsamples < BENCH_MAX_REPS) c->samples[c->nsamples++] = (double)t / (double)ops;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *values, unsigned n) {
    if (n == 0) return 0.0;
    double tmp[BENCH_MAX_REPS];
    memcpy(tmp, values, n * sizeof(double));
    qsort(tmp, n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2.0;
}

double bench_median(const struct bench_case *c) { return median_of(c->samples, c->nsamples); }

double bench_share_median(const struct bench_case *c) {
    return c->nshares ? median_of(c->shares, c->nshares) : 1.0;
}

double bench_rate_median(const struct bench_case *c) { return median_of(c->rates, c->nshares); }

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
