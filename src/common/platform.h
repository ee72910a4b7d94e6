/* SPDX-License-Identifier: MIT */
/*
 * platform.h - what ties breaker to Linux, in one place: where a port to
 * another system starts (README.md, "Platforms").
 *
 * The library is POSIX C11 with threads, plus the few Linux interfaces
 * below. Those that are calls or paths go through this header; the others
 * are listed with the file that uses them. A port provides each on its
 * system (or does without the feature that needs it) and then lifts the
 * #error.
 *
 * Through this header:
 * - BREAKER__BOOT_ID_PATH: this boot's id, so that a store file left by an
 *   earlier boot is known stale (store/file/file_store.c). FreeBSD: the
 *   sysctl kern.boottime; macOS: kern.bootsessionuuid.
 * - BREAKER__PROC_STAT_PATH: a process's state and start time, to judge
 *   whether the holder of a stripe claim is alive (core/stripes.c).
 * - BREAKER__PID_NS_PATH: the pid namespace, so that processes share stripe
 *   claims only where a pid means one process (store/file/file_store.c).
 * - breaker__random_bytes(): getrandom(); getentropy() elsewhere.
 * - breaker__sleep_until(): clock_nanosleep() on an absolute monotonic
 *   time (compose/deadline.c); macOS has no clock_nanosleep.
 * Named where they are used:
 * - CLOCK_MONOTONIC_COARSE (core/clock.c, core/machine.h): the cheap clock
 *   of the time window and the open state; clock.c falls back to
 *   CLOCK_MONOTONIC where the macro is not defined, machine.h does not yet.
 * - /proc/locks: who holds a store file's lock, for the message of a
 *   bounded wait (store/file/file_lock.c).
 * - pipe2(O_CLOEXEC) (tools/ops/exec.c, the breaker command).
 * - Restartable sequences (rseq: glibc's __rseq_offset, the auxiliary
 *   vector's AT_RSEQ_FEATURE_SIZE, core/stripes.c) and the ELF sections of
 *   their descriptors (core/arch/<cpu>/stripe_seq.h). Optional: the
 *   portable path, core/arch/generic/, has none, and is what any other
 *   object format gets.
 * - Initial-exec thread-local storage (core/stripes.h) and, for the shared
 *   library, -z nodelete (CMakeLists.txt): both ELF.
 */
#ifndef BREAKER_COMMON_PLATFORM_H
#define BREAKER_COMMON_PLATFORM_H

#if !defined(__linux__)
#error "breaker supports Linux only; src/common/platform.h lists what a port must provide"
#endif

#include <errno.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

#define BREAKER__BOOT_ID_PATH   "/proc/sys/kernel/random/boot_id"
#define BREAKER__PROC_STAT_PATH "/proc/%d/stat" /* the pid */
#define BREAKER__PID_NS_PATH    "/proc/self/ns/pid"

/* Fill `buf` with `len` (at most 256) random bytes from the kernel.
 * @return 0, or an errno. */
static inline int breaker__random_bytes(void *buf, size_t len) {
    ssize_t n = getrandom(buf, len, 0);
    if (n == (ssize_t)len) return 0;
    return n < 0 ? errno : EIO;
}

/* Sleep until CLOCK_MONOTONIC reads `until`, through signals: an absolute
 * time, so an interrupted sleep does not grow when it resumes. */
static inline void breaker__sleep_until(const struct timespec *until) {
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, until, NULL) == EINTR) {
    }
}

#endif /* BREAKER_COMMON_PLATFORM_H */
