/* SPDX-License-Identifier: MIT */
/*
 * retry_budget.c - a sliding-window budget that caps the extra load retries
 * add: a retry is allowed while
 *     retries in window < min_retries + ratio * requests in window.
 *
 * The window is a ring of buckets, each stamped with the bucket number it
 * counts (time / bucket width); a bucket whose stamp is older than the window
 * counts nothing and is reused. All of it sits behind one mutex: the budget is
 * asked once per request and once per retry, next to a network call, so a few
 * tens of uncontended nanoseconds buy a window that is exact and simple to
 * check, where a lock-free ring would need the reset/increment races the
 * core's window solves.
 *
 * A refundable withdrawal hands out the stamp of the bucket it was counted
 * in. A refund takes the retry out of that bucket only if the bucket still
 * counts that stamp: once it has been reused for a later span, the retry has
 * already left the window, and taking one from whichever bucket holds
 * retries now would uncount a retry that was really made. Because a
 * withdrawal counts from the moment it is allowed and a refund only lowers
 * the count, every check sees at least the retries made, so the bound holds
 * however many threads share the budget.
 */
#include "breaker/compose.h"
#include "common/message.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SEC UINT64_C(1000000000)

#define DEFAULT_RATIO       0.2
#define DEFAULT_MIN_RETRIES 10u
#define DEFAULT_WINDOW_NS   (10 * SEC)
#define DEFAULT_BUCKETS     10u
#define MAX_BUCKETS         600u
#define MAX_MIN_RETRIES     1000000u
#define MAX_RATIO           1000.0

struct budget_bucket {
    uint64_t stamp; /* bucket number (time / width) + 1; 0 = never used */
    uint64_t requests;
    uint64_t retries;
};

struct breaker_retry_budget {
    pthread_mutex_t lock;
    breaker_clock_fn *clock;
    void *clock_ctx;
    double ratio;
    uint64_t min_retries;
    uint64_t bucket_ns;
    uint32_t nbuckets;
    uint64_t latest; /* newest stamp seen: time read before the lock by a
                        slow thread must not reset a newer bucket */
    uint64_t deposits, withdrawals, refused, refunded;
    struct budget_bucket buckets[]; /* nbuckets */
};

void breaker_retry_budget_config_init(breaker_retry_budget_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->ratio = DEFAULT_RATIO;
    cfg->min_retries = DEFAULT_MIN_RETRIES;
    cfg->window_ns = DEFAULT_WINDOW_NS;
    cfg->buckets = DEFAULT_BUCKETS;
}

static uint32_t buckets_of(const breaker_retry_budget_config *cfg) {
    return cfg->buckets != 0 ? cfg->buckets : DEFAULT_BUCKETS;
}

static uint64_t window_of(const breaker_retry_budget_config *cfg) {
    return cfg->window_ns != 0 ? cfg->window_ns : DEFAULT_WINDOW_NS;
}

int breaker_retry_budget_config_validate(const breaker_retry_budget_config *cfg, char *msg,
                                         size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    /* `!(x >= 0)` also refuses NaN. */
    if (!(cfg->ratio >= 0.0) || cfg->ratio > MAX_RATIO)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "ratio: must be between 0 and %g (got %g)", MAX_RATIO, cfg->ratio);
    if (cfg->min_retries > MAX_MIN_RETRIES)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "min_retries: must be between 0 and %u (got %u)", MAX_MIN_RETRIES,
                             cfg->min_retries);
    uint32_t nb = buckets_of(cfg);
    if (nb > MAX_BUCKETS)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "buckets: must be between 1 and %u (got %u)", MAX_BUCKETS, nb);
    if (window_of(cfg) < nb)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "window_ns: each of the %u buckets must span at least 1 ns "
                             "(window_ns >= %u ns, got %llu)",
                             nb, nb, (unsigned long long)window_of(cfg));
    return BREAKER_OK;
}

int breaker_retry_budget_create(const breaker_retry_budget_config *cfg,
                                breaker_retry_budget **out) {
    if (out == NULL) return BREAKER_EINVAL;
    *out = NULL;
    breaker_retry_budget_config c;
    if (cfg != NULL)
        c = *cfg;
    else
        breaker_retry_budget_config_init(&c);
    if (breaker_retry_budget_config_validate(&c, NULL, 0) != BREAKER_OK) return BREAKER_EINVAL;
    uint32_t nb = buckets_of(&c);
    breaker_retry_budget *b = calloc(1, sizeof(*b) + nb * sizeof(b->buckets[0]));
    if (b == NULL) return BREAKER_ENOMEM;
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        return BREAKER_ENOMEM;
    }
    b->clock = c.clock != NULL ? c.clock : breaker_monotonic_ns;
    b->clock_ctx = c.clock_ctx;
    b->ratio = c.ratio;
    b->min_retries = c.min_retries;
    b->nbuckets = nb;
    b->bucket_ns = window_of(&c) / nb;
    *out = b;
    return BREAKER_OK;
}

void breaker_retry_budget_destroy(breaker_retry_budget *b) {
    if (b == NULL) return;
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* The bucket for now, emptied if it last counted an earlier span. Call with
 * the lock held. */
static struct budget_bucket *current_bucket(breaker_retry_budget *b, uint64_t *stamp_io) {
    if (*stamp_io < b->latest) *stamp_io = b->latest;
    b->latest = *stamp_io;
    uint64_t stamp = *stamp_io;
    struct budget_bucket *bk = &b->buckets[stamp % b->nbuckets];
    if (bk->stamp != stamp) {
        bk->stamp = stamp;
        bk->requests = 0;
        bk->retries = 0;
    }
    return bk;
}

/* Requests and retries in the window ending with bucket `stamp`. */
static void window_sums(const breaker_retry_budget *b, uint64_t stamp, uint64_t *requests,
                        uint64_t *retries) {
    uint64_t rq = 0, rt = 0;
    for (uint32_t i = 0; i < b->nbuckets; i++) {
        const struct budget_bucket *bk = &b->buckets[i];
        if (bk->stamp != 0 && bk->stamp <= stamp && stamp - bk->stamp < b->nbuckets) {
            rq += bk->requests;
            rt += bk->retries;
        }
    }
    *requests = rq;
    *retries = rt;
}

static uint64_t stamp_now(const breaker_retry_budget *b) {
    return b->clock(b->clock_ctx) / b->bucket_ns + 1;
}

void breaker_retry_budget_deposit(breaker_retry_budget *b) {
    uint64_t stamp = stamp_now(b);
    pthread_mutex_lock(&b->lock);
    current_bucket(b, &stamp)->requests++;
    b->deposits++;
    pthread_mutex_unlock(&b->lock);
}

/* Allow and count one retry if the window has room. @return the stamp of
 * the bucket it was counted in, 0 if refused. */
static uint64_t withdraw(breaker_retry_budget *b) {
    uint64_t stamp = stamp_now(b);
    uint64_t requests, retries;
    pthread_mutex_lock(&b->lock);
    struct budget_bucket *bk = current_bucket(b, &stamp);
    window_sums(b, stamp, &requests, &retries);
    if ((double)retries < (double)b->min_retries + b->ratio * (double)requests) {
        bk->retries++;
        b->withdrawals++;
    } else {
        b->refused++;
        stamp = 0;
    }
    pthread_mutex_unlock(&b->lock);
    return stamp;
}

int breaker_retry_budget_withdraw(breaker_retry_budget *b) {
    return withdraw(b) != 0 ? BREAKER_OK : BREAKER_RETRY_BUDGET_EXHAUSTED;
}

int breaker_retry_budget_withdraw_refundable(breaker_retry_budget *b,
                                             breaker_retry_ticket *ticket) {
    ticket->opaque = withdraw(b);
    return ticket->opaque != 0 ? BREAKER_OK : BREAKER_RETRY_BUDGET_EXHAUSTED;
}

int breaker_retry_budget_refund(breaker_retry_budget *b, breaker_retry_ticket *ticket) {
    uint64_t stamp = ticket->opaque;
    if (stamp == 0) return BREAKER_EINVAL;
    int rc = BREAKER_OK;
    pthread_mutex_lock(&b->lock);
    if (stamp > b->latest) {
        rc = BREAKER_EINVAL; /* no withdrawal of this budget was counted then */
    } else {
        struct budget_bucket *bk = &b->buckets[stamp % b->nbuckets];
        if (bk->stamp == stamp && bk->retries > 0) bk->retries--;
        b->refunded++;
    }
    pthread_mutex_unlock(&b->lock);
    if (rc == BREAKER_OK) ticket->opaque = 0;
    return rc;
}

int breaker_retry_budget_stats_get(breaker_retry_budget *b, breaker_retry_budget_stats *out) {
    uint64_t stamp = stamp_now(b);
    pthread_mutex_lock(&b->lock);
    if (stamp < b->latest) stamp = b->latest;
    out->deposits = b->deposits;
    out->withdrawals = b->withdrawals;
    out->refused = b->refused;
    out->refunded = b->refunded;
    window_sums(b, stamp, &out->window_requests, &out->window_retries);
    pthread_mutex_unlock(&b->lock);
    return BREAKER_OK;
}
