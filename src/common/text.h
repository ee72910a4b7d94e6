/* SPDX-License-Identifier: MIT */
/*
 * text.h - the check of an operator's who and why text (breaker.h:
 * breaker_event.who, breaker_control_apply(); breaker/redis.h: the fleet's
 * orders), one rule for the core and the fleet store.
 */
#ifndef BREAKER_COMMON_TEXT_H
#define BREAKER_COMMON_TEXT_H

#include "common/message.h"

#include <breaker.h>

#include <string.h>

/* Whether byte `c` may stand in who or why text: any but a control
 * character (below 0x20, or 0x7f), so that a record prints on one line. */
static inline int breaker__text_byte_ok(unsigned char c) { return c >= 0x20 && c != 0x7f; }

/* `text` (NULL: empty) as `field`: at most `max` bytes, none a control
 * character. @return BREAKER_OK, or BREAKER_EINVAL with `msg`. */
static inline int breaker__text_check(const char *field, const char *text, size_t max, char *msg,
                                      size_t msg_len) {
    size_t n = text != NULL ? strlen(text) : 0;
    if (n > max)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: %zu bytes, at most %zu", field, n,
                             max);
    for (size_t i = 0; i < n; i++)
        if (!breaker__text_byte_ok((unsigned char)text[i]))
            return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                 "%s: a control character at byte %zu (printable text only)", field,
                                 i + 1);
    return BREAKER_OK;
}

#endif /* BREAKER_COMMON_TEXT_H */
