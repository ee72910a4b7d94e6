/* SPDX-License-Identifier: MIT */
/*
 * fleet_model.c - the Redis fleet store's protocol in process (fleet_model.h).
 *
 * The server half follows src/redis/scripts.c line for line: a prelude that
 * creates the name with the first caller's limits and applies a due lease
 * deadline (a hung probe: OPEN, k + 1), then flush, acquire_probe and
 * release_probe. Times are the model's clock in nanoseconds where the
 * scripts count Redis microseconds; the jitter is the scripts' pure function
 * of the generation. The client half follows src/redis/fleet.c: deltas from
 * breaker_stats_get() (closed-state calls only: probes are the fleet's
 * through their leases), the answer applied to the local breaker, and the
 * gate that stops lease requests the fleet would refuse.
 */
#include "fleet_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS                ((uint64_t)1000000)
#define DEFAULT_FLUSH_NS  (250 * MS)
#define FLEET_NAME_MAX    256
#define FLEET_MAX_BUCKETS 600 /* breaker_config's window_buckets limit */

enum { ST_CLOSED = 0, ST_OPEN = 1, ST_HALF_OPEN = 2 };
enum { V_REFUSED = 0, V_CLOSED = 1, V_GRANTED = 2, V_STALE = 3, V_APPLIED = 4 };
enum { RES_SUCCESS = 0, RES_FAILURE = 1, RES_NEITHER = 2 };

struct lease {
    uint64_t token, deadline;
};

/* One name on the "server". */
struct fleet_name {
    char name[FLEET_NAME_MAX];
    breaker_config cfg; /* the first attacher's (clock and callbacks cleared) */
    /* The stored limits, as the scripts read them. */
    uint32_t min_calls, buckets, max_probes, successes;
    uint32_t threshold; /* CONSECUTIVE: failure_threshold; 0 = a window policy */
    double failure_rate, slow_rate, backoff, jitter;
    uint64_t window_ns, open_ns, open_max_ns, probe_ns;
    /* The state hash. */
    int st;
    uint64_t gen, until;
    uint32_t k, succ;
    uint64_t trips, transitions, half_opens, leases_granted;
    uint64_t ec, ef, es; /* the last trip's evidence */
    uint64_t run;        /* CONSECUTIVE: the fleet's run of failures */
    /* The window: bucket numbers and their counts. */
    struct {
        uint64_t id, c, f, s;
        bool used;
    } w[FLEET_MAX_BUCKETS];
    struct lease *leases;
    uint32_t lease_count;
};

struct answer {
    int st;
    uint64_t gen, wait_ns;
    uint32_t k, succ;
    int verdict;
    uint64_t calls, failures, slow;
};

struct entry {
    breaker *b;
    struct fleet_name *n;
    uint64_t last_succ, last_fail, last_slow, last_psucc, last_pfail;
    uint64_t known_gen;
    bool follows;
    uint64_t gate_until; /* no lease request before this */
};

struct fleet_client {
    struct fleet_model *m;
    struct entry *entries;
    size_t count, cap;
    struct fleet_client *next;
};

struct fleet_model {
    struct fleet_model_config cfg;
    struct fleet_name **names;
    size_t count, cap;
    struct fleet_client *clients;
    uint64_t token_seq;
};

static uint64_t now_of(const struct fleet_model *m) { return m->cfg.clock(m->cfg.clock_ctx); }

/* ---- The server: the scripts --------------------------------------------------*/

static uint64_t wait_for(const struct fleet_name *n, uint32_t k, uint64_t gen) {
    double w = (double)n->open_ns * pow(n->backoff, (double)k);
    if (w > (double)n->open_max_ns) w = (double)n->open_max_ns;
    double u = (double)((gen % 65536) * 40503 % 65536) / 65536.0;
    return (uint64_t)(w + w * n->jitter * u);
}

static void window_clear(struct fleet_name *n) {
    for (uint32_t i = 0; i < FLEET_MAX_BUCKETS; i++)
        n->w[i].used = false;
}

/* The one transition of a generation. */
static void go(struct fleet_name *n, int to, uint32_t k, uint64_t now) {
    n->gen++;
    if (to == ST_HALF_OPEN) n->half_opens++;
    n->st = to;
    n->succ = 0;
    n->until = 0;
    if (to == ST_OPEN) {
        n->k = k;
        n->until = now + wait_for(n, n->k, n->gen);
    }
    if (to == ST_CLOSED) {
        n->k = 0;
        window_clear(n);
    }
    n->lease_count = 0;
    n->run = 0;
    n->transitions++;
}

/* The prelude: a lease past its deadline is a hung probe. */
static void prelude(struct fleet_name *n, uint64_t now) {
    if (n->st != ST_HALF_OPEN) return;
    for (uint32_t i = 0; i < n->lease_count; i++) {
        if (n->leases[i].deadline <= now) {
            go(n, ST_OPEN, n->k + 1, now);
            return;
        }
    }
}

static struct answer answer(const struct fleet_name *n, int verdict, uint64_t now, bool has_wait,
                            uint64_t wait) {
    struct answer a = {.st = n->st,
                       .gen = n->gen,
                       .k = n->k,
                       .succ = n->succ,
                       .verdict = verdict,
                       .calls = n->ec,
                       .failures = n->ef,
                       .slow = n->es};
    if (has_wait) {
        a.wait_ns = wait;
    } else if (n->st == ST_OPEN && n->until > now) {
        a.wait_ns = n->until - now;
    }
    return a;
}

static struct answer script_flush(struct fleet_name *n, uint64_t now, uint64_t known_gen,
                                  uint64_t dc, uint64_t df, uint64_t ds, uint64_t trail) {
    prelude(n, now);
    if (n->st != ST_CLOSED || (known_gen != 0 && known_gen != n->gen) || dc == 0)
        return answer(n, 0, now, false, 0);
    if (n->threshold > 0) {
        /* CONSECUTIVE: a run instead of a window. Failures only extend it;
         * a flush that holds a success sets it to the host's run after its
         * last success (an approximation across hosts, as in Redis). */
        n->run = df >= dc ? n->run + df : trail;
        if (n->run >= n->threshold) {
            n->ec = n->ef = n->run;
            n->es = 0;
            n->trips++;
            go(n, ST_OPEN, 0, now);
            return answer(n, 1, now, false, 0);
        }
        return answer(n, 0, now, false, 0);
    }
    uint64_t span = n->window_ns / n->buckets;
    if (span == 0) span = 1;
    uint64_t bkt = now / span;
    uint32_t slot = (uint32_t)(bkt % n->buckets);
    if (!n->w[slot].used || n->w[slot].id != bkt) {
        n->w[slot].used = true;
        n->w[slot].id = bkt;
        n->w[slot].c = n->w[slot].f = n->w[slot].s = 0;
    }
    n->w[slot].c += dc;
    n->w[slot].f += df;
    n->w[slot].s += ds;
    uint64_t c = 0, f = 0, s = 0;
    for (uint32_t i = 0; i < n->buckets; i++) {
        if (!n->w[i].used) continue;
        if (n->w[i].id + n->buckets <= bkt) { /* older than the window */
            n->w[i].used = false;
            continue;
        }
        c += n->w[i].c;
        f += n->w[i].f;
        s += n->w[i].s;
    }
    if (c >= n->min_calls) {
        bool trip = (double)f / (double)c >= n->failure_rate ||
                    (n->slow_rate > 0.0 && (double)s / (double)c >= n->slow_rate);
        if (trip) {
            n->ec = c;
            n->ef = f;
            n->es = s;
            n->trips++;
            go(n, ST_OPEN, 0, now);
            return answer(n, 1, now, false, 0);
        }
    }
    return answer(n, 0, now, false, 0);
}

static struct answer script_acquire(struct fleet_name *n, uint64_t now, uint64_t token) {
    prelude(n, now);
    if (n->st == ST_CLOSED) return answer(n, V_CLOSED, now, false, 0);
    if (n->st == ST_OPEN) {
        if (now < n->until) return answer(n, V_REFUSED, now, false, 0);
        go(n, ST_HALF_OPEN, n->k, now);
    }
    if (n->succ >= n->successes || n->lease_count >= n->max_probes) {
        uint64_t first = UINT64_MAX;
        for (uint32_t i = 0; i < n->lease_count; i++)
            if (n->leases[i].deadline < first) first = n->leases[i].deadline;
        return answer(n, V_REFUSED, now, true, first == UINT64_MAX ? 0 : first - now);
    }
    n->leases[n->lease_count++] = (struct lease){.token = token, .deadline = now + n->probe_ns};
    n->leases_granted++;
    return answer(n, V_GRANTED, now, true, n->probe_ns);
}

static struct answer script_release(struct fleet_name *n, uint64_t now, uint64_t gen,
                                    uint64_t token, int result) {
    prelude(n, now);
    uint32_t at = n->lease_count;
    for (uint32_t i = 0; i < n->lease_count; i++)
        if (n->leases[i].token == token) at = i;
    if (n->st != ST_HALF_OPEN || gen != n->gen || at == n->lease_count)
        return answer(n, V_STALE, now, false, 0);
    n->leases[at] = n->leases[--n->lease_count];
    if (result == RES_FAILURE) {
        go(n, ST_OPEN, n->k + 1, now);
    } else {
        if (result == RES_SUCCESS) n->succ++;
        if (n->succ >= n->successes && n->lease_count == 0) go(n, ST_CLOSED, 0, now);
    }
    return answer(n, V_APPLIED, now, false, 0);
}

/* ---- The model ------------------------------------------------------------------*/

int fleet_model_create(const struct fleet_model_config *cfg, struct fleet_model **out) {
    *out = NULL;
    if (cfg->clock == NULL || cfg->trip == NULL || cfg->close == NULL) return -1;
    struct fleet_model *m = calloc(1, sizeof(*m));
    if (m == NULL) return -1;
    m->cfg = *cfg;
    if (m->cfg.flush_interval_ns == 0) m->cfg.flush_interval_ns = DEFAULT_FLUSH_NS;
    *out = m;
    return 0;
}

void fleet_model_destroy(struct fleet_model *m) {
    if (m == NULL) return;
    for (size_t i = 0; i < m->count; i++) {
        free(m->names[i]->leases);
        free(m->names[i]);
    }
    free(m->names);
    free(m);
}

static struct fleet_name *find_name(struct fleet_model *m, const char *name) {
    for (size_t i = 0; i < m->count; i++)
        if (strcmp(m->names[i]->name, name) == 0) return m->names[i];
    return NULL;
}

/* The name, created with `cfg` (validated, defaults applied) if new. */
static struct fleet_name *make_name(struct fleet_model *m, const char *name,
                                    const breaker_config *cfg) {
    if (m->count == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 8;
        struct fleet_name **p = realloc(m->names, cap * sizeof(*p));
        if (p == NULL) return NULL;
        m->names = p;
        m->cap = cap;
    }
    struct fleet_name *n = calloc(1, sizeof(*n));
    if (n == NULL) return NULL;
    n->leases =
        calloc(cfg->half_open_max_probes ? cfg->half_open_max_probes : 1, sizeof(*n->leases));
    if (n->leases == NULL) {
        free(n);
        return NULL;
    }
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->cfg = *cfg;
    n->cfg.clock = NULL;
    n->cfg.clock_ctx = NULL;
    n->cfg.on_event = NULL;
    n->cfg.event_ctx = NULL;
    n->cfg.seed = 0;
    /* The limits as format_limits() in src/redis/fleet.c sends them. */
    n->min_calls = cfg->min_calls;
    n->failure_rate = cfg->failure_rate;
    n->slow_rate = cfg->slow_call_rate;
    n->window_ns = cfg->window_ns;
    n->buckets = cfg->window_buckets ? cfg->window_buckets : 10;
    if (n->buckets > FLEET_MAX_BUCKETS) n->buckets = FLEET_MAX_BUCKETS;
    n->open_ns = cfg->open_ns;
    n->backoff = cfg->open_backoff;
    n->open_max_ns = cfg->open_max_ns;
    n->jitter = cfg->open_jitter;
    n->max_probes = cfg->half_open_max_probes;
    n->successes = cfg->half_open_successes;
    n->probe_ns = cfg->probe_timeout_ns;
    n->threshold = cfg->trip == BREAKER_TRIP_CONSECUTIVE ? cfg->failure_threshold : 0;
    /* The first generation is the clock (never 0: "none" to a client). */
    n->gen = now_of(m) / 1000 + 1;
    m->names[m->count++] = n;
    return n;
}

int fleet_model_name_stats(struct fleet_model *m, const char *name, struct fleet_name_stats *out) {
    memset(out, 0, sizeof(*out));
    struct fleet_name *n = find_name(m, name);
    if (n == NULL) return -1;
    prelude(n, now_of(m));
    out->state = n->st == ST_CLOSED ? BREAKER_CLOSED
                 : n->st == ST_OPEN ? BREAKER_OPEN
                                    : BREAKER_HALF_OPEN;
    out->gen = n->gen;
    out->k = n->k;
    out->trips = n->trips;
    out->transitions = n->transitions;
    out->half_opens = n->half_opens;
    out->leases_out = n->lease_count;
    out->leases_granted = n->leases_granted;
    return 0;
}

/* ---- Clients ----------------------------------------------------------------------*/

int fleet_client_create(struct fleet_model *m, struct fleet_client **out) {
    struct fleet_client *c = calloc(1, sizeof(*c));
    *out = c;
    if (c == NULL) return -1;
    c->m = m;
    c->next = m->clients;
    m->clients = c;
    return 0;
}

void fleet_client_destroy(struct fleet_client *c) {
    if (c == NULL) return;
    for (size_t i = 0; i < c->count; i++)
        breaker_destroy(c->entries[i].b);
    for (struct fleet_client **p = &c->m->clients; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    free(c->entries);
    free(c);
}

static struct entry *entry_of(struct fleet_client *c, const breaker *b) {
    for (size_t i = 0; i < c->count; i++)
        if (c->entries[i].b == b) return &c->entries[i];
    return NULL;
}

struct fleet_client *fleet_model_client_of(struct fleet_model *m, const breaker *b) {
    for (struct fleet_client *c = m->clients; c != NULL; c = c->next)
        if (entry_of(c, b) != NULL) return c;
    return NULL;
}

/* The limits a later attacher is compared on: every limit, none of the
 * process's own fields (clock, seed, callbacks). */
static bool same_limits(const breaker_config *a, const breaker_config *b) {
    breaker_config x = *a, y = *b;
    x.clock = y.clock = NULL;
    x.clock_ctx = y.clock_ctx = NULL;
    x.on_event = y.on_event = NULL;
    x.event_ctx = y.event_ctx = NULL;
    x.seed = y.seed = 0;
    return memcmp(&x, &y, sizeof(x)) == 0;
}

int fleet_client_attach(struct fleet_client *c, const char *name, const breaker_config *cfg,
                        breaker **out) {
    *out = NULL;
    if (strlen(name) >= FLEET_NAME_MAX) return BREAKER_EINVAL;
    breaker_config want;
    if (cfg != NULL) {
        want = *cfg;
    } else {
        breaker_config_init(&want);
    }
    int rc = breaker_config_validate(&want, NULL, 0);
    if (rc != BREAKER_OK) return rc;
    /* Defaults applied, as the stored limits are: from a scratch breaker. */
    breaker *probe_cfg = NULL;
    rc = breaker_create(&want, &probe_cfg);
    if (rc != BREAKER_OK) return rc;
    breaker_config eff;
    breaker_get_config(probe_cfg, &eff);
    breaker_destroy(probe_cfg);
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        struct entry *e = realloc(c->entries, cap * sizeof(*e));
        if (e == NULL) return BREAKER_ENOMEM;
        c->entries = e;
        c->cap = cap;
    }
    struct fleet_name *n = find_name(c->m, name);
    int status = BREAKER_OK;
    if (n == NULL) {
        n = make_name(c->m, name, &eff);
        if (n == NULL) return BREAKER_ENOMEM;
    } else if (!same_limits(&n->cfg, &eff)) {
        status = BREAKER_CONFIG_DIFFERS;
    }
    /* The stored limits, with this process's clock, seed and callbacks. */
    breaker_config local = n->cfg;
    local.clock = want.clock;
    local.clock_ctx = want.clock_ctx;
    local.on_event = want.on_event;
    local.event_ctx = want.event_ctx;
    local.seed = want.seed;
    breaker *b = NULL;
    rc = breaker_create(&local, &b);
    if (rc != BREAKER_OK) return rc;
    struct entry *e = &c->entries[c->count++];
    memset(e, 0, sizeof(*e));
    e->b = b;
    e->n = n;
    *out = b;
    return status;
}

void fleet_client_detach(struct fleet_client *c, breaker *b) {
    struct entry *e = entry_of(c, b);
    if (e == NULL) return;
    breaker_destroy(b);
    *e = c->entries[--c->count];
}

/* apply_answer() of src/redis/fleet.c. */
static void apply(struct fleet_client *c, struct entry *e, const struct answer *a, uint64_t now) {
    e->known_gen = a->gen;
    /* The local generation first: the fence of both transitions below. */
    uint64_t local_gen = breaker_generation(e->b);
    enum breaker_state local = breaker_get_state(e->b);
    if (a->st == ST_CLOSED) {
        e->gate_until = 0;
        if (e->follows && (local == BREAKER_OPEN || local == BREAKER_HALF_OPEN))
            (void)c->m->cfg.close(e->b, local_gen, NULL);
        e->follows = false;
        return;
    }
    e->follows = true;
    if (a->st == ST_OPEN && a->wait_ns > 0) e->gate_until = now + a->wait_ns;
    if (local == BREAKER_CLOSED) {
        breaker_evidence ev;
        memset(&ev, 0, sizeof(ev));
        ev.calls = a->calls;
        ev.failures = a->failures;
        ev.slow_calls = a->slow;
        if (ev.calls > 0) {
            ev.failure_rate = (double)ev.failures / (double)ev.calls;
            ev.slow_call_rate = (double)ev.slow_calls / (double)ev.calls;
        }
        ev.failed_recoveries = a->k;
        (void)c->m->cfg.trip(e->b, local_gen, &ev);
    }
}

/* take_deltas() of src/redis/fleet.c: closed-state calls since the last
 * flush (probes are the fleet's through their leases). */
static void take_deltas(struct entry *e, uint64_t *calls, uint64_t *fails, uint64_t *slow,
                        uint64_t *trail) {
    breaker_stats s;
    (void)breaker_stats_get(e->b, &s);
    uint64_t pfail = s.probes_failed - s.probes_timed_out;
    uint64_t succ = (s.successes - e->last_succ) - (s.probes_succeeded - e->last_psucc);
    uint64_t fail = s.failures - e->last_fail;
    uint64_t pf = pfail - e->last_pfail;
    fail = fail > pf ? fail - pf : 0;
    *slow = s.slow - e->last_slow;
    e->last_succ = s.successes;
    e->last_fail = s.failures;
    e->last_slow = s.slow;
    e->last_psucc = s.probes_succeeded;
    e->last_pfail = pfail;
    *calls = succ + fail;
    *fails = fail;
    *trail = s.consecutive_failures;
}

void fleet_client_flush(struct fleet_client *c) {
    uint64_t now = now_of(c->m);
    for (size_t i = 0; i < c->count; i++) {
        struct entry *e = &c->entries[i];
        uint64_t calls, fails, slow, trail;
        take_deltas(e, &calls, &fails, &slow, &trail);
        struct answer a = script_flush(e->n, now, e->known_gen, calls, fails, slow, trail);
        apply(c, e, &a, now);
    }
}

bool fleet_permit_is_leased(const struct fleet_permit *p) { return p->token != 0; }

int fleet_client_acquire(struct fleet_client *c, breaker *b, struct fleet_permit *p) {
    p->token = 0;
    p->gen = 0;
    int rc = breaker_acquire(b, &p->permit);
    if (rc != BREAKER_OK || !breaker_permit_is_probe(&p->permit)) return rc;
    struct entry *e = entry_of(c, b);
    if (e == NULL) return BREAKER_OK; /* not the fleet's: a plain local probe */
    uint64_t now = now_of(c->m);
    if (now < e->gate_until) {
        (void)breaker_complete(b, &p->permit, BREAKER_IGNORED);
        return BREAKER_REJECTED_HALF_OPEN;
    }
    uint64_t token = ++c->m->token_seq;
    struct answer a = script_acquire(e->n, now, token);
    if (a.verdict == V_GRANTED) {
        p->token = token;
        p->gen = a.gen;
        return BREAKER_OK;
    }
    if (a.verdict == V_CLOSED) return BREAKER_OK; /* probing on its own trip */
    /* Refused: ask again when the fleet may answer otherwise, at the latest
     * after one flush interval. */
    uint64_t wait = a.wait_ns;
    uint64_t iv = c->m->cfg.flush_interval_ns;
    if (wait == 0 || wait > iv) wait = iv;
    e->gate_until = now + wait;
    (void)breaker_complete(b, &p->permit, BREAKER_IGNORED);
    return a.st == ST_OPEN ? BREAKER_REJECTED_OPEN : BREAKER_REJECTED_HALF_OPEN;
}

int fleet_client_complete(struct fleet_client *c, breaker *b, struct fleet_permit *p,
                          enum breaker_outcome outcome, uint64_t source) {
    if (p->token == 0) return breaker_complete_from(b, &p->permit, outcome, source);
    struct entry *e = entry_of(c, b);
    if (e == NULL) return BREAKER_EINVAL;
    enum breaker_outcome as = outcome;
    if (outcome == BREAKER_CANCELLED) {
        breaker_config cfg;
        breaker_get_config(b, &cfg);
        as = cfg.cancelled_as == BREAKER_FAILURE ? BREAKER_FAILURE : BREAKER_IGNORED;
    }
    int rc = breaker_complete_from(b, &p->permit, as == BREAKER_SUCCESS ? BREAKER_IGNORED : outcome,
                                   source);
    if (rc == BREAKER_ALREADY_SETTLED || rc == BREAKER_EINVAL) return rc;
    int result = as == BREAKER_SUCCESS   ? RES_SUCCESS
                 : as == BREAKER_FAILURE ? RES_FAILURE
                                         : RES_NEITHER;
    (void)script_release(e->n, now_of(c->m), p->gen, p->token, result);
    p->token = 0;
    /* The Redis client wakes its flusher for a lease result: a whole round. */
    fleet_client_flush(c);
    return rc;
}
