/* SPDX-License-Identifier: MIT */
/*
 * fleet_server.c - the scripts of src/store/redis/scripts.c, line for line, on
 * the server's clock (fleet_server.h). Numbers are held as the scripts hold
 * them: times in microseconds, the wait computed in doubles (Lua's numbers)
 * with the same operations in the same order, so a wait here is the
 * script's to the microsecond; tests/fleet/test_fleet_differential.c checks that
 * against a real redis-server.
 */
#include "fleet_server.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One bucket of the window hash (fields c<id>, f<id>, s<id>, and the
 * failing-source map's halves a<id>, b<id>: here one 64-bit map). */
struct bucket {
    uint64_t id, c, f, s;
    uint64_t map;
};

/* A lease of the leases sorted set: member the token text, score the
 * deadline. */
struct lease {
    char token[24];
    uint64_t deadline;
};

/* An entry of the sequences hash: field the host id, value "seq time". */
struct host_seq {
    char host[17];
    uint64_t seq, time;
};

/* The four keys of one name. `has_state`: the state hash exists (the
 * window and the leases may outlive it: DEL of the state key alone). */
struct name {
    char name[BREAKER_NAME_MAX + 1];
    bool has_state;
    /* The state hash. */
    char cfg[BREAKER__FLEET_LIMITS_LEN];
    int64_t st;
    uint64_t gen, until, born;
    uint64_t k;
    uint64_t succ, run;
    uint64_t run_map; /* CONSECUTIVE: the run's failing-source map (ra, rb in W) */
    uint64_t trips, transitions;
    uint64_t ec, ef, es;
    /* The last operator order (ok, fu, oseq, ow, oy): written together by
     * the order script, so all present once oseq > 0. */
    int ord;
    uint64_t fu, oseq;
    char ow[BREAKER__FLEET_WHO_MAX + 1], oy[BREAKER__FLEET_WHY_MAX + 1];
    /* The window hash and the leases set. */
    struct bucket *w;
    size_t w_count, w_cap;
    struct lease *leases;
    size_t lease_count, lease_cap;
    /* The sequences hash; `q_junk`: it holds a field the checks refuse
     * (fleet_server_corrupt(), "q"). */
    struct host_seq *q;
    size_t q_count, q_cap;
    bool q_junk;
    /* Not in Redis: for reports. */
    uint64_t half_opens, leases_granted, directed_opens;
};

struct fleet_server {
    breaker_clock_fn *clock;
    void *clock_ctx;
    struct name **names;
    size_t count, cap;
    uint64_t ttl_us; /* ARGV 1 in µs: a host silent this long is forgotten */
    uint64_t script_calls;
};

/* One script run: the name, its limits (c[1..13]) and the clock; `bad`:
 * the state failed the scripts' checks; `gen_seen`: its generation, when
 * the limits, st and gen were valid (0: not), which a rebuild goes past. */
struct run {
    struct name *n;
    struct breaker__fleet_limits c;
    uint64_t now;
    bool bad;
    uint64_t gen_seen;
    /* An order forced state in force (the scripts' oactive), and whether it
     * forces the fleet open (ofo): set after the prelude. */
    bool oactive, ofo;
    struct fleet_answer_order *order_out; /* NULL: the caller wants none */
};

int fleet_server_create(breaker_clock_fn *clock, void *clock_ctx, struct fleet_server **out) {
    *out = NULL;
    if (clock == NULL) return -1;
    struct fleet_server *s = calloc(1, sizeof *s);
    if (s == NULL) return -1;
    s->clock = clock;
    s->clock_ctx = clock_ctx;
    s->ttl_us = UINT64_C(3600000000);
    *out = s;
    return 0;
}

void fleet_server_set_key_ttl(struct fleet_server *s, uint64_t ttl_ns) {
    s->ttl_us = ttl_ns / 1000000 * 1000; /* the scripts' TTL is in ms */
}

static void free_name(struct name *n) {
    free(n->q);
    free(n->w);
    free(n->leases);
    free(n);
}

void fleet_server_destroy(struct fleet_server *s) {
    if (s == NULL) return;
    for (size_t i = 0; i < s->count; i++)
        free_name(s->names[i]);
    free(s->names);
    free(s);
}

static struct name *find(struct fleet_server *s, const char *name) {
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->names[i]->name, name) == 0) return s->names[i];
    return NULL;
}

/* The name's keys, made (empty) if it has none. */
static struct name *find_or_add(struct fleet_server *s, const char *name) {
    struct name *n = find(s, name);
    if (n != NULL) return n;
    if (strlen(name) > BREAKER_NAME_MAX) return NULL;
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        struct name **p = realloc(s->names, cap * sizeof *p);
        if (p == NULL) return NULL;
        s->names = p;
        s->cap = cap;
    }
    n = calloc(1, sizeof *n);
    if (n == NULL) return NULL;
    snprintf(n->name, sizeof n->name, "%s", name);
    s->names[s->count++] = n;
    return n;
}

void fleet_server_flushall(struct fleet_server *s) {
    for (size_t i = 0; i < s->count; i++)
        free_name(s->names[i]);
    s->count = 0;
}

void fleet_server_delete_state(struct fleet_server *s, const char *name) {
    struct name *n = find(s, name);
    if (n == NULL) return;
    n->has_state = false;
    /* HSET writes these again when the state is made; 'run' is not among
     * them, and a missing field reads as 0. */
    n->run = 0;
    n->run_map = 0;
}

void fleet_server_read(struct fleet_server *s, const char *name,
                       char out[BREAKER__FLEET_READ_FIELDS][FLEET_SERVER_READ_LEN],
                       bool present[BREAKER__FLEET_READ_FIELDS]) {
    const struct name *n = find(s, name);
    bool has = n != NULL && n->has_state;
    /* In breaker__fleet_read_fields' order: st gen until k succ ec ef es born
     * run (absent in Redis until the first transition or CONSECUTIVE flush
     * writes it; read as 0 either way). */
    int64_t v[BREAKER__FLEET_READ_FIELDS] = {0};
    if (has) {
        const int64_t f[BREAKER__FLEET_READ_FIELDS] = {
            n->st,          (int64_t)n->gen, (int64_t)n->until, (int64_t)n->k,    (int64_t)n->succ,
            (int64_t)n->ec, (int64_t)n->ef,  (int64_t)n->es,    (int64_t)n->born, (int64_t)n->run};
        memcpy(v, f, sizeof v);
    }
    for (int i = 0; i < 10; i++) {
        present[i] = has;
        snprintf(out[i], FLEET_SERVER_READ_LEN, "%" PRId64, v[i]);
    }
    /* The order's fields (ok fu oseq ow oy): Redis has none of them until
     * an order is given, then all five. The controls' (sh sseq cg): the
     * model makes no shadow or limits change (fleet_server.h); cfg is
     * always stored. */
    for (int i = 10; i < BREAKER__FLEET_READ_FIELDS; i++) {
        present[i] = false;
        out[i][0] = '\0';
    }
    if (has && n->oseq > 0) {
        const uint64_t o[3] = {(uint64_t)n->ord, n->fu, n->oseq};
        for (int i = 0; i < 3; i++) {
            present[10 + i] = true;
            snprintf(out[10 + i], FLEET_SERVER_READ_LEN, "%" PRIu64, o[i]);
        }
        present[13] = present[14] = true;
        snprintf(out[13], FLEET_SERVER_READ_LEN, "%s", n->ow);
        snprintf(out[14], FLEET_SERVER_READ_LEN, "%s", n->oy);
    }
    if (has) {
        present[18] = true;
        snprintf(out[18], FLEET_SERVER_READ_LEN, "%s", n->cfg);
    }
}

const char *fleet_server_stored_limits(struct fleet_server *s, const char *name) {
    struct name *n = find(s, name);
    return n != NULL && n->has_state ? n->cfg : NULL;
}

/* ---- The prelude ------------------------------------------------------------ */

/* wait_for(kk, g): min(open * backoff^k, max), plus jitter that is a pure
 * function of the generation. In doubles, as Lua computes it. */
static uint64_t wait_for(const struct run *r, uint32_t kk, uint64_t g) {
    double w = (double)r->c.open_us * pow(r->c.open_backoff, (double)kk);
    if (w > (double)r->c.open_max_us) w = (double)r->c.open_max_us;
    double u = (double)((g % 65536) * 40503 % 65536) / 65536;
    return (uint64_t)floor(w + w * r->c.open_jitter * u);
}

/* go(to, why, kk): the one transition of a generation. */
static void go(struct run *r, int to, uint32_t kk) {
    struct name *n = r->n;
    n->gen++;
    n->st = to;
    n->succ = 0;
    n->until = 0;
    if (to == FLEET_OPEN) {
        n->k = kk;
        n->until = r->now + wait_for(r, n->k, n->gen);
    }
    if (to == FLEET_HALF_OPEN) n->half_opens++;
    if (to == FLEET_CLOSED) {
        n->k = 0;
        n->w_count = 0; /* DEL W */
    }
    n->lease_count = 0; /* DEL L */
    n->run = 0;
    n->run_map = 0;
    n->transitions++;
}

/* The scripts' checks of a stored state (scripts.c, the prelude), on the
 * typed state: what fleet_server_corrupt() can put in it. In the
 * scripts' order; the limits are already read into r->c. */
static void check_state(struct run *r) {
    const struct name *n = r->n;
    const uint64_t big = (uint64_t)BREAKER__FLEET_BIG;
    if (n->st < 0 || n->st > 2) {
        r->bad = true;
        return;
    }
    if (n->gen < 1 || n->gen > big) {
        r->bad = true;
        return;
    }
    r->gen_seen = n->gen;
    uint64_t most = 0;
    if (n->st == FLEET_OPEN) {
        double m = (double)r->c.open_max_us;
        most = (uint64_t)floor(m + m * r->c.open_jitter);
    }
    if (n->k > UINT32_MAX || n->succ > (uint64_t)r->c.max_probes + r->c.successes ||
        n->until > big || (n->st == FLEET_OPEN && n->until > r->now + most) || n->born > n->gen ||
        n->trips > big || n->transitions > big || n->ec > big || n->ef > n->ec || n->es > n->ec ||
        n->run > big) {
        r->bad = true;
        return;
    }
    if (n->st == FLEET_HALF_OPEN) {
        if (n->lease_count > r->c.max_probes) r->bad = true;
        for (size_t i = 0; i < n->lease_count; i++)
            if (n->leases[i].deadline > r->now + r->c.probe_timeout_us) r->bad = true;
    }
}

/* A state that failed the checks: the keys are rebuilt (DEL S, W, L; a
 * new state of the caller's limits at a later generation), and the script
 * answers an error (-1). */
/* HSET S cfg <limits> st 0 gen <g> ... born <g>: a state made from
 * scratch ('run' is not among the fields: a missing field reads as 0). */
static void fresh_state(struct name *n, const char *limits, uint64_t g) {
    snprintf(n->cfg, sizeof n->cfg, "%s", limits);
    n->has_state = true;
    n->st = FLEET_CLOSED;
    n->gen = g;
    n->born = g;
    n->k = 0;
    n->succ = 0;
    n->until = 0;
    n->trips = 0;
    n->transitions = 0;
    n->ec = n->ef = n->es = 0;
    /* No order field: a state made from scratch (or rebuilt) has none. */
    n->ord = 0;
    n->fu = n->oseq = 0;
    n->ow[0] = n->oy[0] = '\0';
}

static int rebuild(struct run *r, const char *limits) {
    struct name *n = r->n;
    uint64_t g = r->now;
    if (r->gen_seen + 1 > g) g = r->gen_seen + 1;
    n->w_count = 0;     /* DEL W */
    n->lease_count = 0; /* DEL L */
    n->q_count = 0;     /* DEL Q */
    n->q_junk = false;
    n->run = 0;
    n->run_map = 0; /* DEL S */
    fresh_state(n, limits, g);
    return -1;
}

/* The first caller's limits are stored, with a state whose first
 * generation is the clock; then the limits are read back (c), and a lease
 * past its deadline reopens the fleet. @return 0, or -1 when the caller's
 * limits are not limits (a script error, nothing written); r->bad when the
 * stored state failed the checks (nothing written either). */
static int prelude(struct fleet_server *s, struct run *r, const char *name, const char *limits) {
    r->now = s->clock(s->clock_ctx) / 1000;
    r->bad = false;
    r->gen_seen = 0;
    r->oactive = r->ofo = false;
    struct breaker__fleet_limits mine;
    if (!breaker__fleet_limits_parse(limits, &mine, NULL, 0) ||
        !breaker__fleet_limits_check(&mine, NULL, 0))
        return -1;
    r->n = find_or_add(s, name);
    if (r->n == NULL) return -1;
    struct name *n = r->n;
    if (n->has_state) {
        if (!breaker__fleet_limits_parse(n->cfg, &r->c, NULL, 0) ||
            !breaker__fleet_limits_check(&r->c, NULL, 0)) {
            r->bad = true;
            return 0;
        }
        check_state(r);
        if (r->bad) return 0;
    } else {
        n->w_count = 0; /* DEL W: the fleet starts over */
        n->run_map = 0;
        fresh_state(n, limits, r->now);
        r->c = mine;
    }
    if (n->st == FLEET_HALF_OPEN) {
        for (size_t i = 0; i < n->lease_count; i++) {
            if (n->leases[i].deadline <= r->now) {
                go(r, FLEET_OPEN, (uint32_t)n->k + 1);
                break;
            }
        }
    }
    /* A forced state in force: open or closed, not expired. */
    r->oactive = (n->ord == FLEET_ORDER_OPEN || n->ord == FLEET_ORDER_CLOSED) &&
                 (n->fu == 0 || r->now < n->fu);
    r->ofo = r->oactive && n->ord == FLEET_ORDER_OPEN;
    return 0;
}

/* answer(verdict, wait): wait NULL is the open wait left. */
static void answer(const struct run *r, int verdict, const uint64_t *wait, int64_t a[ANS_COUNT]) {
    const struct name *n = r->n;
    uint64_t w = 0;
    if (wait != NULL)
        w = *wait;
    else if (n->st == FLEET_OPEN && n->until > r->now)
        w = n->until - r->now;
    a[ANS_STATE] = (int)n->st;
    a[ANS_GEN] = (int64_t)n->gen;
    a[ANS_WAIT_US] = (int64_t)w;
    a[ANS_K] = (int64_t)n->k;
    a[ANS_SUCC] = (int64_t)n->succ;
    a[ANS_VERDICT] = verdict;
    a[ANS_CALLS] = (int64_t)n->ec;
    a[ANS_FAILURES] = (int64_t)n->ef;
    a[ANS_SLOW] = (int64_t)n->es;
    a[ANS_BORN] = (int64_t)n->born;
    /* An order given: its kind (a forced state whose time ran out is
     * none), time left, sequence, who and why. */
    struct fleet_answer_order *o = r->order_out;
    if (o == NULL) return;
    memset(o, 0, sizeof *o);
    if (n->oseq == 0) return;
    o->present = true;
    o->left_us = n->fu > r->now ? n->fu - r->now : 0;
    o->kind = n->ord;
    if ((n->ord == FLEET_ORDER_OPEN || n->ord == FLEET_ORDER_CLOSED) && n->fu > 0 &&
        o->left_us == 0)
        o->kind = FLEET_ORDER_NONE;
    o->seq = n->oseq;
    memcpy(o->who, n->ow, sizeof o->who);
    memcpy(o->why, n->oy, sizeof o->why);
}

/* ---- The scripts ------------------------------------------------------------- */

/* tonumber() of an argument the client formatted (protocol.c). */
static uint64_t arg(const struct breaker__fleet_call *call, int i) {
    return i < call->argc ? strtoull(call->argv[i], NULL, 10) : 0;
}

static int add_to_bucket(struct name *n, uint64_t id, uint64_t dc, uint64_t df, uint64_t ds,
                         uint64_t map) {
    for (size_t i = 0; i < n->w_count; i++) {
        if (n->w[i].id == id) {
            n->w[i].c += dc;
            n->w[i].f += df;
            n->w[i].s += ds;
            n->w[i].map |= map;
            return 0;
        }
    }
    if (n->w_count == n->w_cap) {
        size_t cap = n->w_cap ? 2 * n->w_cap : 16;
        struct bucket *p = realloc(n->w, cap * sizeof *p);
        if (p == NULL) return -1;
        n->w = p;
        n->w_cap = cap;
    }
    n->w[n->w_count++] = (struct bucket){.id = id, .c = dc, .f = df, .s = ds, .map = map};
    return 0;
}

static void trip(struct run *r, uint64_t calls, uint64_t failures, uint64_t slow,
                 int64_t a[ANS_COUNT]) {
    r->n->ec = calls;
    r->n->ef = failures;
    r->n->es = slow;
    r->n->trips++;
    go(r, FLEET_OPEN, 0);
    answer(r, VERDICT_TRIPPED, NULL, a);
}

/* A flush's host id and sequence (ARGV 8 and 9), as the script checks
 * them: 16 hex digits, a number of digits 0..BIG. @return 1 valid, 0 not. */
static int valid_sequence(const char *host, const char *seq, uint64_t *out) {
    size_t hl = strlen(host), sl = strlen(seq);
    if (hl != 16 || strspn(host, "0123456789abcdefABCDEF") != hl) return 0;
    if (sl == 0 || sl > 16 || strspn(seq, "0123456789") != sl) return 0;
    *out = strtoull(seq, NULL, 10);
    return *out <= (uint64_t)BREAKER__FLEET_BIG;
}

/* The sequences hash, as the script reads it: `host`'s entry (*last; NULL:
 * none), deleted when it is older than the TTL; and when it has none or
 * wrote it in an earlier quarter of the TTL, the others pruned (hosts
 * silent longer than the TTL deleted) and checked.
 * The script prunes the next 16 fields of an HSCAN then (a hash of up to
 * 128 fields, listpack-encoded, is one scan): this prunes them all, which
 * is the script's behaviour for the fleets the differential test runs (3
 * hosts); a larger hash is pruned over several arrivals in Redis, at once
 * here. @return -2 when a field the checks refuse was read (the keys are
 * rebuilt), else 0. */
static int scan_sequences(struct fleet_server *s, struct run *r, const char *host,
                          const struct host_seq **last) {
    struct name *n = r->n;
    *last = NULL;
    bool own = false;
    uint64_t quarter = s->ttl_us / 4 ? s->ttl_us / 4 : 1; /* a TTL under 4 us: every call */
    for (size_t i = 0; i < n->q_count; i++) {
        if (strcmp(n->q[i].host, host) != 0) continue;
        if (n->q[i].time + s->ttl_us > r->now) {
            if (n->q[i].time / quarter == r->now / quarter) {
                *last = &n->q[i];
                return 0;
            }
            own = true; /* kept by the pruning below, found again after it */
            break;
        }
        n->q[i] = n->q[--n->q_count]; /* its own, too old: HDEL */
        break;
    }
    if (n->q_junk) {
        r->bad = true;
        return -2;
    }
    size_t keep = 0;
    for (size_t i = 0; i < n->q_count; i++) {
        if (n->q[i].time + s->ttl_us <= r->now) continue;
        n->q[keep++] = n->q[i];
    }
    n->q_count = keep;
    for (size_t i = 0; own && i < n->q_count; i++)
        if (strcmp(n->q[i].host, host) == 0) *last = &n->q[i];
    return 0;
}

/* HSET Q host "seq now": deltas applied. */
static int note_applied(struct run *r, const char *host, uint64_t seq) {
    struct name *n = r->n;
    if (host == NULL) return 0;
    for (size_t i = 0; i < n->q_count; i++) {
        if (strcmp(n->q[i].host, host) != 0) continue;
        n->q[i].seq = seq;
        n->q[i].time = r->now;
        return 0;
    }
    if (n->q_count == n->q_cap) {
        size_t cap = n->q_cap ? 2 * n->q_cap : 4;
        struct host_seq *p = realloc(n->q, cap * sizeof *p);
        if (p == NULL) return -1;
        n->q = p;
        n->q_cap = cap;
    }
    struct host_seq *q = &n->q[n->q_count++];
    snprintf(q->host, sizeof q->host, "%s", host);
    q->seq = seq;
    q->time = r->now;
    return 0;
}

/* The failing-source rule, as the core's: N distinct bits for
 * min_failing_sources N (0: 3, only where a failure named a source; 1:
 * off). */
static bool diverse(const struct run *r, uint64_t map) {
    unsigned bits = (unsigned)__builtin_popcountll(map);
    uint32_t mfs = r->c.min_failing_sources;
    unsigned need = mfs == 0 ? 3u : mfs == 1 ? 0u : mfs;
    return bits >= need || (mfs == 0 && bits == 0);
}

/* flush(known_gen, calls, failures, slow, run[, host, seq[, map_lo, map_hi]]). */
static int script_flush(struct fleet_server *s, struct run *r,
                        const struct breaker__fleet_call *call, int64_t a[ANS_COUNT]) {
    struct name *n = r->n;
    uint64_t hg = arg(call, 0), dc = arg(call, 1), df = arg(call, 2), ds = arg(call, 3),
             trail = arg(call, 4);
    if (df > dc || ds > dc) return -1; /* a client's error, nothing written */
    const char *host = call->argc > 5 ? call->argv[5] : NULL;
    uint64_t seq = 0;
    if (host != NULL && !valid_sequence(host, call->argc > 6 ? call->argv[6] : "", &seq))
        return -1; /* a client's error too */
    /* ARGV 12: a server-directed wait (a host's 429): the fleet opens until
     * then, at most open_max, once (not shortening a longer wait), unless
     * an order forces it. */
    uint64_t dir = arg(call, 9);
    if (dir > BREAKER__FLEET_MAX_DURATION_US) return -1; /* a client's error */
    if (dir > 0 && !r->oactive) {
        if (dir > r->c.open_max_us) dir = r->c.open_max_us;
        if (n->st != FLEET_OPEN || n->until < r->now + dir) {
            go(r, FLEET_OPEN, (uint32_t)n->k);
            n->until = r->now + dir;
            n->directed_opens++;
        }
    }
    /* A forced state (an operator's order in force) counts nothing, trips
     * nothing. */
    if (r->oactive || n->st != FLEET_CLOSED || (hg != 0 && hg != n->gen) || dc == 0) {
        answer(r, VERDICT_NONE, NULL, a);
        return 0;
    }
    if (host != NULL) {
        const struct host_seq *last;
        if (scan_sequences(s, r, host, &last) != 0) return -2;
        if (last != NULL && seq <= last->seq) { /* applied already: a retry */
            answer(r, VERDICT_NONE, NULL, a);
            return 0;
        }
    }
    /* The host's failing-source map, OR-ed into the window's bucket or the
     * run's (scripts.c). */
    uint64_t map = 0;
    if (call->argc > 7) {
        uint64_t lo = arg(call, 7), hi = arg(call, 8);
        if (lo > UINT32_MAX || hi > UINT32_MAX) return -1; /* a client's error */
        map = lo | hi << 32;
    }
    uint64_t thr = r->c.failure_threshold;
    if (thr > 0) {
        /* CONSECUTIVE: failures only extend the run (and OR their map into
         * the run's); a flush with a success sets it to the host's run after
         * its last success, and the map to the host's. */
        uint64_t run = df >= dc ? n->run + df : trail;
        n->run_map = df >= dc ? n->run_map | map : map;
        if (note_applied(r, host, seq) != 0) return -1;
        if (run >= thr && diverse(r, n->run_map)) {
            trip(r, run, run, 0, a);
            return 0;
        }
        n->run = run;
        answer(r, VERDICT_NONE, NULL, a);
        return 0;
    }
    uint64_t span = r->c.window_us / r->c.buckets;
    if (span == 0) return -1; /* Lua would divide by zero */
    uint64_t bkt = r->now / span;
    /* The window's checks: no bucket more than a window ahead, no more
     * failures or slow calls than calls. */
    {
        uint64_t c = dc, f = df, sl = ds;
        for (size_t i = 0; i < n->w_count; i++) {
            if (n->w[i].id > bkt + r->c.buckets || n->w[i].c > (uint64_t)BREAKER__FLEET_BIG ||
                n->w[i].f > (uint64_t)BREAKER__FLEET_BIG ||
                n->w[i].s > (uint64_t)BREAKER__FLEET_BIG) {
                r->bad = true;
                break;
            }
            if (n->w[i].id + r->c.buckets <= bkt) continue;
            c += n->w[i].c;
            f += n->w[i].f;
            sl += n->w[i].s;
        }
        if (r->bad || f > c || sl > c) return -2;
    }
    if (note_applied(r, host, seq) != 0) return -1;
    if (add_to_bucket(n, bkt, dc, df, ds, map) != 0) return -1;
    /* Buckets older than the window are deleted; the rest are summed. */
    uint64_t c = 0, f = 0, sl = 0, sources = 0;
    size_t keep = 0;
    for (size_t i = 0; i < n->w_count; i++) {
        if (n->w[i].id + r->c.buckets <= bkt) continue;
        c += n->w[i].c;
        f += n->w[i].f;
        sl += n->w[i].s;
        sources |= n->w[i].map;
        n->w[keep++] = n->w[i];
    }
    n->w_count = keep;
    if (c >= r->c.min_calls) {
        bool by_failures = (double)f / (double)c >= r->c.failure_rate && diverse(r, sources);
        bool by_slow = r->c.slow_call_rate > 0 && (double)sl / (double)c >= r->c.slow_call_rate;
        if (by_failures || by_slow) {
            trip(r, c, f, sl, a);
            return 0;
        }
    }
    answer(r, VERDICT_NONE, NULL, a);
    return 0;
}

static struct lease *find_lease(struct name *n, const char *token) {
    for (size_t i = 0; i < n->lease_count; i++)
        if (strcmp(n->leases[i].token, token) == 0) return &n->leases[i];
    return NULL;
}

/* acquire_probe(token). */
static int script_acquire(struct run *r, const char *token, int64_t a[ANS_COUNT]) {
    struct name *n = r->n;
    if (r->ofo) { /* forced open: no lease while the order stands */
        answer(r, VERDICT_NONE, NULL, a);
        return 0;
    }
    if (n->st == FLEET_CLOSED) {
        answer(r, VERDICT_CLOSED, NULL, a);
        return 0;
    }
    if (n->st == FLEET_OPEN) {
        if (r->now < n->until) {
            answer(r, VERDICT_NONE, NULL, a);
            return 0;
        }
        go(r, FLEET_HALF_OPEN, (uint32_t)n->k);
    }
    if (n->succ >= r->c.successes || n->lease_count >= r->c.max_probes) {
        /* The time to the earliest deadline (ZRANGE L 0 0 WITHSCORES). */
        uint64_t wait = 0;
        if (n->lease_count > 0) {
            uint64_t first = UINT64_MAX;
            for (size_t i = 0; i < n->lease_count; i++)
                if (n->leases[i].deadline < first) first = n->leases[i].deadline;
            wait = first - r->now;
        }
        answer(r, VERDICT_NONE, &wait, a);
        return 0;
    }
    /* ZADD: a member already there gets the new score. */
    struct lease *l = find_lease(n, token);
    if (l == NULL) {
        if (n->lease_count == n->lease_cap) {
            size_t cap = n->lease_cap ? 2 * n->lease_cap : 4;
            struct lease *p = realloc(n->leases, cap * sizeof *p);
            if (p == NULL) return -1;
            n->leases = p;
            n->lease_cap = cap;
        }
        l = &n->leases[n->lease_count++];
        snprintf(l->token, sizeof l->token, "%s", token);
    }
    l->deadline = r->now + r->c.probe_timeout_us;
    n->leases_granted++;
    answer(r, VERDICT_GRANTED, &r->c.probe_timeout_us, a);
    return 0;
}

/* release_probe(gen, token, result): gen 0 is any generation. */
static int script_release(struct run *r, uint64_t lg, const char *token, uint64_t res,
                          int64_t a[ANS_COUNT]) {
    struct name *n = r->n;
    struct lease *l = find_lease(n, token);
    if (n->st != FLEET_HALF_OPEN || (lg != n->gen && lg != 0) || l == NULL) {
        answer(r, VERDICT_STALE, NULL, a);
        return 0;
    }
    *l = n->leases[--n->lease_count]; /* ZREM */
    if (res == FLEET_RESULT_FAILURE) {
        go(r, FLEET_OPEN, (uint32_t)n->k + 1);
    } else {
        if (res == FLEET_RESULT_SUCCESS) n->succ++;
        if (n->succ >= r->c.successes && n->lease_count == 0) go(r, FLEET_CLOSED, 0);
    }
    answer(r, VERDICT_APPLIED, NULL, a);
    return 0;
}

uint64_t fleet_server_script_calls(const struct fleet_server *s) { return s->script_calls; }

/* order(kind, time, who, why). */
static int script_order(struct run *r, int kind, uint64_t dur_us, const char *who, const char *why,
                        int64_t a[ANS_COUNT]) {
    struct name *n = r->n;
    if (kind != FLEET_ORDER_OPEN && kind != FLEET_ORDER_CLOSED && kind != FLEET_ORDER_RESET)
        return -1;
    if (dur_us > BREAKER__FLEET_MAX_DURATION_US) return -1;
    if (strlen(who) > BREAKER__FLEET_WHO_MAX || strlen(why) > BREAKER__FLEET_WHY_MAX) return -1;
    n->ord = kind;
    n->fu = dur_us > 0 && kind != FLEET_ORDER_RESET ? r->now + dur_us : 0;
    n->oseq++;
    snprintf(n->ow, sizeof n->ow, "%s", who);
    snprintf(n->oy, sizeof n->oy, "%s", why);
    if (kind == FLEET_ORDER_OPEN) {
        go(r, FLEET_OPEN, (uint32_t)n->k); /* reason operator */
        /* Never longer than the limits' longest wait: the order's end holds
         * the leases back beyond it. */
        if (n->fu > 0 && n->fu < n->until) n->until = n->fu;
    } else {
        go(r, FLEET_CLOSED, 0); /* forced_closed, or reset */
    }
    answer(r, VERDICT_APPLIED, NULL, a);
    return 0;
}

int fleet_server_order(struct fleet_server *s, const char *name, const char *limits, int kind,
                       uint64_t dur_us, const char *who, const char *why, int64_t ans[ANS_COUNT],
                       struct fleet_answer_order *order) {
    s->script_calls++;
    struct run r;
    if (prelude(s, &r, name, limits) != 0) return -1;
    r.order_out = order;
    if (r.bad) return rebuild(&r, limits);
    return script_order(&r, kind, dur_us, who, why, ans);
}

int fleet_server_call(struct fleet_server *s, const char *name, const char *limits,
                      const struct breaker__fleet_call *call, int64_t ans[ANS_COUNT]) {
    return fleet_server_call_order(s, name, limits, call, ans, NULL);
}

int fleet_server_call_order(struct fleet_server *s, const char *name, const char *limits,
                            const struct breaker__fleet_call *call, int64_t ans[ANS_COUNT],
                            struct fleet_answer_order *order) {
    s->script_calls++;
    struct run r;
    if (prelude(s, &r, name, limits) != 0) return -1;
    r.order_out = order;
    if (r.bad) /* the scripts' CORRUPT error: acquire_probe writes nothing */
        return call->script == FLEET_SCRIPT_ACQUIRE ? -1 : rebuild(&r, limits);
    int rc;
    switch (call->script) {
    case FLEET_SCRIPT_FLUSH:
        rc = script_flush(s, &r, call, ans);
        return rc == -2 ? rebuild(&r, limits) : rc; /* -2: the window failed its checks */
    case FLEET_SCRIPT_ACQUIRE:
        return script_acquire(&r, call->argv[0], ans);
    case FLEET_SCRIPT_RELEASE:
        return script_release(&r, arg(call, 0), call->argv[1], arg(call, 2), ans);
    default:
        return -1;
    }
}

int fleet_server_corrupt(struct fleet_server *s, const char *name, const char *field,
                         const char *value) {
    struct name *n = find(s, name);
    if (n == NULL || !n->has_state) return -1;
    if (strcmp(field, "cfg") == 0) {
        snprintf(n->cfg, sizeof n->cfg, "%s", value);
        return 0;
    }
    if (strcmp(field, "q") == 0) { /* a field of the sequences hash */
        n->q_junk = true;
        return 0;
    }
    char *end = NULL;
    long long v = strtoll(value, &end, 10);
    if (end == value || *end != '\0') return -1;
    if (strcmp(field, "st") == 0) {
        n->st = v;
        return 0;
    }
    /* The unsigned fields, by name: a negative value is held as the huge
     * number the checks refuse, as "-5" is refused in Redis. */
    const struct {
        const char *name;
        uint64_t *at;
    } slots[] = {{"gen", &n->gen},   {"k", &n->k},   {"succ", &n->succ}, {"until", &n->until},
                 {"born", &n->born}, {"ec", &n->ec}, {"ef", &n->ef},     {"es", &n->es}};
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        if (strcmp(field, slots[i].name) != 0) continue;
        *slots[i].at = (uint64_t)v;
        return 0;
    }
    return -1;
}

int fleet_server_name_stats(struct fleet_server *s, const char *name,
                            struct fleet_name_stats *out) {
    memset(out, 0, sizeof *out);
    struct name *n = find(s, name);
    if (n == NULL) return -1;
    out->leases_out = (uint32_t)n->lease_count;
    out->hosts = (uint32_t)n->q_count + (n->q_junk ? 1u : 0u);
    for (size_t i = 0; i < n->lease_count; i++)
        if (out->first_deadline_us == 0 || n->leases[i].deadline < out->first_deadline_us)
            out->first_deadline_us = n->leases[i].deadline;
    if (!n->has_state) return -1;
    out->state = n->st == FLEET_CLOSED ? BREAKER_CLOSED
                 : n->st == FLEET_OPEN ? BREAKER_OPEN
                                       : BREAKER_HALF_OPEN;
    out->gen = n->gen;
    out->k = (uint32_t)n->k;
    out->trips = n->trips;
    out->transitions = n->transitions;
    out->half_opens = n->half_opens;
    out->leases_granted = n->leases_granted;
    out->directed_opens = n->directed_opens;
    out->successes = n->succ;
    out->until_us = n->until;
    out->born = n->born;
    out->run = n->run;
    out->order = n->ord;
    out->order_until_us = n->fu;
    out->order_seq = n->oseq;
    out->order_who = n->ow;
    out->order_why = n->oy;
    return 0;
}

int fleet_server_host_seq(struct fleet_server *s, const char *name, size_t i, char host[17],
                          uint64_t *seq, uint64_t *time) {
    struct name *n = find(s, name);
    if (n == NULL || i >= n->q_count) return -1;
    memcpy(host, n->q[i].host, 17);
    *seq = n->q[i].seq;
    *time = n->q[i].time;
    return 0;
}
