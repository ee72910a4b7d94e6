/* SPDX-License-Identifier: MIT */
/* reply.c - the fleet client's reply type (breaker/redis_transport.h, reply.h). */
#include "store/redis/reply.h"

#include <stdlib.h>
#include <string.h>

breaker_redis_reply *breaker_redis_reply_string(int type, const char *str, size_t len) {
    breaker_redis_reply *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->str = malloc(len + 1);
    if (r->str == NULL) {
        free(r);
        return NULL;
    }
    if (len > 0) memcpy(r->str, str, len);
    r->str[len] = '\0';
    r->len = len;
    r->type = type;
    return r;
}

breaker_redis_reply *breaker_redis_reply_integer(long long v) {
    breaker_redis_reply *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->type = BREAKER_REDIS_REPLY_INTEGER;
    r->integer = v;
    return r;
}

breaker_redis_reply *breaker_redis_reply_nil(void) {
    breaker_redis_reply *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->type = BREAKER_REDIS_REPLY_NIL;
    return r;
}

breaker_redis_reply *breaker_redis_reply_array(size_t n) {
    breaker_redis_reply *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->type = BREAKER_REDIS_REPLY_ARRAY;
    if (n > 0) {
        r->element = calloc(n, sizeof *r->element);
        if (r->element == NULL) {
            free(r);
            return NULL;
        }
    }
    r->elements = n;
    return r;
}

void breaker_redis_reply_free(breaker_redis_reply *r) {
    if (r == NULL) return;
    for (size_t i = 0; i < r->elements; i++)
        breaker_redis_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

int breaker__reply_is_error(const breaker_redis_reply *r, const char *prefix) {
    size_t n = strlen(prefix);
    return r != NULL && r->type == BREAKER_REDIS_REPLY_ERROR && r->len >= n &&
           memcmp(r->str, prefix, n) == 0;
}
