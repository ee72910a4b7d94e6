/* SPDX-License-Identifier: MIT */
/* reply.c - the fleet client's reply type (reply.h). */
#include "store/redis/reply.h"

#include <stdlib.h>
#include <string.h>

struct breaker__reply *breaker__reply_string(int type, const char *str, size_t len) {
    struct breaker__reply *r = calloc(1, sizeof *r);
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

struct breaker__reply *breaker__reply_integer(long long v) {
    struct breaker__reply *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->type = BREAKER__REPLY_INTEGER;
    r->integer = v;
    return r;
}

struct breaker__reply *breaker__reply_nil(void) {
    struct breaker__reply *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->type = BREAKER__REPLY_NIL;
    return r;
}

struct breaker__reply *breaker__reply_array(size_t n) {
    struct breaker__reply *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->type = BREAKER__REPLY_ARRAY;
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

void breaker__reply_free(struct breaker__reply *r) {
    if (r == NULL) return;
    for (size_t i = 0; i < r->elements; i++)
        breaker__reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

int breaker__reply_is_error(const struct breaker__reply *r, const char *prefix) {
    size_t n = strlen(prefix);
    return r != NULL && r->type == BREAKER__REPLY_ERROR && r->len >= n &&
           memcmp(r->str, prefix, n) == 0;
}
