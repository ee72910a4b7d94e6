/* SPDX-License-Identifier: MIT */
/*
 * block.h - a breaker's shared block: its lifecycle in four steps, and the
 * per-process handle bound to it.
 *
 *   layout  pure: from the limits, the block's size and the offset of every
 *           array in it. Same limits, same layout, in any process.
 *   init    write a zeroed block of that layout: header, limits, the initial
 *           state. The magic number is stored last, with release, so a
 *           process that sees the magic sees a whole block.
 *   check   verify a block before use: magic (acquire), layout version, ABI
 *           word, header size, total size against the mapping, and every
 *           offset against the layout its own limits give. A clear message
 *           says which and what was expected.
 *   bind    fill a per-process handle for a block it may not have allocated:
 *           the addresses the call path reads, the clocks, and how the
 *           handle's threads get counter stripes.
 *
 * breaker_create() is layout + allocate (process heap) + init + check + bind;
 * a store that maps a file or a shared segment does the same with its own
 * allocation, and a second process attaches with check + bind.
 */
#ifndef BREAKER_CORE_BLOCK_H
#define BREAKER_CORE_BLOCK_H

#include "core/internal.h"

#include <stddef.h>
#include <stdint.h>

struct breaker__block_layout {
    size_t stripes_off;
    size_t buckets_off;   /* time window, else 0 */
    size_t bucket_stride; /* time window, else 0 */
    size_t ring_off;      /* count window, else 0 */
    size_t slots_off;
    size_t latency_off; /* timed calls (slow_call_ns > 0), else 0 */
    size_t total;
};

/* The layout of a block for `lim` (validated limits). Pure. */
void breaker__block_layout(const struct breaker__limits *lim, struct breaker__block_layout *out);

/* Initialise the zeroed memory `s` (lay->total bytes, cache-line aligned) as a
 * closed breaker with limits `lim`, whose tagged times count from `epoch_ns`
 * on the breaker's clock. Not thread-safe: nobody may read the block until
 * init returns; readers that find it through shared memory wait for the
 * magic (breaker__block_check). */
void breaker__block_init(struct breaker__shared *s, const struct breaker__block_layout *lay,
                         const struct breaker__limits *lim, uint64_t epoch_ns,
                         uint64_t instance_id);

/* Whether the `mapped` bytes at `s` hold a block this library can use.
 * @return BREAKER_OK, or BREAKER_EINCOMPATIBLE with `msg` naming the field,
 * what it holds and what this library expects. */
int breaker__block_check(const struct breaker__shared *s, size_t mapped, char *msg, size_t len);

/* Bind the handle `b` (its cfg set, its clocks set up for the block's limits)
 * to the checked block `s` of `mapped` bytes. `store_id`: in ATOMIC mode, the
 * id of the store holding the block (0: none), which decides whether its
 * threads may own stripes (the process's host domain); ignored otherwise. */
void breaker__block_bind(breaker *b, struct breaker__shared *s, size_t mapped,
                         enum breaker__stripe_mode mode, uint64_t store_id);

/* ---- Blocks a store places (shared memory) ---------------------------------
 * A store allocates a block where other processes can map it, initialises it
 * once, and every process (the creator too) attaches a handle to it. */

/* The size of the block for `cfg` (NULL: defaults), and the effective
 * configuration with its seed fixed (drawn when 0: every process attaching
 * the block must compute the same waits, so the seed is the block's).
 * @return BREAKER_OK or BREAKER_EINVAL (with `msg`). */
int breaker__block_plan(const breaker_config *cfg, breaker_config *effective, size_t *size,
                        char *msg, size_t len);

/* Initialise the zeroed `size` bytes at `mem` (cache-line aligned) as a
 * closed breaker of the planned `effective` configuration, its times counting
 * from `epoch_ns` (the clock every attaching process reads). */
void breaker__block_create_at(void *mem, size_t size, const breaker_config *effective,
                              uint64_t epoch_ns);

/* A handle on the checked block at `mem` (`size` bytes mapped): the block's
 * limits with the callbacks and clock of `cfg` (only those fields are read),
 * counters in ATOMIC stripe mode (owned stripes claimed in the host domain
 * when `store_id`, the id of the store holding the block, is the process's
 * host domain: breaker__host_domain_join()), `owner` and `gate` installed
 * (either may be NULL), the block left to its owner on destroy.
 * @return BREAKER_OK, BREAKER_EINCOMPATIBLE (a block this build cannot use),
 * BREAKER_ENOMEM. */
int breaker__attach_block(void *mem, size_t size, uint64_t store_id, const breaker_config *cfg,
                          const breaker_owner *owner, const breaker_probe_gate *gate, breaker **out,
                          char *msg, size_t len);

/* The configuration a checked block was created with (callbacks NULL). */
void breaker__block_config(const struct breaker__shared *s, breaker_config *out);

#endif /* BREAKER_CORE_BLOCK_H */
