/* SPDX-License-Identifier: MIT */
/*
 * wait.c - waiting for a signal with a deadline: exec's wait for its child
 * and status --watch's polls.
 */
#include "ops/ops.h"

#include <errno.h>
#include <time.h>

void tool_on_signal(int sig) {
    (void)sig; /* only to make SIGCHLD and the others pending for sigtimedwait() */
}

uint64_t tool_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TOOL_SEC + (uint64_t)ts.tv_nsec;
}

/* Wait for one of `set` until `deadline` (0: none). @return the signal, 0
 * at the deadline, -1 on error. */
int tool_wait_signal(const sigset_t *set, uint64_t deadline) {
    for (;;) {
        int sig;
        if (deadline == 0) {
            sig = sigwaitinfo(set, NULL);
        } else {
            uint64_t now = tool_now_ns();
            if (now >= deadline) return 0;
            uint64_t left = deadline - now;
            struct timespec ts = {.tv_sec = (time_t)(left / TOOL_SEC),
                                  .tv_nsec = (long)(left % TOOL_SEC)};
            sig = sigtimedwait(set, NULL, &ts);
            if (sig < 0 && errno == EAGAIN) return 0;
        }
        if (sig >= 0) return sig;
        if (errno != EINTR) return -1;
    }
}
