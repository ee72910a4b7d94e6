/* SPDX-License-Identifier: MIT */
/*
 * watcher.h - a thread that calls a function at a fixed interval until it is
 * stopped: how a store file looks at its path off the call path
 * (file_store.c, breaker_store_check()).
 */
#ifndef BREAKER_STORE_FILE_WATCHER_H
#define BREAKER_STORE_FILE_WATCHER_H

#include <stdint.h>

struct breaker__watcher;

/* Start a thread that calls `fn(ctx)` every `every_ns` (CLOCK_MONOTONIC,
 * counted from the end of the previous call), first after one interval.
 * @return the watcher, or NULL (no memory, or no thread: errno says). */
struct breaker__watcher *breaker__watcher_start(void (*fn)(void *ctx), void *ctx,
                                                uint64_t every_ns);

/* Stop the thread (a call in progress finishes first) and free the watcher.
 * Not from `fn` itself. NULL is a no-op. In the child of a fork() (which has
 * no such thread) it only frees the memory. */
void breaker__watcher_stop(struct breaker__watcher *w);

#endif /* BREAKER_STORE_FILE_WATCHER_H */
