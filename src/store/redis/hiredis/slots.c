/* SPDX-License-Identifier: MIT */
/*
 * slots.c - the Redis Cluster slot of a key (net.h), as the Cluster
 * specification defines it: CRC16 of the key's hash tag (the text between
 * the first '{' and the first '}' after it, when that is not empty; else
 * the whole key), modulo 16384. The CRC is CRC-16/XMODEM: polynomial
 * 0x1021, initial value 0, no reflection, no final XOR ("123456789" ->
 * 0x31C3), computed a bit at a time: the flusher routes a few hundred keys
 * per round, so a table would buy nothing measurable.
 */
#include "store/redis/hiredis/net.h"

#include <string.h>

uint16_t breaker__redis_crc16(const char *buf, size_t len) {
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint16_t)(unsigned char)buf[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000u) ? (uint16_t)((crc << 1) ^ 0x1021u) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned breaker__redis_key_slot(const char *key, size_t len) {
    const char *open = memchr(key, '{', len);
    if (open != NULL) {
        size_t from = (size_t)(open - key) + 1;
        const char *close = memchr(key + from, '}', len - from);
        if (close != NULL && close > key + from) {
            key += from;
            len = (size_t)(close - key);
        }
    }
    return breaker__redis_crc16(key, len) & (ROUTE_SLOTS - 1);
}
