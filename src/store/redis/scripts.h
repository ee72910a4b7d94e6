/* SPDX-License-Identifier: MIT */
/*
 * scripts.h - the fleet protocol's Lua scripts (the files of lua/, docs/fleet.md)
 * and the layout of their answers.
 *
 * Each script is one text, embedded at build time (cmake/embed_lua.cmake):
 * the constants below, lua/prelude.lua, then the script's own file (the
 * credit script, lua/credit.lua, has no prelude). The
 * .lua files are the server half's only copy: Redis runs them, and so does
 * the in-process transport's embedded Lua.
 */
#ifndef BREAKER_REDIS_SCRIPTS_H
#define BREAKER_REDIS_SCRIPTS_H

#include "core/config_fields.h"

/* The scripts' constants, from the configuration's ranges
 * (core/config_fields.h): BIG bounds stored integers (generations, times in
 * µs, counters: 2^52, exact in Lua's doubles with room to count), DUR the
 * longest duration (365 days in µs). */
/* clang-format off */
#define BREAKER__LUA_CONSTANTS                                                  \
    "local BIG = 4503599627370496\n"                                            \
    "local BIG_TEXT = '4503599627370496'\n"                                     \
    "local DUR = 31536000000000\n"                                              \
    "local MAX_MIN_CALLS = " BREAKER__STR(BREAKER__MAX_MIN_CALLS) "\n"          \
    "local MAX_BUCKETS = " BREAKER__STR(BREAKER__MAX_BUCKETS) "\n"              \
    "local MAX_BACKOFF = " BREAKER__STR(BREAKER__MAX_OPEN_BACKOFF) "\n"         \
    "local MAX_PROBES = 4095\n"                                                 \
    "local MAX_THRESHOLD = " BREAKER__STR(BREAKER__MAX_FAILURE_THRESHOLD) "\n"  \
    "local MAX_SOURCES = " BREAKER__STR(BREAKER__MAX_FAILING_SOURCES) "\n"      \
    "local WHO_MAX = " BREAKER__STR(BREAKER__FLEET_WHO_MAX) "\n"                \
    "local WHY_MAX = " BREAKER__STR(BREAKER__FLEET_WHY_MAX) "\n"
/* clang-format on */
_Static_assert(BREAKER__MAX_DURATION_DAYS == 365, "DUR is 365 days");
_Static_assert(BREAKER__MAX_PROBES == 4095, "MAX_PROBES is the core's");

extern const char breaker__redis_lua_flush[];
extern const char breaker__redis_lua_acquire[];
extern const char breaker__redis_lua_release[];
extern const char breaker__redis_lua_control[];
extern const char breaker__redis_lua_credit[]; /* without the prelude (lua/credit.lua) */

/* The control record (lua/control.lua, docs/fleet.md "Controls"): who
 * changed it and why, at most this many bytes each. */
#define BREAKER__FLEET_WHO_MAX 64
#define BREAKER__FLEET_WHY_MAX 200
/* Its forced state, as the scripts store it (field cf of the state hash). */
enum { FLEET_FORCED_NONE = 0, FLEET_FORCED_OPEN = 1, FLEET_FORCED_CLOSED = 2 };

/* Shared by the scripts (lua/) and the client's decisions
 * (protocol.c), which reads the answers and makes the calls. */

/* Fleet states as the scripts write them. */
enum { FLEET_CLOSED = 0, FLEET_OPEN = 1, FLEET_HALF_OPEN = 2 };

/* Verdicts (element 5 of an answer). */
enum {
    VERDICT_NONE = 0,    /* flush: no trip; acquire: refused */
    VERDICT_TRIPPED = 1, /* flush: this flush tripped the fleet */
    VERDICT_CLOSED = 1,  /* acquire: the fleet is closed, no lease needed */
    VERDICT_GRANTED = 2, /* acquire: a lease */
    VERDICT_STALE = 3,   /* release: expired or another generation */
    VERDICT_APPLIED = 4  /* release: counted */
};

/* release_probe's result argument (ARGV 5). */
enum { FLEET_RESULT_SUCCESS = 0, FLEET_RESULT_FAILURE = 1, FLEET_RESULT_NEITHER = 2 };

/* Elements of every answer. */
enum {
    ANS_STATE,
    ANS_GEN,
    ANS_WAIT_US,
    ANS_K,
    ANS_SUCC,
    ANS_VERDICT,
    ANS_CALLS,
    ANS_FAILURES,
    ANS_SLOW,
    ANS_BORN, /* the generation the state was created with */
    ANS_CV,   /* the control record's version (0: never set) */
    ANS_COUNT
};
/* After them, in the control script's answer: the record. Its forced
 * state in force (FLEET_FORCED_*; one whose time ran out is NONE), the
 * time it has left in µs (0: no end), shadow mode (0, 1), the generation
 * the last reset made (0: none), who and why (strings), the last change's
 * age in µs, the last reset's age in µs (0: none), then the limits as
 * text, by the names of breaker__fleet_limit_names. */
enum {
    ANS_REC_FORCED = ANS_COUNT,
    ANS_REC_LEFT_US,
    ANS_REC_SHADOW,
    ANS_REC_RESET,
    ANS_REC_WHO,
    ANS_REC_WHY,
    ANS_REC_AGE_US,
    ANS_REC_RESET_AGE_US,
    ANS_REC_LIMITS,
    ANS_WITH_RECORD = ANS_REC_LIMITS + 14
};

#endif /* BREAKER_REDIS_SCRIPTS_H */
