/* SPDX-License-Identifier: MIT */
/*
 * message.c - validation messages (see message.h).
 */
#include "common/message.h"

#include <stdarg.h>
#include <stdio.h>

int breaker__fail(int status, char *msg, size_t len, const char *fmt, ...) {
    if (msg != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return status;
}
