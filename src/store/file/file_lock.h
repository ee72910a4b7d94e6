/* SPDX-License-Identifier: MIT */
/*
 * file_lock.h - the store file's locks, waited for until a deadline, and who
 * holds them (file_lock.c): how no store call waits without a bound
 * (breaker/store.h, "No wait without a bound").
 */
#ifndef BREAKER_STORE_FILE_FILE_LOCK_H
#define BREAKER_STORE_FILE_FILE_LOCK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC now plus `wait_ns`: the deadline of one call's waits. */
uint64_t breaker__lock_deadline(uint64_t wait_ns);

/* The exclusive flock() of `fd`, by `deadline` (CLOCK_MONOTONIC ns). A
 * signal that interrupts a wait is no reason to fail: the wait goes on, to
 * the same deadline. @return 0 (held), ETIMEDOUT (still held by another
 * open file description at the deadline), or flock()'s errno. */
int breaker__file_lock_until(int fd, uint64_t deadline);

/* `mu`, by `deadline` (CLOCK_MONOTONIC ns). @return 0 (held) or ETIMEDOUT. */
int breaker__mutex_lock_until(pthread_mutex_t *mu, uint64_t deadline);

/* Who holds the flock() of the file `dev`, `ino`, for a message: "process
 * 1234 (stopped)", "process 1234", or "another process" when /proc/locks
 * does not say (no /proc, a holder in another PID namespace). Writes `out`
 * (NUL-terminated, truncated to `len`). */
void breaker__file_lock_holder(uint64_t dev, uint64_t ino, char *out, size_t len);

#endif /* BREAKER_STORE_FILE_FILE_LOCK_H */
