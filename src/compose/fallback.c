/* SPDX-License-Identifier: MIT */
/*
 * fallback.c - the cached last good value, and a fallback that serves it.
 *
 * The value is copied in and out under a mutex: values are small (a config
 * blob, a rendered response) and copies are short; readers never see half a
 * value. The buffer is allocated once, at create.
 */
#include "breaker/compose.h"
#include "common/message.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_SIZE 4096u
#define MAX_MAX_SIZE     ((size_t)1 << 30)
#define DEFAULT_STALE_NS (UINT64_C(60) * 1000000000)

struct breaker_cache {
    pthread_mutex_t lock;
    breaker_clock_fn *clock;
    void *clock_ctx;
    uint64_t max_stale_ns;
    size_t max_size;
    bool has_value;
    uint64_t stored_ns; /* clock when the value was put */
    size_t len;
    unsigned char data[]; /* max_size */
};

void breaker_cache_config_init(breaker_cache_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_size = DEFAULT_MAX_SIZE;
    cfg->max_stale_ns = DEFAULT_STALE_NS;
}

int breaker_cache_config_validate(const breaker_cache_config *cfg, char *msg, size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    if (cfg->max_size > MAX_MAX_SIZE)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "max_size: must be between 1 and %zu bytes (got %zu)", MAX_MAX_SIZE,
                             cfg->max_size);
    return BREAKER_OK;
}

int breaker_cache_create(const breaker_cache_config *cfg, breaker_cache **out) {
    if (out == NULL) return BREAKER_EINVAL;
    *out = NULL;
    breaker_cache_config c;
    if (cfg != NULL)
        c = *cfg;
    else
        breaker_cache_config_init(&c);
    if (breaker_cache_config_validate(&c, NULL, 0) != BREAKER_OK) return BREAKER_EINVAL;
    if (c.max_size == 0) c.max_size = DEFAULT_MAX_SIZE;
    if (c.max_stale_ns == 0) c.max_stale_ns = DEFAULT_STALE_NS;
    breaker_cache *cache = calloc(1, sizeof(*cache) + c.max_size);
    if (cache == NULL) return BREAKER_ENOMEM;
    if (pthread_mutex_init(&cache->lock, NULL) != 0) {
        free(cache);
        return BREAKER_ENOMEM;
    }
    cache->clock = c.clock != NULL ? c.clock : breaker_monotonic_ns;
    cache->clock_ctx = c.clock_ctx;
    cache->max_stale_ns = c.max_stale_ns;
    cache->max_size = c.max_size;
    *out = cache;
    return BREAKER_OK;
}

void breaker_cache_destroy(breaker_cache *c) {
    if (c == NULL) return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int breaker_cache_put(breaker_cache *c, const void *data, size_t len) {
    if (len > c->max_size) return BREAKER_ENOSPC;
    if (len > 0 && data == NULL) return BREAKER_EINVAL;
    uint64_t now = c->clock(c->clock_ctx);
    pthread_mutex_lock(&c->lock);
    if (len > 0) memcpy(c->data, data, len);
    c->len = len;
    c->stored_ns = now;
    c->has_value = true;
    pthread_mutex_unlock(&c->lock);
    return BREAKER_OK;
}

int breaker_cache_get(breaker_cache *c, void *buf, size_t cap, size_t *len, uint64_t *age_ns) {
    uint64_t now = c->clock(c->clock_ctx);
    int rc;
    size_t n = 0;
    uint64_t age = UINT64_MAX;
    pthread_mutex_lock(&c->lock);
    if (!c->has_value) {
        rc = BREAKER_NOT_FOUND;
    } else {
        /* A clock read before a concurrent put can be older than the value:
         * that value is fresh, age 0. */
        age = now > c->stored_ns ? now - c->stored_ns : 0;
        n = c->len;
        if (age > c->max_stale_ns) {
            rc = BREAKER_NOT_FOUND; /* too old to serve: refusing is honest */
        } else if (n > cap || (n > 0 && buf == NULL)) {
            rc = BREAKER_ENOSPC;
        } else {
            if (n > 0) memcpy(buf, c->data, n);
            rc = BREAKER_OK;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (len != NULL) *len = rc == BREAKER_NOT_FOUND ? 0 : n;
    if (age_ns != NULL) *age_ns = age;
    return rc;
}

int breaker_cache_fallback(void *ctx, const breaker_result *why, uint64_t *age_ns) {
    (void)why;
    breaker_cache_target *t = ctx;
    if (t == NULL || t->cache == NULL) return BREAKER_EINVAL;
    return breaker_cache_get(t->cache, t->buf, t->cap, &t->len, age_ns);
}
