/* SPDX-License-Identifier: MIT */
/*
 * message.h - how every validation in the library reports which field and
 * what range: a formatted message into a caller's buffer, and a status.
 */
#ifndef BREAKER_COMMON_MESSAGE_H
#define BREAKER_COMMON_MESSAGE_H

#include <stddef.h>

/* Write a formatted message to `msg` (NULL or len 0: none; a message longer
 * than the buffer is cut and stays NUL-terminated, as the public headers
 * document for every msg/msg_len pair) and return `status`. */
int breaker__fail(int status, char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* BREAKER_COMMON_MESSAGE_H */
