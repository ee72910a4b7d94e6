/* SPDX-License-Identifier: MIT */
/*
 * outside.h - evidence from outside the call path.
 *
 * A store that aggregates evidence beyond this process (the calls of other
 * processes or hosts) decides that a breaker must open. It acts through the
 * same transition function as local calls, so the state word, the wait, the
 * event and the statistics follow the same rules; only the reason differs
 * (BREAKER_REASON_OUTSIDE_TRIP). The decision is fenced by generation: it was
 * taken on evidence about one closed period, and must not open a breaker that
 * has since moved on (reset, tripped and recovered, forced). The store's
 * recovery closes the breaker the same way (BREAKER_REASON_OUTSIDE_CLOSE),
 * fenced by the generation it saw open.
 */
#ifndef BREAKER_CORE_OUTSIDE_H
#define BREAKER_CORE_OUTSIDE_H

#include "breaker.h"

#include <stdint.h>

/* Trip `b` from CLOSED to OPEN with the normal wait (open_ns, jittered, as a
 * first trip), if it is still CLOSED in generation `gen`. `evidence` (may be
 * NULL) goes into the event as the reason's evidence. The transition's event
 * is delivered in this process, on this thread. Thread-safe, lock-free.
 * @return BREAKER_OK: this call opened the breaker;
 *         BREAKER_STALE: it is no longer CLOSED in `gen` (another trip won, or
 *         it was reset, forced, or is in a newer generation): nothing done. */
int breaker__trip_outside(breaker *b, uint64_t gen, const breaker_evidence *evidence);

/* Close `b` (OPEN or HALF_OPEN in generation `gen`) because the outside
 * recovered: the store's own probes succeeded. Through the same transition
 * as a recovery by probes (the window emptied, a ramp with ramp_ns set, one
 * event with reason BREAKER_REASON_OUTSIDE_CLOSE and `evidence`, may be
 * NULL), on this thread. Local probes still in flight complete STALE.
 * Thread-safe, lock-free.
 * @return BREAKER_OK: this call closed the breaker;
 *         BREAKER_STALE: it is not OPEN or HALF_OPEN in `gen` (it moved on:
 *         a newer trip, a reset, forced, or already closed): nothing done. */
int breaker__close_outside(breaker *b, uint64_t gen, const breaker_evidence *evidence);

#endif /* BREAKER_CORE_OUTSIDE_H */
