/* SPDX-License-Identifier: MIT */
/*
 * file_lock.c - the store file's locks, waited for until a deadline, and who
 * holds them (file_lock.h).
 *
 * A process holds the file's flock() for a few microseconds of bookkeeping
 * (an open, an attach, a change of limits, a control's record). Stopped
 * under it (SIGSTOP, a debugger, a frozen cgroup) or holding it on purpose
 * (`flock -x FILE sleep 60`), it would stop every process of the host that
 * waits for it, for as long as it likes: so no wait here is unbounded.
 * Linux has no timed flock(): the lock is tried without blocking, then
 * again after pauses that grow from 50 us to 5 ms, until the deadline. A
 * lock freed meanwhile is taken within one pause; the holders' bookkeeping
 * is short and rare, so the polling costs next to nothing and nobody
 * starves in practice.
 *
 * The store's mutex: a thread holds it while it waits for the file's lock,
 * so another thread of the process waits for it with its own deadline too
 * (else it could wait one bound for the mutex, then its own for the file).
 * pthread_mutex_timedlock() counts in CLOCK_REALTIME, which may be stepped:
 * it is given slices of at most 10 ms, and the deadline is judged on
 * CLOCK_MONOTONIC between them, so a step moves the end by one slice at
 * most.
 */
#define _GNU_SOURCE
#include "store/file/file_lock.h"

#include "common/time_ns.h"
#include "core/stripes.h" /* breaker__proc_stat() */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#define FIRST_PAUSE_NS UINT64_C(50000)
#define LAST_PAUSE_NS  UINT64_C(5000000)
#define MUTEX_SLICE_NS UINT64_C(10000000)

static uint64_t now_ns(void) { return breaker__clock_ns(CLOCK_MONOTONIC); }

uint64_t breaker__lock_deadline(uint64_t wait_ns) {
    uint64_t now = now_ns();
    return UINT64_MAX - now > wait_ns ? now + wait_ns : UINT64_MAX;
}

static void pause_ns(uint64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / BREAKER__NS_PER_SEC),
                          .tv_nsec = (long)(ns % BREAKER__NS_PER_SEC)};
    nanosleep(&ts, NULL); /* a signal ends it early: the loop tries again */
}

int breaker__file_lock_until(int fd, uint64_t deadline) {
    uint64_t pause = FIRST_PAUSE_NS;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
        if (errno != EWOULDBLOCK && errno != EINTR) return errno;
        uint64_t now = now_ns();
        if (now >= deadline) return ETIMEDOUT;
        pause_ns(deadline - now < pause ? deadline - now : pause);
        if (pause < LAST_PAUSE_NS) pause = pause * 2 < LAST_PAUSE_NS ? pause * 2 : LAST_PAUSE_NS;
    }
}

int breaker__mutex_lock_until(pthread_mutex_t *mu, uint64_t deadline) {
    if (pthread_mutex_trylock(mu) == 0) return 0;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline) return ETIMEDOUT;
        uint64_t slice = deadline - now < MUTEX_SLICE_NS ? deadline - now : MUTEX_SLICE_NS;
        uint64_t until = breaker__clock_ns(CLOCK_REALTIME) + slice;
        struct timespec abs = {.tv_sec = (time_t)(until / BREAKER__NS_PER_SEC),
                               .tv_nsec = (long)(until % BREAKER__NS_PER_SEC)};
        int rc = pthread_mutex_timedlock(mu, &abs);
        if (rc == 0) return 0;
        if (rc != ETIMEDOUT && rc != EINTR) return rc;
    }
}

/* The pid holding the flock() of the file (`dev`, `ino`) by /proc/locks,
 * or 0 when it does not say (no /proc, another PID namespace's holder). */
static int holder_pid(dev_t dev, ino_t ino) {
    FILE *f = fopen("/proc/locks", "re");
    if (f == NULL) return 0;
    char line[256];
    int pid = 0;
    while (pid == 0 && fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, "->") != NULL) continue; /* a waiter, not a holder */
        char type[16];
        int p = 0;
        unsigned maj = 0, min = 0;
        unsigned long long i = 0;
        if (sscanf(line, "%*[^:]: %15s %*s %*s %d %x:%x:%llu", type, &p, &maj, &min, &i) != 5)
            continue;
        if (strcmp(type, "FLOCK") == 0 && maj == major(dev) && min == minor(dev) &&
            i == (unsigned long long)ino)
            pid = p;
    }
    fclose(f);
    return pid;
}

void breaker__file_lock_holder(uint64_t dev, uint64_t ino, char *out, size_t len) {
    int pid = holder_pid((dev_t)dev, (ino_t)ino);
    char state = 0;
    uint64_t ticks = 0;
    int err = pid > 0 ? breaker__proc_stat(pid, &state, &ticks) : ENOENT;
    /* The pid is the locker's: gone, it left the lock to a process that
     * inherited its open file (flock(1)'s command), whose pid nobody says. */
    if (err == ENOENT || err == ESRCH)
        snprintf(out, len, "another process");
    else if (err == 0 && (state == 'T' || state == 't'))
        snprintf(out, len, "process %d (stopped)", pid);
    else
        snprintf(out, len, "process %d", pid);
}
