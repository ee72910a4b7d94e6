/* SPDX-License-Identifier: MIT */
/*
 * fleet_model.c - the Redis fleet store in process (fleet_model.h): the
 * server half is fleet_server.c (the scripts on the model's clock); the
 * client half here is only the plumbing between real local breakers and
 * that server. Every decision on the way is src/store/redis/protocol.c's, called
 * as the Redis client calls it, in the same order: a round builds every
 * name's calls first (its leased results, then its flush with the deltas
 * and the generation it knew before the round), runs them, decides the
 * answers in order, and applies the transitions they decided last.
 */
#define BREAKER_BACKEND_EXPERIMENTAL
#include "fleet_model.h"

#include "breaker/backend.h" /* breaker_trip_outside(), the peeks */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS               ((uint64_t)1000000)
#define DEFAULT_FLUSH_NS (250 * MS)
#define RESULTS_MAX      16 /* leased results one name may hold for a round */

/* A leased probe's result, released in the next round. */
struct result {
    uint64_t gen, token;
    int result;
};

/* One name of one host. */
struct entry {
    breaker *b;
    char name[BREAKER_NAME_MAX + 1];
    char limits[BREAKER__FLEET_LIMITS_LEN]; /* what this host sends as ARGV 2 */
    struct breaker__fleet_seen seen;
    struct breaker__fleet_follow follow;
    uint64_t gate_until; /* no lease request before this */
    struct result results[RESULTS_MAX];
    size_t result_count;
    /* The round: the calls (results first, the flush last), their answers,
     * and the transition decided. */
    struct breaker__fleet_call calls[RESULTS_MAX + 1];
    int64_t answers[RESULTS_MAX + 1][ANS_COUNT];
    int answered[RESULTS_MAX + 1];
    size_t call_count;
    /* This round's call for the name is a read of its state (the calls are
     * then its results alone), and the counters its held-back deltas ran
     * to (dropped when the read shows another generation). */
    bool read;
    struct breaker__fleet_seen seen_after;
    char read_fields[BREAKER__FLEET_READ_FIELDS][FLEET_SERVER_READ_LEN];
    bool read_present[BREAKER__FLEET_READ_FIELDS];
    uint32_t index; /* the entry's index at attach: its full flushes' stagger */
    struct breaker__fleet_action act;
    uint64_t flush_seq;     /* the last flush's sequence (ARGV 9) */
    uint64_t directed_seen; /* stats.server_directed_opens as the last flush sent them */
};

struct fleet_client {
    struct fleet_model *m;
    char host_id[17]; /* ARGV 8 of its flushes, as the Redis client's */
    struct entry **entries;
    size_t count, cap;
    struct fleet_client *next;
};

struct fleet_model {
    struct fleet_model_config cfg;
    struct fleet_server *server;
    struct fleet_client *clients;
    uint64_t token_seq;
    uint64_t clients_made; /* each client's host id is drawn from it */
};

static uint64_t now_of(const struct fleet_model *m) { return m->cfg.clock(m->cfg.clock_ctx); }

/* ---- The model ------------------------------------------------------------------*/

int fleet_model_create(const struct fleet_model_config *cfg, struct fleet_model **out) {
    *out = NULL;
    if (cfg->clock == NULL) return -1;
    struct fleet_model *m = calloc(1, sizeof(*m));
    if (m == NULL) return -1;
    m->cfg = *cfg;
    if (m->cfg.flush_interval_ns == 0) m->cfg.flush_interval_ns = DEFAULT_FLUSH_NS;
    if (m->cfg.full_flush_rounds == 0) m->cfg.full_flush_rounds = BREAKER__FLEET_FULL_ROUNDS;
    if (fleet_server_create(cfg->clock, cfg->clock_ctx, &m->server) != 0) {
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void fleet_model_destroy(struct fleet_model *m) {
    if (m == NULL) return;
    fleet_server_destroy(m->server);
    free(m);
}

struct fleet_server *fleet_model_server(struct fleet_model *m) {
    return m->server;
}

int fleet_model_name_stats(struct fleet_model *m, const char *name, struct fleet_name_stats *out) {
    return fleet_server_name_stats(m->server, name, out);
}

/* ---- Clients ----------------------------------------------------------------------*/

int fleet_client_create(struct fleet_model *m, struct fleet_client **out) {
    struct fleet_client *c = calloc(1, sizeof(*c));
    *out = c;
    if (c == NULL) return -1;
    c->m = m;
    /* The Redis client's id is drawn from its random token key; here from
     * a count, so that a run is the same every time. */
    breaker__fleet_host_id(++m->clients_made, c->host_id);
    c->next = m->clients;
    m->clients = c;
    return 0;
}

void fleet_client_destroy(struct fleet_client *c) {
    if (c == NULL) return;
    for (size_t i = 0; i < c->count; i++) {
        breaker_destroy(c->entries[i]->b);
        free(c->entries[i]);
    }
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
        if (c->entries[i]->b == b) return c->entries[i];
    return NULL;
}

struct fleet_client *fleet_model_client_of(struct fleet_model *m, const breaker *b) {
    for (struct fleet_client *c = m->clients; c != NULL; c = c->next)
        if (entry_of(c, b) != NULL) return c;
    return NULL;
}

/* As the Redis client's attach reads the stored limits: a flush with no
 * deltas stores this host's limits when the name is new (so the first to
 * attach wins, not the first to flush), then the stored text is read and
 * adopted over `cfg`. That flush's answer in `*armed` when `*answered`
 * (the state the breaker is made in: breaker__fleet_follow_armed()).
 * @return 1 when `cfg` now holds other limits. */
static bool adopt_stored_limits(struct fleet_client *c, const char *name, const char *limits,
                                breaker_config *cfg, struct breaker__fleet_answer *armed,
                                bool *answered) {
    struct breaker__fleet_call call;
    struct breaker__fleet_deltas none = {0};
    breaker__fleet_call_flush(&call, 0, &none);
    int64_t ans[ANS_COUNT];
    *answered = false;
    if (fleet_server_call(c->m->server, name, limits, &call, ans) != 0) return false;
    *answered = breaker__fleet_answer_read(ans, armed) != 0;
    const char *stored = fleet_server_stored_limits(c->m->server, name);
    bool differs = false;
    if (stored == NULL) return false;
    breaker_config theirs = *cfg;
    if (!breaker__fleet_limits_adopt(stored, &theirs, &differs, NULL, 0) || !differs) return false;
    *cfg = theirs;
    return true;
}

int fleet_client_attach(struct fleet_client *c, const char *name, const breaker_config *cfg,
                        breaker **out) {
    *out = NULL;
    int rc = breaker_name_validate(name, NULL, 0);
    if (rc != BREAKER_OK) return rc;
    if (cfg != NULL && (rc = breaker_config_validate(cfg, NULL, 0)) != BREAKER_OK) return rc;
    breaker *b = NULL;
    rc = breaker_create(cfg, &b);
    if (rc != BREAKER_OK) return rc;
    breaker_config eff;
    breaker_get_config(b, &eff); /* defaults applied */
    struct entry *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        free(e);
        breaker_destroy(b);
        return BREAKER_ENOMEM;
    }
    snprintf(e->name, sizeof(e->name), "%s", name);
    breaker__fleet_limits_text(&eff, e->limits, sizeof(e->limits));
    int status = BREAKER_OK;
    struct breaker__fleet_answer armed;
    bool answered = false;
    bool other = adopt_stored_limits(c, name, e->limits, &eff, &armed, &answered);
    /* The breaker's evidence is of the generation it is made in. */
    breaker__fleet_follow_armed(&e->follow, answered ? &armed : NULL);
    if (other) {
        /* The stored limits win, as in a store file: the local breaker is
         * made with them over this host's own configuration. */
        breaker *again = NULL;
        if (breaker_create(&eff, &again) == BREAKER_OK) {
            breaker_destroy(b);
            b = again;
            breaker__fleet_limits_text(&eff, e->limits, sizeof(e->limits));
            status = BREAKER_CONFIG_DIFFERS;
        }
    }
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        struct entry **p = realloc(c->entries, cap * sizeof(*p));
        if (p == NULL) {
            free(e);
            breaker_destroy(b);
            return BREAKER_ENOMEM;
        }
        c->entries = p;
        c->cap = cap;
    }
    e->b = b;
    e->index = (uint32_t)c->count;
    c->entries[c->count++] = e;
    *out = b;
    return status;
}

void fleet_client_detach(struct fleet_client *c, breaker *b) {
    for (size_t i = 0; i < c->count; i++) {
        if (c->entries[i]->b != b) continue;
        /* No result waits: a leased completion flushes at once. */
        breaker_destroy(b);
        free(c->entries[i]);
        c->entries[i] = c->entries[--c->count];
        return;
    }
}

/* ---- One round ------------------------------------------------------------------*/

/* The round's calls of `e`: its leased results, then its flush, or a read
 * of its state (breaker__fleet_full_due(), as the Redis client chooses).
 * The flush is flush.c's collect_flush(): the deltas, the host id and
 * sequence, the failing-source map and the server-directed wait (ARGV 12:
 * what is left of a breaker_open_for(..., SERVER_DIRECTED) since the last
 * flush, which makes the round's call the script). */
static void build_calls(const struct fleet_model *m, const struct fleet_client *c,
                        struct entry *e) {
    e->call_count = 0;
    for (size_t i = 0; i < e->result_count; i++) {
        const struct result *r = &e->results[i];
        breaker__fleet_call_release(&e->calls[e->call_count++], r->gen, r->token, r->result);
    }
    breaker_stats s;
    breaker_stats_peek(e->b, &s);
    struct breaker__fleet_deltas d;
    struct breaker__fleet_seen next = e->seen;
    breaker__fleet_take_deltas(&next, &s, &d);
    breaker__fleet_cheap_setup(&e->follow, e->limits, m->cfg.full_flush_rounds,
                               m->cfg.flush_interval_ns);
    struct breaker__fleet_pending pend = {
        .deltas = &d,
        .probes_moved = next.probes_succeeded != e->seen.probes_succeeded ||
                        next.probes_failed != e->seen.probes_failed,
        .releases = e->result_count > 0,
        .local = breaker_state_peek(e->b),
    };
    uint64_t directed_us =
        breaker__fleet_directed_left_us(&s, pend.local, e->directed_seen, breaker_now_ns(e->b));
    e->read = directed_us == 0 && !breaker__fleet_full_due(&e->follow, &pend);
    if (e->read) {
        e->seen_after = next;
        return;
    }
    e->seen = next;
    d.sources = breaker_failing_sources_peek(e->b);
    /* The Redis client's sequence runs on its monotonic clock; the model's
     * clock is the one it has. */
    e->flush_seq = breaker__fleet_next_seq(e->flush_seq, now_of(m) / 1000);
    breaker__fleet_call_host_flush(&e->calls[e->call_count++], e->follow.known_gen, &d, c->host_id,
                                   e->flush_seq, directed_us);
    e->directed_seen = s.server_directed_opens;
}

/* The read of `e`'s state (the model's Redis has one clock: its TIME is
 * the model's) as an answer. @return 1 with `a`, or 0 (no answer: the
 * name's next round is the script). */
static int read_of(const struct fleet_model *m, struct entry *e, struct breaker__fleet_answer *a) {
    const char *v[BREAKER__FLEET_READ_FIELDS];
    for (int i = 0; i < BREAKER__FLEET_READ_FIELDS; i++)
        v[i] = e->read_present[i] ? e->read_fields[i] : NULL;
    uint64_t run = 0;
    if (!breaker__fleet_read_answer(v, now_of(m) / 1000, e->follow.max_wait_us, a, &run, NULL, 0))
        return 0;
    e->follow.known_run = run;
    return 1;
}

static struct breaker__fleet_local local_of(breaker *b) {
    struct breaker__fleet_local l;
    l.gen = breaker_generation(b); /* first: the fence of what is decided */
    l.state = breaker_state_peek(b);
    return l;
}

/* What the answers of `e` mean, in order (a read, last, as a flush's). */
static void decide_answers(const struct fleet_model *m, struct entry *e, uint64_t now) {
    e->act.kind = FLEET_ACT_NONE;
    struct breaker__fleet_local local = local_of(e->b);
    /* The model is never degraded: nothing recovered while it was. */
    breaker__fleet_check_recovered(&e->follow, false, &local);
    size_t kept = 0;
    for (size_t i = 0; i < e->call_count; i++) {
        struct breaker__fleet_answer a;
        bool good = e->answered[i] && breaker__fleet_answer_read(e->answers[i], &a);
        if (good) {
            struct breaker__fleet_gate gate;
            local = local_of(e->b);
            breaker__fleet_decide(&e->follow, &a, &local, now, &e->act, &gate);
            if (gate.change) e->gate_until = gate.until_ns;
        }
        /* A leased result is released until Redis answered it. */
        if (i < e->result_count &&
            !breaker__fleet_release_settled(good ? &a : NULL, false, now, 0, NULL))
            e->results[kept++] = e->results[i];
        if (i >= e->result_count && good) breaker__fleet_round_done(&e->follow, true, e->index);
        if (i >= e->result_count && !good) e->follow.synced = false; /* a script error */
    }
    e->result_count = kept;
    if (!e->read) return;
    struct breaker__fleet_answer a;
    breaker__fleet_round_done(&e->follow, false, e->index);
    if (!read_of(m, e, &a)) {
        e->follow.synced = false;
        return;
    }
    /* Another generation: what was held back belongs to the period that
     * ended (the script would not count it). */
    if (a.gen != e->follow.known_gen) e->seen = e->seen_after;
    struct breaker__fleet_gate gate;
    local = local_of(e->b);
    breaker__fleet_decide(&e->follow, &a, &local, now, &e->act, &gate);
    if (gate.change) e->gate_until = gate.until_ns;
}

static void apply(struct entry *e) {
    if (e->act.kind == FLEET_ACT_TRIP)
        (void)breaker_trip_outside_for(e->b, e->act.gen, e->act.wait_ns, &e->act.evidence);
    else if (e->act.kind == FLEET_ACT_CLOSE)
        (void)breaker_close_outside(e->b, e->act.gen, NULL);
    e->act.kind = FLEET_ACT_NONE;
}

void fleet_client_flush(struct fleet_client *c) {
    for (size_t i = 0; i < c->count; i++)
        build_calls(c->m, c, c->entries[i]);
    for (size_t i = 0; i < c->count; i++) {
        struct entry *e = c->entries[i];
        for (size_t j = 0; j < e->call_count; j++)
            e->answered[j] = fleet_server_call(c->m->server, e->name, e->limits, &e->calls[j],
                                               e->answers[j]) == 0;
        if (e->read) fleet_server_read(c->m->server, e->name, e->read_fields, e->read_present);
    }
    uint64_t now = now_of(c->m);
    for (size_t i = 0; i < c->count; i++)
        decide_answers(c->m, c->entries[i], now);
    for (size_t i = 0; i < c->count; i++)
        apply(c->entries[i]);
}

/* ---- Probes ---------------------------------------------------------------------*/

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
    struct breaker__fleet_call call;
    breaker__fleet_call_acquire(&call, token);
    int64_t v[ANS_COUNT];
    struct breaker__fleet_answer a;
    bool good = fleet_server_call(c->m->server, e->name, e->limits, &call, v) == 0 &&
                breaker__fleet_answer_read(v, &a);
    breaker_config cfg;
    breaker_get_config(b, &cfg);
    /* Answered at once: never past a budget, never lost. */
    struct breaker__fleet_lease_times t = {.start_ns = now,
                                           .now_ns = now,
                                           .budget_ns = UINT64_MAX,
                                           .interval_ns = c->m->cfg.flush_interval_ns,
                                           .probe_timeout_ns = cfg.probe_timeout_ns};
    uint64_t followed = e->follow.follows ? e->follow.followed_gen : 0;
    struct breaker__fleet_lease_plan plan;
    breaker__fleet_lease_settle(breaker__fleet_lease_verdict(good ? &a : NULL), good ? &a : NULL,
                                followed, &t, &plan);
    if (plan.gate.change) e->gate_until = plan.gate.until_ns;
    if (plan.hold) {
        p->token = token;
        p->gen = a.gen;
    }
    if (plan.rc != BREAKER_OK) (void)breaker_complete(b, &p->permit, BREAKER_IGNORED);
    if (plan.flush_now) fleet_client_flush(c); /* the Redis client wakes its flusher */
    return plan.rc;
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
    int rc = breaker_complete_from(b, &p->permit, breaker__fleet_local_outcome(outcome), source);
    if (rc == BREAKER_ALREADY_SETTLED || rc == BREAKER_EINVAL) return rc;
    if (e->result_count < RESULTS_MAX)
        e->results[e->result_count++] = (struct result){
            .gen = p->gen, .token = p->token, .result = breaker__fleet_release_result(as)};
    p->token = 0;
    /* The Redis client wakes its flusher for a lease result: a whole round. */
    fleet_client_flush(c);
    return rc;
}
