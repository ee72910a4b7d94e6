/* SPDX-License-Identifier: MIT */
/*
 * sha1.c - SHA-1 as FIPS 180-4 (section 6.1) describes it: the name Redis
 * gives a script (EVALSHA, SCRIPT LOAD) and redis.sha1hex(). Not for
 * security: a script's name must only be the one Redis would give it.
 */
#include "store/redis/inproc/engine.h"

#include <string.h>

static uint32_t rotl(uint32_t x, unsigned n) { return (x << n) | (x >> (32u - n)); }

/* One 512-bit block into the state `h` (6.1.2, steps 1 to 4). */
static void sha1_block(uint32_t h[5], const unsigned char *p) {
    uint32_t w[80];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 80; t++)
        w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20) {
            f = (b & c) ^ (~b & d); /* Ch */
            k = 0x5a827999u;
        } else if (t < 40) {
            f = b ^ c ^ d; /* Parity */
            k = 0x6ed9eba1u;
        } else if (t < 60) {
            f = (b & c) ^ (b & d) ^ (c & d); /* Maj */
            k = 0x8f1bbcdcu;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6u;
        }
        uint32_t tmp = rotl(a, 5) + f + e + k + w[t];
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void breaker__sha1_hex(const void *data, size_t len, char out[41]) {
    uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
    const unsigned char *p = data;
    size_t left = len;
    for (; left >= 64; left -= 64, p += 64)
        sha1_block(h, p);
    /* The padding (5.1.1): a 1 bit, zeros, and the length in bits as 64
     * bits, big-endian, ending a block; one or two blocks. */
    unsigned char tail[128];
    memset(tail, 0, sizeof tail);
    if (left > 0) memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t blocks = left + 1 + 8 <= 64 ? 1 : 2;
    uint64_t bits = (uint64_t)len * 8u;
    for (int i = 0; i < 8; i++)
        tail[blocks * 64 - 1 - (size_t)i] = (unsigned char)(bits >> (8 * i));
    for (size_t b = 0; b < blocks; b++)
        sha1_block(h, tail + 64 * b);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 20; i++) {
        unsigned v = (unsigned)(h[i / 4] >> (24 - 8 * (i % 4))) & 0xffu;
        out[2 * i] = hex[v >> 4];
        out[2 * i + 1] = hex[v & 15];
    }
    out[40] = '\0';
}
