/* SPDX-License-Identifier: MIT */
/*
 * stripes.c - which counter stripe a thread writes.
 *
 * The first time a thread touches any breaker it takes a stripe: one of the
 * BREAKER__OWNED_STRIPES owned stripes if one is free (it then is the only
 * writer of that stripe in every breaker, and counts with plain loads and
 * stores), otherwise one of the shared stripes, round-robin. An owned stripe
 * goes back to the pool when its thread exits, through a thread-specific-data
 * destructor, so thread pools that come and go do not exhaust it.
 *
 * This pool and the thread-local index are the library's only process-wide
 * state. They decide which cache line a thread writes, never what is counted.
 * (A block shared by several processes would need owned stripes per process;
 * that is future work and documented in docs/design.md.)
 */
#define _GNU_SOURCE
#include "core/internal.h"

#include <pthread.h>

_Thread_local unsigned breaker__tls_stripe_plus_one;
_Thread_local uintptr_t breaker__tls_owned_offset;

static _Atomic uint64_t owned_in_use; /* bit i: owned stripe i is taken */
static _Atomic unsigned next_shared;
static pthread_key_t release_key;
static pthread_once_t release_key_once = PTHREAD_ONCE_INIT;
static int release_key_ok;

#define OWNED_MASK ((UINT64_C(1) << BREAKER__OWNED_STRIPES) - 1)

static unsigned take_shared(void) {
    return BREAKER__OWNED_STRIPES +
           atomic_fetch_add_explicit(&next_shared, 1, memory_order_relaxed) %
               (BREAKER__STRIPES - BREAKER__OWNED_STRIPES);
}

static void release_owned(void *value) {
    unsigned i = (unsigned)(uintptr_t)value - 1;
    /* Anything this thread still does (another library's destructor calling
     * a breaker) goes through a shared stripe from now on. */
    breaker__tls_owned_offset = 0;
    breaker__tls_stripe_plus_one = take_shared() + 1;
    /* Release: the next owner's acquire CAS sees this thread's last plain
     * stores, so its first load-and-store continues from them. */
    atomic_fetch_and_explicit(&owned_in_use, ~(UINT64_C(1) << i), memory_order_release);
}

static void make_release_key(void) {
    release_key_ok = pthread_key_create(&release_key, release_owned) == 0;
}

unsigned breaker__stripe_assign(void) {
    pthread_once(&release_key_once, make_release_key);
    unsigned index = BREAKER__STRIPES;
    if (release_key_ok) {
        uint64_t used = atomic_load_explicit(&owned_in_use, memory_order_relaxed);
        while ((~used & OWNED_MASK) != 0) {
            unsigned i = (unsigned)__builtin_ctzll(~used & OWNED_MASK);
            /* Acquire: pairs with the release in release_owned() of the
             * previous owner of stripe i. */
            if (atomic_compare_exchange_weak_explicit(&owned_in_use, &used,
                                                      used | (UINT64_C(1) << i),
                                                      memory_order_acquire, memory_order_relaxed)) {
                if (pthread_setspecific(release_key, (void *)(uintptr_t)(i + 1)) == 0) {
                    index = i;
                } else {
                    atomic_fetch_and_explicit(&owned_in_use, ~(UINT64_C(1) << i),
                                              memory_order_release);
                }
                break;
            }
        }
    }
    if (index == BREAKER__STRIPES) index = take_shared();
    breaker__tls_stripe_plus_one = index + 1;
    breaker__tls_owned_offset =
        index < BREAKER__OWNED_STRIPES ? index * sizeof(struct breaker__stripe) + 1 : 0;
    return index;
}
