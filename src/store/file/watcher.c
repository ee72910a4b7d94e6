/* SPDX-License-Identifier: MIT */
/*
 * watcher.c - watcher.h: one thread, one condition variable on
 * CLOCK_MONOTONIC (a wall-clock step neither hurries nor stalls it), and a
 * stop flag under the mutex, so a stop is never missed between the flag's
 * test and the wait.
 */
#define _GNU_SOURCE
#include "store/file/watcher.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct breaker__watcher {
    void (*fn)(void *ctx);
    void *ctx;
    uint64_t every_ns;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stop; /* under mu */
    pthread_t thread;
    pid_t owner; /* the process whose thread it is: a fork's child has none */
};

static struct timespec deadline_after(uint64_t ns) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t sec = ns / UINT64_C(1000000000), nsec = ns % UINT64_C(1000000000);
    ts.tv_sec += (time_t)sec;
    ts.tv_nsec += (long)nsec;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static void *watch(void *arg) {
    struct breaker__watcher *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec until = deadline_after(w->every_ns);
        int rc = 0;
        while (!w->stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&w->wake, &w->mu, &until);
        if (w->stop) break;
        pthread_mutex_unlock(&w->mu);
        w->fn(w->ctx);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct breaker__watcher *breaker__watcher_start(void (*fn)(void *ctx), void *ctx,
                                                uint64_t every_ns) {
    struct breaker__watcher *w = calloc(1, sizeof(*w));
    if (w == NULL) return NULL;
    w->fn = fn;
    w->ctx = ctx;
    w->every_ns = every_ns;
    w->owner = getpid();
    pthread_condattr_t attr;
    int err = pthread_condattr_init(&attr);
    if (err == 0) {
        err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (err == 0) err = pthread_cond_init(&w->wake, &attr);
        pthread_condattr_destroy(&attr);
    }
    if (err != 0) {
        free(w);
        errno = err;
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    /* The thread blocks every signal: a process's handlers run on its own
     * threads, never on a library's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&w->thread, NULL, watch, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->mu);
        free(w);
        errno = err;
        return NULL;
    }
    return w;
}

void breaker__watcher_stop(struct breaker__watcher *w) {
    if (w == NULL) return;
    if (getpid() != w->owner) { /* a fork's child: the thread is not here */
        free(w);
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
