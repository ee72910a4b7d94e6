/* SPDX-License-Identifier: MIT */
/*
 * bitlib.c - the `bit` library Redis gives its scripts, with the semantics
 * of LuaBitOp 1.0 (bitop.luajit.org/semantics.html), which Redis embeds:
 * every argument is first reduced to 32 bits the way LuaBitOp does it
 * (adding 2^52 + 2^51 to the double and keeping the low word: integers
 * modulo 2^32, other numbers rounded to nearest, ties to even), every
 * result is a signed 32-bit number, shift counts use their low 5 bits.
 * Functions: tobit, tohex, bnot, band, bor, bxor, lshift, rshift,
 * arshift, rol, ror, bswap.
 */
#include "store/redis/inproc/engine.h"

#include <lauxlib.h>
#include <lua.h>
#include <string.h>

/* The argument at `i`, reduced to 32 bits. A string that reads as a
 * number is that number (lua_tonumber()); anything else is an error
 * naming the argument, as luaL_typerror() words it. */
static uint32_t bits_of(lua_State *L, int i) {
    double n = lua_tonumber(L, i);
    if (n == 0 && !lua_isnumber(L, i)) luaL_typerror(L, i, "number");
    double shifted = n + 6755399441055744.0; /* 2^52 + 2^51 */
    uint64_t raw;
    memcpy(&raw, &shifted, sizeof raw);
    return (uint32_t)raw;
}

static int push_bits(lua_State *L, uint32_t b) {
    int32_t s;
    memcpy(&s, &b, sizeof s); /* two's complement, without an out-of-range conversion */
    lua_pushnumber(L, (lua_Number)s);
    return 1;
}

static int bit_tobit(lua_State *L) { return push_bits(L, bits_of(L, 1)); }
static int bit_bnot(lua_State *L) { return push_bits(L, ~bits_of(L, 1)); }

static int bit_band(lua_State *L) {
    uint32_t b = bits_of(L, 1);
    for (int i = lua_gettop(L); i > 1; i--)
        b &= bits_of(L, i);
    return push_bits(L, b);
}

static int bit_bor(lua_State *L) {
    uint32_t b = bits_of(L, 1);
    for (int i = lua_gettop(L); i > 1; i--)
        b |= bits_of(L, i);
    return push_bits(L, b);
}

static int bit_bxor(lua_State *L) {
    uint32_t b = bits_of(L, 1);
    for (int i = lua_gettop(L); i > 1; i--)
        b ^= bits_of(L, i);
    return push_bits(L, b);
}

static int bit_lshift(lua_State *L) {
    uint32_t b = bits_of(L, 1), n = bits_of(L, 2) & 31u;
    return push_bits(L, b << n);
}

static int bit_rshift(lua_State *L) {
    uint32_t b = bits_of(L, 1), n = bits_of(L, 2) & 31u;
    return push_bits(L, b >> n);
}

/* Arithmetic: the sign bit is copied in. */
static int bit_arshift(lua_State *L) {
    uint32_t b = bits_of(L, 1), n = bits_of(L, 2) & 31u;
    uint32_t r = b >> n;
    if ((b & 0x80000000u) && n > 0) r |= ~(UINT32_MAX >> n);
    return push_bits(L, r);
}

static int bit_rol(lua_State *L) {
    uint32_t b = bits_of(L, 1), n = bits_of(L, 2) & 31u;
    return push_bits(L, n == 0 ? b : (b << n) | (b >> (32u - n)));
}

static int bit_ror(lua_State *L) {
    uint32_t b = bits_of(L, 1), n = bits_of(L, 2) & 31u;
    return push_bits(L, n == 0 ? b : (b >> n) | (b << (32u - n)));
}

static int bit_bswap(lua_State *L) {
    uint32_t b = bits_of(L, 1);
    return push_bits(L, (b >> 24) | ((b >> 8) & 0xff00u) | ((b & 0xff00u) << 8) | (b << 24));
}

/* tohex(x [, n]): the low |n| hex digits of x (n 8 by default, at most
 * 8), upper case for a negative n. The most negative n counts as 8
 * (Redis's fix for it, CVE-2024-31449, clamps it likewise). */
static int bit_tohex(lua_State *L) {
    uint32_t b = bits_of(L, 1);
    int32_t n = 8;
    if (!lua_isnone(L, 2)) {
        uint32_t raw = bits_of(L, 2);
        memcpy(&n, &raw, sizeof n);
    }
    const char *digits = "0123456789abcdef";
    if (n < 0) {
        digits = "0123456789ABCDEF";
        n = n == INT32_MIN ? 8 : -n;
    }
    if (n > 8) n = 8;
    char buf[8];
    for (int i = n - 1; i >= 0; i--) {
        buf[i] = digits[b & 15u];
        b >>= 4;
    }
    lua_pushlstring(L, buf, (size_t)n);
    return 1;
}

void breaker__inproc_push_bitlib(lua_State *L) {
    static const luaL_Reg fns[] = {
        {"tobit", bit_tobit},   {"bnot", bit_bnot},       {"band", bit_band},
        {"bor", bit_bor},       {"bxor", bit_bxor},       {"lshift", bit_lshift},
        {"rshift", bit_rshift}, {"arshift", bit_arshift}, {"rol", bit_rol},
        {"ror", bit_ror},       {"bswap", bit_bswap},     {"tohex", bit_tohex},
    };
    lua_createtable(L, 0, (int)(sizeof fns / sizeof fns[0]));
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        lua_pushcfunction(L, fns[i].func);
        lua_setfield(L, -2, fns[i].name);
    }
}
