/* SPDX-License-Identifier: MIT */
/* fleet_workload.c - random sequences of the fleet's calls (fleet_workload.h). */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "fleet_workload.h"

#include "common/splitmix.h"
#include "store/redis/protocol.h"
#include "store/redis/scripts.h"

#include <breaker.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES    3
#define HOSTS    3
#define MAX_HELD 32
#define SEC_US   UINT64_C(1000000)
#define TTL_NS   (UINT64_C(3600) * 1000000000u)

struct name {
    const char *name;
    char key[FLEET_KEY_COUNT][BREAKER__FLEET_KEY_LEN];
    char limits[HOSTS][BREAKER__FLEET_LIMITS_LEN]; /* what each host sends */
    char live[BREAKER__FLEET_LIMITS_LEN];          /* limits that may change live */
    char fixed[BREAKER__FLEET_LIMITS_LEN];         /* limits with another window: refused */
    struct breaker__fleet_limits lim;
    /* Learnt from the answers: the fleet's edges (µs on the clock, 0: none)
     * and the stored limits' generation. */
    uint64_t open_end_us, lease_end_us, order_end_us;
    uint64_t cfg_gen;
};

struct view {
    uint64_t known_gen;
    uint64_t seq;
    struct breaker__fleet_call last; /* the last flush call, to send again */
    bool has_last;
};

struct held {
    int host, name;
    uint64_t token, gen;
};

struct fleet_workload {
    uint64_t seed, rng, tokens, clock_us;
    struct name names[NAMES];
    struct view views[HOSTS][NAMES];
    char host_id[HOSTS][17];
    struct held held[MAX_HELD];
    int held_count;
    /* The acquire in flight: its host, name and token. */
    struct held asking;
};

static uint64_t rnd(struct fleet_workload *w, uint64_t n) {
    return n == 0 ? 0 : breaker__splitmix64_next(&w->rng) % n;
}

const char *fleet_workload_script(int which) {
    switch (which) {
    case WL_FLUSH:
        return breaker__redis_lua_flush;
    case WL_ACQUIRE:
        return breaker__redis_lua_acquire;
    case WL_RELEASE:
        return breaker__redis_lua_release;
    default:
        return breaker__redis_lua_control;
    }
}

uint64_t fleet_workload_clock_ns(const struct fleet_workload *w) { return w->clock_us * 1000u; }

/* ---- Names and limits ------------------------------------------------------------------- */

static void limits_of(const breaker_config *c, char *out, struct breaker__fleet_limits *l) {
    breaker *b = NULL;
    breaker_config eff = *c;
    if (breaker_create(c, &b) == BREAKER_OK) {
        breaker_get_config(b, &eff);
        breaker_destroy(b);
    }
    breaker__fleet_limits_text(&eff, out, BREAKER__FLEET_LIMITS_LEN);
    if (l != NULL) breaker__fleet_limits_of(&eff, l);
}

#define MS_NS UINT64_C(1000000)

static void setup_names(struct fleet_workload *w) {
    static const char *const names[NAMES] = {"window", "consecutive", "short"};
    breaker_config c[NAMES];
    for (int i = 0; i < NAMES; i++)
        breaker_config_init(&c[i]);
    /* A time window with a slow-call rate, backoff and jitter, two probes,
     * two failing callers needed. */
    c[0].window_ns = 10000 * MS_NS;
    c[0].window_buckets = 10;
    c[0].min_calls = 10;
    c[0].failure_rate = 0.5;
    c[0].slow_call_ns = 100 * MS_NS;
    c[0].slow_call_rate = 0.4;
    c[0].open_ns = 2000 * MS_NS;
    c[0].open_backoff = 2;
    c[0].open_max_ns = 20000 * MS_NS;
    c[0].open_jitter = 0.3;
    c[0].half_open_max_probes = 2;
    c[0].half_open_successes = 2;
    c[0].probe_timeout_ns = 1000 * MS_NS;
    c[0].min_failing_sources = 2;
    /* CONSECUTIVE: the fleet's run of failures. */
    c[1].trip = BREAKER_TRIP_CONSECUTIVE;
    c[1].failure_threshold = 5;
    c[1].open_ns = 1000 * MS_NS;
    c[1].open_max_ns = 8000 * MS_NS;
    c[1].probe_timeout_ns = 500 * MS_NS;
    c[1].half_open_successes = 1;
    c[1].min_failing_sources = 0;
    /* A short window of few buckets, no jitter, three probes. */
    c[2].window_ns = 3000 * MS_NS;
    c[2].window_buckets = 3;
    c[2].min_calls = 3;
    c[2].failure_rate = 0.34;
    c[2].open_ns = 700 * MS_NS;
    c[2].open_backoff = 1.5;
    c[2].open_max_ns = 4000 * MS_NS;
    c[2].open_jitter = 0;
    c[2].half_open_max_probes = 3;
    c[2].half_open_successes = 3;
    c[2].probe_timeout_ns = 2000 * MS_NS;
    c[2].min_failing_sources = 0;
    for (int i = 0; i < NAMES; i++) {
        struct name *n = &w->names[i];
        n->name = names[i];
        for (int k = 0; k < FLEET_KEY_COUNT; k++)
            breaker__fleet_key(n->name, k, n->key[k], sizeof n->key[k]);
        for (int h = 0; h < HOSTS; h++)
            limits_of(&c[i], n->limits[h], h == 0 ? &n->lim : NULL);
        breaker_config live = c[i];
        live.min_calls = c[i].min_calls + 2;
        live.open_ns = c[i].open_ns / 2;
        live.half_open_successes = 1;
        limits_of(&live, n->live, NULL);
        breaker_config fixed = c[i];
        fixed.window_ns = c[i].window_ns * 2;
        limits_of(&fixed, n->fixed, NULL);
    }
    /* One host asks for other limits for "window": they win only when it
     * is the first to call after the state is gone. */
    breaker_config other = c[0];
    other.min_calls = 4;
    other.open_jitter = 0.9;
    limits_of(&other, w->names[0].limits[2], NULL);
}

struct fleet_workload *fleet_workload_create(uint64_t seed) {
    struct fleet_workload *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    w->seed = seed;
    w->rng = seed;
    setup_names(w);
    for (int h = 0; h < HOSTS; h++)
        breaker__fleet_host_id(breaker__splitmix64(seed + (uint64_t)h), w->host_id[h]);
    w->clock_us = UINT64_C(1700000000000000) + rnd(w, UINT64_C(1000000000000));
    return w;
}

void fleet_workload_destroy(struct fleet_workload *w) { free(w); }

/* ---- Building a step ----------------------------------------------------------------- */

static void describe(struct fleet_op *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->desc, sizeof op->desc, fmt, ap);
    va_end(ap);
}

static void start(struct fleet_op *op, int kind) {
    op->kind = kind;
    op->script = -1;
    op->argc = 0;
    op->desc[0] = '\0';
}

/* Append `len` bytes as the next argument (copied into the arena, except
 * a script's text, which lives for the program). */
static void arg(struct fleet_op *op, const char *s, size_t len) {
    size_t used = 0;
    for (int i = 0; i < op->argc; i++)
        if (op->argv[i] >= op->arena && op->argv[i] < op->arena + sizeof op->arena)
            used = (size_t)(op->argv[i] - op->arena) + op->argvlen[i] + 1;
    if (op->argc == FLEET_OP_ARGS || used + len + 1 > sizeof op->arena) abort();
    memcpy(op->arena + used, s, len);
    op->arena[used + len] = '\0';
    op->argv[op->argc] = op->arena + used;
    op->argvlen[op->argc++] = len;
}

static void arg_text(struct fleet_op *op, const char *s) { arg(op, s, strlen(s)); }

/* EVAL script `which` for name `n`, with the limits `limits` and `extra`. */
static void script(struct fleet_op *op, int which, const struct name *n, const char *limits,
                   int extra, const char *const *extra_args) {
    start(op, FLEET_OP_SCRIPT);
    op->script = which;
    arg_text(op, "EVAL");
    const char *text = fleet_workload_script(which);
    op->argv[op->argc] = text;
    op->argvlen[op->argc++] = strlen(text);
    arg_text(op, BREAKER__FLEET_KEY_COUNT_TEXT);
    for (int k = 0; k < FLEET_KEY_COUNT; k++)
        arg_text(op, n->key[k]);
    char ttl[24];
    breaker__fleet_ttl_text(TTL_NS, ttl);
    arg_text(op, ttl);
    arg_text(op, limits);
    for (int i = 0; i < extra; i++)
        arg_text(op, extra_args[i]);
}

static void call_script(struct fleet_op *op, const struct name *n, const char *limits,
                        const struct breaker__fleet_call *c) {
    const char *args[BREAKER__FLEET_CALL_ARGS];
    for (int i = 0; i < c->argc; i++)
        args[i] = c->argv[i];
    int which = c->script == FLEET_SCRIPT_FLUSH     ? WL_FLUSH
                : c->script == FLEET_SCRIPT_ACQUIRE ? WL_ACQUIRE
                                                    : WL_RELEASE;
    script(op, which, n, limits, c->argc, args);
}

static void op_flush(struct fleet_workload *w, int host, int ni, struct fleet_op *op) {
    struct view *v = &w->views[host][ni];
    struct name *n = &w->names[ni];
    if (v->has_last && rnd(w, 6) == 0) {
        /* The round tried again after a cut connection: the same call. */
        call_script(op, n, n->limits[host], &v->last);
        describe(op, "host %d flush %s again (seq %s)", host, n->name, v->last.argv[6]);
        return;
    }
    struct breaker__fleet_deltas d = {0};
    if (rnd(w, 5) != 0) {
        d.calls = rnd(w, 13);
        /* Failures from a mostly healthy or a mostly failing dependency. */
        d.failures = rnd(w, 2) ? rnd(w, d.calls / 3 + 1) : d.calls - rnd(w, d.calls / 4 + 1);
        d.slow = rnd(w, 4) == 0 ? rnd(w, d.calls + 1) : 0;
        d.run = d.failures == d.calls ? (uint32_t)(d.failures + rnd(w, 4)) : (uint32_t)rnd(w, 3);
    }
    uint64_t known = v->known_gen;
    uint64_t pick = rnd(w, 20);
    if (pick == 0) known = 0;                           /* a host that knew none */
    if (pick == 1 && known > 0) known -= 1 + rnd(w, 3); /* an older one */
    struct breaker__fleet_call call;
    breaker__fleet_call_flush(&call, known, &d);
    uint64_t seq = breaker__fleet_next_seq(v->seq, w->clock_us / 1000 + rnd(w, 2000));
    if (rnd(w, 25) == 0 && v->seq > 0) seq = v->seq - rnd(w, 2); /* not newer: a late call */
    if (seq > v->seq) v->seq = seq;
    breaker__fleet_call_sequence(&call, w->host_id[host], seq);
    /* The host's failing-source map: none, or a few of 6 callers' bits. */
    uint64_t map = 0;
    if (d.failures > 0 && rnd(w, 2) == 0) {
        static const unsigned bit[6] = {0, 5, 31, 32, 47, 63};
        for (unsigned k = 0, m = (unsigned)rnd(w, 4) + 1; k < m; k++)
            map |= UINT64_C(1) << bit[rnd(w, 6)];
    }
    breaker__fleet_call_sources(&call, map);
    /* Now and then a server-directed wait: short, about open_max, beyond
     * it, or beyond what the script takes (refused). */
    uint64_t directed = 0, dpick = rnd(w, 12), omax = n->lim.open_max_us;
    if (dpick == 0) directed = 1 + rnd(w, 3000000);
    if (dpick == 1) directed = omax + (uint64_t)((int64_t)rnd(w, 3) - 1);
    if (dpick == 2) directed = omax + 1 + rnd(w, 100000000);
    if (dpick == 3 && rnd(w, 8) == 0) directed = BREAKER__FLEET_MAX_DURATION_US + 1;
    breaker__fleet_call_directed(&call, directed);
    v->last = call;
    v->has_last = true;
    call_script(op, n, n->limits[host], &call);
    describe(op, "host %d flush %s gen %s calls %s fail %s slow %s run %s seq %s directed %s", host,
             n->name, call.argv[0], call.argv[1], call.argv[2], call.argv[3], call.argv[4],
             call.argv[6], call.argv[9]);
}

static void op_read(struct fleet_workload *w, int host, int ni, struct fleet_op *op) {
    start(op, FLEET_OP_COMMAND);
    arg_text(op, "HMGET");
    arg_text(op, w->names[ni].key[FLEET_KEY_STATE]);
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++)
        arg_text(op, breaker__fleet_read_fields[i]);
    describe(op, "host %d read %s", host, w->names[ni].name);
}

static void op_acquire(struct fleet_workload *w, int host, int ni, struct fleet_op *op) {
    uint64_t token = breaker__splitmix64(w->seed ^ ++w->tokens);
    struct breaker__fleet_call call;
    breaker__fleet_call_acquire(&call, token);
    call_script(op, &w->names[ni], w->names[ni].limits[host], &call);
    w->asking = (struct held){.host = host, .name = ni, .token = token};
    describe(op, "host %d acquire %s token %s", host, w->names[ni].name, call.argv[0]);
}

static struct held take_held(struct fleet_workload *w) {
    int i = (int)rnd(w, (uint64_t)w->held_count);
    struct held h = w->held[i];
    w->held[i] = w->held[--w->held_count];
    return h;
}

static void op_release(struct fleet_workload *w, struct fleet_op *op) {
    if (w->held_count == 0) {
        start(op, FLEET_OP_NONE);
        return;
    }
    struct held h = take_held(w);
    int result = (int)rnd(w, 3);
    uint64_t gen = h.gen, pick = rnd(w, 10);
    if (pick == 0) gen = 0;         /* a release for any generation */
    if (pick == 1) gen = h.gen + 1; /* a generation that is not the lease's */
    struct breaker__fleet_call call;
    breaker__fleet_call_release(&call, gen, h.token, result);
    call_script(op, &w->names[h.name], w->names[h.name].limits[h.host], &call);
    describe(op, "host %d release %s gen %s token %s result %s", h.host, w->names[h.name].name,
             call.argv[0], call.argv[1], call.argv[2]);
}

/* A release of a lease nobody holds: an orphan's (any generation), for a
 * token never granted, or one granted and given up. */
static void op_orphan_release(struct fleet_workload *w, int host, int ni, struct fleet_op *op) {
    uint64_t token = rnd(w, 2) ? breaker__splitmix64(w->seed ^ (1 + rnd(w, w->tokens + 1)))
                               : breaker__splitmix64(~w->seed ^ w->rng);
    struct breaker__fleet_call call;
    breaker__fleet_call_release(&call, 0, token, FLEET_RESULT_NEITHER);
    call_script(op, &w->names[ni], w->names[ni].limits[host], &call);
    describe(op, "host %d orphan release %s token %s", host, w->names[ni].name, call.argv[1]);
}

/* Random text of `len` bytes: letters, or any printable byte. */
static void random_text(struct fleet_workload *w, char *out, size_t len, bool printable) {
    for (size_t i = 0; i < len; i++)
        out[i] = printable ? (char)(' ' + rnd(w, 95)) : (char)('a' + rnd(w, 26));
    out[len] = '\0';
}

static size_t text_len(struct fleet_workload *w, size_t most) {
    return rnd(w, 20) == 0 ? most + 1 : (size_t)rnd(w, most + 1);
}

/* The pairs "name value" of a named limits text, appended to `args` (kept
 * in `buf`). @return the count of arguments added. */
static int limit_pairs(const char *text, char buf[BREAKER__FLEET_LIMITS_LEN], const char **args,
                       int room) {
    snprintf(buf, BREAKER__FLEET_LIMITS_LEN, "%s", text);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok != NULL && n + 2 <= room;
         tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) continue;
        *eq = '\0';
        args[n++] = tok;
        args[n++] = eq + 1;
    }
    return n;
}

/* An operator's control of the record: a forced state (open or closed; no
 * time, a short one, one longer than open_max, or one out of range), a
 * reset, shadow mode (or a bad value), new limits (ones that may change
 * live, the same as now, another window: refused, or out of range:
 * refused), alone or together, against the version read (or one that
 * moved: CONFLICT), or a read; who and why of random lengths (some too
 * long: refused). */
static void op_control(struct fleet_workload *w, int host, int ni, struct fleet_op *op) {
    struct name *n = &w->names[ni];
    const char *args[64];
    int a = 0;
    char version[24] = "";
    uint64_t vpick = rnd(w, 6);
    if (vpick == 0) snprintf(version, sizeof version, "%" PRIu64, n->cfg_gen + 1);
    if (vpick == 1 || vpick == 2) snprintf(version, sizeof version, "%" PRIu64, n->cfg_gen);
    char who[BREAKER__FLEET_WHO_MAX + 2], why[BREAKER__FLEET_WHY_MAX + 2];
    random_text(w, who, text_len(w, BREAKER__FLEET_WHO_MAX), false);
    random_text(w, why, text_len(w, BREAKER__FLEET_WHY_MAX), true);
    args[a++] = version;
    args[a++] = who;
    args[a++] = why;
    char dur_text[24], buf[BREAKER__FLEET_LIMITS_LEN];
    uint64_t what = rnd(w, 16);
    if (what & 1) {
        args[a++] = "reset";
        args[a++] = "1";
    }
    if (what & 2) {
        uint64_t dur = 0, pick = rnd(w, 10);
        if (pick >= 3 && pick < 6) dur = 1 + rnd(w, 2000000);
        if (pick == 6 || pick == 7) dur = n->lim.open_max_us + rnd(w, 30000000);
        if (pick == 8 && rnd(w, 4) == 0) dur = BREAKER__FLEET_MAX_DURATION_US + 1;
        snprintf(dur_text, sizeof dur_text, "%" PRIu64, dur);
        args[a++] = "forced";
        args[a++] = rnd(w, 12) == 0 ? "sideways" : rnd(w, 2) ? "open" : "closed";
        args[a++] = "for";
        args[a++] = dur_text;
    }
    if (what & 4) {
        args[a++] = "shadow";
        args[a++] = rnd(w, 8) == 0 ? "2" : rnd(w, 2) ? "1" : "0";
    }
    if (what & 8) {
        uint64_t pick = rnd(w, 8);
        const char *limits = pick < 3    ? n->live
                             : pick == 3 ? n->limits[0]
                             : pick == 4 ? n->fixed
                             : pick == 5 ? "min_calls=0 failure_rate=0"
                                         : (rnd(w, 2) ? n->live : n->limits[0]);
        a += limit_pairs(limits, buf, args + a, 64 - a);
    }
    script(op, WL_CONTROL, n, n->limits[host], a, args);
    describe(op, "host %d control %s (what %" PRIu64 ", version '%s', who %zu, why %zu bytes)",
             host, n->name, what, version, strlen(who), strlen(why));
}

static void op_corrupt(struct fleet_workload *w, int ni, struct fleet_op *op) {
    static const struct {
        const char *field, *value;
    } bad[] = {{"st", "7"},   {"st", "-1"},      {"gen", "-5"},
               {"k", "-1"},   {"succ", "99999"}, {"until", "99999999999999999"},
               {"born", "x"}, {"ef", "1"},       {"cfg", "0 0 0 0 0 0 0 0 0 0 0 0 0"},
               {"ok", "9"},   {"sh", "2"},       {"cg", "-1"},
               {"q", "junk"}, {"w", "c1 x"}};
    uint64_t pick = rnd(w, sizeof bad / sizeof bad[0]);
    const char *field = bad[pick].field;
    start(op, FLEET_OP_COMMAND);
    arg_text(op, "HSET");
    if (strcmp(field, "q") == 0) {
        arg_text(op, w->names[ni].key[FLEET_KEY_SEQ]);
        arg_text(op, "zz");
    } else if (strcmp(field, "w") == 0) {
        arg_text(op, w->names[ni].key[FLEET_KEY_WINDOW]);
        arg_text(op, "c1");
    } else {
        arg_text(op, w->names[ni].key[FLEET_KEY_STATE]);
        arg_text(op, field);
    }
    arg_text(op, bad[pick].value);
    describe(op, "corrupt %s: %s = %s", w->names[ni].name, field, bad[pick].value);
}

/* The clock moves: a little, some, a lot, about the keys' TTL, or onto an
 * edge the scripts compare against (exactly, or a microsecond either side). */
static void op_clock(struct fleet_workload *w, struct fleet_op *op) {
    start(op, FLEET_OP_CLOCK);
    struct name *n = &w->names[rnd(w, NAMES)];
    uint64_t kind = rnd(w, 10), by = 0, edge = 0;
    int64_t nudge = (int64_t)rnd(w, 3) - 1;
    const char *why = "";
    if (kind <= 3) {
        by = rnd(w, 300000);
        why = "a little";
    } else if (kind <= 5) {
        by = rnd(w, 3000000);
        why = "some";
    } else if (kind == 6 && rnd(w, 5) == 0) {
        by = TTL_NS / 1000 + (uint64_t)nudge * 1000000;
        why = "about the key TTL";
    } else if (kind == 6) {
        by = 5000000 + rnd(w, 60000000);
        why = "a lot";
    } else if (kind == 7 && n->open_end_us > w->clock_us + 1) {
        edge = n->open_end_us;
        why = "to the end of an open wait";
    } else if (kind == 8 && n->lease_end_us > w->clock_us + 1) {
        edge = n->lease_end_us;
        why = "to a lease deadline";
    } else if (kind == 9 && n->order_end_us > w->clock_us + 1) {
        edge = n->order_end_us;
        why = "to an order's end";
    } else {
        uint64_t span = n->lim.window_us / n->lim.buckets;
        edge = (w->clock_us / span + 1) * span;
        why = "to a bucket's start";
    }
    if (edge != 0) by = edge + (uint64_t)nudge - w->clock_us;
    w->clock_us += by;
    describe(op, "clock +%" PRIu64 " us (%s, %s)", by, why, n->name);
}

void fleet_workload_next(struct fleet_workload *w, struct fleet_op *op) {
    int host = (int)rnd(w, HOSTS), ni = (int)rnd(w, NAMES);
    uint64_t x = rnd(w, 200);
    if (x < 50) {
        op_flush(w, host, ni, op);
    } else if (x < 62) {
        op_read(w, host, ni, op);
    } else if (x < 97) {
        op_acquire(w, host, ni, op);
    } else if (x < 125) {
        op_release(w, op);
    } else if (x < 130) {
        start(op, FLEET_OP_NONE);
        if (w->held_count > 0) {
            struct held h = take_held(w);
            describe(op, "host %d killed holding %s's lease", h.host, w->names[h.name].name);
        }
    } else if (x < 135) {
        op_orphan_release(w, host, ni, op);
    } else if (x < 151) {
        op_control(w, host, ni, op);
    } else if (x < 190) {
        op_clock(w, op);
    } else if (x < 193) {
        start(op, FLEET_OP_COMMAND);
        arg_text(op, "FLUSHALL");
        describe(op, "FLUSHALL");
    } else if (x < 196) {
        start(op, FLEET_OP_COMMAND);
        arg_text(op, "DEL");
        arg_text(op, w->names[ni].key[FLEET_KEY_STATE]);
        describe(op, "DEL %s", w->names[ni].key[FLEET_KEY_STATE]);
    } else if (x < 199) {
        op_corrupt(w, ni, op);
    } else {
        start(op, FLEET_OP_RESTART);
        describe(op, "restart");
    }
}

/* ---- Learning from the answers --------------------------------------------------------- */

static int64_t field_int(const breaker_redis_reply *r, size_t i) {
    return i < r->elements && r->element[i]->type == BREAKER_REDIS_REPLY_INTEGER
               ? (int64_t)r->element[i]->integer
               : 0;
}

static int name_of(const struct fleet_workload *w, const struct fleet_op *op) {
    for (int i = 0; i < NAMES; i++)
        if (op->argc > 3 && strcmp(op->argv[3], w->names[i].key[FLEET_KEY_STATE]) == 0) return i;
    return -1;
}

static int host_of(const struct fleet_workload *w, const struct fleet_op *op, int ni) {
    for (int h = 0; h < HOSTS; h++)
        if (op->argc > 8 && strcmp(op->argv[8], w->names[ni].limits[h]) == 0) return h;
    return 0;
}

void fleet_workload_answered(struct fleet_workload *w, const struct fleet_op *op,
                             const breaker_redis_reply *r) {
    if (op->kind != FLEET_OP_SCRIPT || r->type != BREAKER_REDIS_REPLY_ARRAY ||
        r->elements < ANS_COUNT)
        return;
    int ni = name_of(w, op);
    if (ni < 0) return;
    struct name *n = &w->names[ni];
    uint64_t gen = (uint64_t)field_int(r, ANS_GEN), wait = (uint64_t)field_int(r, ANS_WAIT_US);
    int state = (int)field_int(r, ANS_STATE), verdict = (int)field_int(r, ANS_VERDICT);
    w->views[host_of(w, op, ni)][ni].known_gen = gen;
    if (state == FLEET_OPEN && wait > 0) n->open_end_us = w->clock_us + wait;
    if (r->elements == ANS_WITH_RECORD && field_int(r, ANS_REC_LEFT_US) > 0)
        n->order_end_us = w->clock_us + (uint64_t)field_int(r, ANS_REC_LEFT_US);
    n->cfg_gen = (uint64_t)field_int(r, ANS_CV); /* the record's version */
    if (op->script == WL_ACQUIRE && verdict == VERDICT_GRANTED && w->asking.name == ni) {
        n->lease_end_us = w->clock_us + wait;
        if (w->held_count < MAX_HELD) {
            w->asking.gen = gen;
            w->held[w->held_count++] = w->asking;
        }
    }
}

/* ---- Comparing ------------------------------------------------------------------------- */

bool fleet_reply_equal(const breaker_redis_reply *a, const breaker_redis_reply *b, char *why,
                       size_t why_len) {
    if (a->type != b->type) {
        snprintf(why, why_len, "type %d against %d (%s / %s)", a->type, b->type,
                 a->str != NULL ? a->str : "", b->str != NULL ? b->str : "");
        return false;
    }
    switch (a->type) {
    case BREAKER_REDIS_REPLY_INTEGER:
        if (a->integer == b->integer) return true;
        snprintf(why, why_len, "integer %lld against %lld", a->integer, b->integer);
        return false;
    case BREAKER_REDIS_REPLY_ARRAY:
        if (a->elements != b->elements) {
            snprintf(why, why_len, "%zu elements against %zu", a->elements, b->elements);
            return false;
        }
        for (size_t i = 0; i < a->elements; i++) {
            char inner[400];
            if (!fleet_reply_equal(a->element[i], b->element[i], inner, sizeof inner)) {
                snprintf(why, why_len, "element %zu: %s", i, inner);
                return false;
            }
        }
        return true;
    case BREAKER_REDIS_REPLY_NIL:
        return true;
    default:
        if (a->len == b->len && memcmp(a->str, b->str, a->len) == 0) return true;
        snprintf(why, why_len, "'%.150s' against '%.150s'", a->str, b->str);
        return false;
    }
}

static breaker_redis_reply *side_run(struct fleet_side *s, int argc, const char *const *argv) {
    size_t len[8];
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    return s->run(s->ctx, argc, argv, len);
}

static int cmp_text(const void *x, const void *y) {
    const breaker_redis_reply *a = *(breaker_redis_reply *const *)x;
    const breaker_redis_reply *b = *(breaker_redis_reply *const *)y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->str, b->str, n);
    return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/* A hash's pairs (or KEYS' keys), sorted by their first element. */
static void sort_pairs(breaker_redis_reply *r, size_t per) {
    size_t n = r->elements / per;
    if (n == 0) return;
    breaker_redis_reply **tmp = malloc((r->elements + 1) * sizeof *tmp);
    breaker_redis_reply **keys = malloc((n + 1) * sizeof *keys);
    if (tmp == NULL || keys == NULL) abort();
    for (size_t i = 0; i < n; i++)
        keys[i] = r->element[i * per];
    qsort(keys, n, sizeof *keys, cmp_text);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (r->element[j * per] == keys[i]) {
                for (size_t k = 0; k < per; k++)
                    tmp[i * per + k] = r->element[j * per + k];
                break;
            }
    memcpy(r->element, tmp, r->elements * sizeof *tmp);
    free(tmp);
    free(keys);
}

/* Drop the test's own keys (breaker:test:*) from a KEYS reply. */
static void drop_test_keys(breaker_redis_reply *r) {
    size_t k = 0;
    for (size_t i = 0; i < r->elements; i++) {
        if (strncmp(r->element[i]->str, "breaker:test:", 13) == 0)
            breaker_redis_reply_free(r->element[i]);
        else
            r->element[k++] = r->element[i];
    }
    r->elements = k;
}

static bool same(struct fleet_side *a, struct fleet_side *b, int argc, const char *const *argv,
                 size_t sort_per, char *why, size_t why_len) {
    breaker_redis_reply *ra = side_run(a, argc, argv), *rb = side_run(b, argc, argv);
    if (ra == NULL || rb == NULL) abort();
    if (sort_per > 0 && ra->type == BREAKER_REDIS_REPLY_ARRAY &&
        rb->type == BREAKER_REDIS_REPLY_ARRAY) {
        sort_pairs(ra, sort_per);
        sort_pairs(rb, sort_per);
    }
    char inner[400];
    bool ok = fleet_reply_equal(ra, rb, inner, sizeof inner);
    if (!ok)
        snprintf(why, why_len, "%s %s: %s %s against %s", argv[0], argc > 1 ? argv[1] : "", inner,
                 a->name, b->name);
    breaker_redis_reply_free(ra);
    breaker_redis_reply_free(rb);
    return ok;
}

bool fleet_sides_equal(struct fleet_side *a, struct fleet_side *b, char *why, size_t why_len) {
    const char *keys_argv[] = {"KEYS", "*"};
    breaker_redis_reply *ka = side_run(a, 2, keys_argv), *kb = side_run(b, 2, keys_argv);
    if (ka == NULL || kb == NULL) abort();
    drop_test_keys(ka);
    drop_test_keys(kb);
    sort_pairs(ka, 1);
    sort_pairs(kb, 1);
    char inner[400];
    bool ok = fleet_reply_equal(ka, kb, inner, sizeof inner);
    if (!ok) snprintf(why, why_len, "KEYS: %s", inner);
    for (size_t i = 0; ok && i < ka->elements; i++) {
        const char *key = ka->element[i]->str;
        const char *type_argv[] = {"TYPE", key};
        breaker_redis_reply *t = side_run(a, 2, type_argv);
        if (t == NULL) abort();
        ok = same(a, b, 2, type_argv, 0, why, why_len);
        if (ok && strcmp(t->str, "hash") == 0) {
            const char *argv[] = {"HGETALL", key};
            ok = same(a, b, 2, argv, 2, why, why_len);
        } else if (ok && strcmp(t->str, "zset") == 0) {
            const char *argv[] = {"ZRANGE", key, "0", "-1", "WITHSCORES"};
            ok = same(a, b, 5, argv, 0, why, why_len);
        }
        breaker_redis_reply_free(t);
        if (ok) {
            const char *argv[] = {"PTTL", key};
            breaker_redis_reply *pa = side_run(a, 2, argv), *pb = side_run(b, 2, argv);
            if (pa == NULL || pb == NULL) abort();
            if ((pa->integer == -1) != (pb->integer == -1)) {
                snprintf(why, why_len, "%s: PTTL %lld on %s, %lld on %s", key, pa->integer, a->name,
                         pb->integer, b->name);
                ok = false;
            }
            breaker_redis_reply_free(pa);
            breaker_redis_reply_free(pb);
        }
    }
    breaker_redis_reply_free(ka);
    breaker_redis_reply_free(kb);
    return ok;
}

static breaker_redis_reply *inproc_side(void *ctx, int argc, const char *const *argv,
                                        const size_t *argvlen) {
    return breaker__redis_inproc_command(ctx, argc, argv, argvlen);
}

bool fleet_keyspace_equal(struct fleet_workload *w, struct breaker__redis_inproc *a,
                          struct breaker__redis_inproc *b, char *why, size_t why_len) {
    (void)w;
    struct fleet_side sa = {.name = "the first", .run = inproc_side, .ctx = a};
    struct fleet_side sb = {.name = "the second", .run = inproc_side, .ctx = b};
    return fleet_sides_equal(&sa, &sb, why, why_len);
}
