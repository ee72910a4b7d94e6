/* SPDX-License-Identifier: MIT */
/*
 * fleet_sim.c - the fleet scenario of `breaker simulate`: `instances` hosts,
 * each with its own workers and its own breaker, calling one shared
 * dependency, run twice on the same arrivals: once with local breakers
 * alone, once with the breakers backed by the fleet store: each host a real
 * fleet handle (breaker/redis.h) whose rounds and probe gate talk, through
 * the in-process transport (src/store/redis/inproc/link.h), to an
 * in-process Redis running the fleet's real Lua scripts on the
 * simulation's clock. Each host runs a round every jittered interval, and
 * at once when its client asks (a leased probe settled), as its flusher
 * thread would.
 *
 * Requests arrive as one Poisson process of `rate` per second for the whole
 * fleet, each sent to a host drawn at random (a load balancer). The
 * dependency follows the scenario's phases as in simulate.c (down, errors,
 * slow, recovering with capacity and knockdowns); it is one dependency, so
 * its capacity is shared by the hosts' calls.
 *
 * What is measured: every probe (a permit breaker_permit_is_probe() says is
 * one) is counted in flight from its call to its answer, under its recovery
 * round: in the local run, a host's n-th entry into HALF_OPEN is its round
 * n; in the fleet run, the fleet's n-th HALF_OPEN. Per round: the most
 * probes in flight at once across the fleet, the probes sent, and those that
 * reached the dependency while it was down (or knocked down): "dead calls".
 *
 * Determinism: every draw is a pure function of (seed, counter, purpose),
 * the flushes' jitter included; both runs see the same requests.
 */
#define BREAKER_REDIS_TRANSPORT_EXPERIMENTAL
#define BREAKER_BACKEND_EXPERIMENTAL /* breaker_permit_gate_token() */
#include "sim/simulate.h"
#include "sim/dependency.h"
#include "sim/heap.h"

#include "cli/parse.h"
#include "cli/text.h"

#include "common/splitmix.h"
#include "store/redis/inproc/link.h"
#include "store/redis/protocol.h"

#include <breaker/backend.h>
#include <breaker/redis_transport.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The dependency's purposes first (sim/dependency.h), then these. */
enum { DRAW_HOST = TOOL_DRAW_OWN, DRAW_FLUSH };

enum ev_type { EV_ARRIVAL, EV_DONE, EV_FLUSH, EV_WAKE };

struct event {
    struct tool_heap_key key;
    enum ev_type type;
    uint32_t who; /* EV_DONE: the worker; EV_FLUSH, EV_WAKE: the host */
};

struct worker {
    uint32_t host;
    uint64_t start;
    breaker_permit permit;
    struct tool_call_answer answer; /* the dependency's */
    bool probe;
    uint32_t round;
};

struct host {
    breaker *b;
    breaker_redis *fleet; /* the fleet run: this host's handle */
    struct fsim *sim;     /* for its wake-ups */
    uint32_t index;
    bool wake_due; /* a round asked for, not run yet */
    uint32_t *free_workers;
    uint32_t free_count;
    uint32_t half_opens; /* the local run's rounds */
    uint64_t flushes;
    bool tripped; /* left CLOSED at least once */
};

struct fsim {
    const struct tool_scenario *sc;
    struct tool_fleet_run *r;
    bool fleet;
    uint64_t now;
    uint64_t seq;
    struct tool_heap heap;
    struct host *hosts;
    struct worker *workers;
    struct breaker__redis_inproc *redis; /* the fleet run's Redis */
    uint32_t fleet_half_opens;
    bool retry_after_opens; /* the configuration's key */
    const char *name;
    struct tool_dependency dep;
    /* Probes in flight, by round, and in all. */
    uint32_t *round_in_flight;
    uint32_t probes_in_flight;
    enum breaker_state fleet_state;
    bool oom;
};

static uint64_t fsim_clock(void *ctx) { return ((struct fsim *)ctx)->now; }

/* Redis's clock: the simulation's, from an epoch as Redis's TIME is, so
 * that the fleet's first generation (the clock in microseconds, as the
 * scripts make it) is never 0, which a host reads as "none". A whole
 * number of seconds, so the fleet window's buckets start where they would
 * at 0. */
#define REDIS_EPOCH_NS (UINT64_C(1000000000) * TOOL_SEC)
static uint64_t fsim_redis_clock(void *ctx) { return REDIS_EPOCH_NS + ((struct fsim *)ctx)->now; }

/* Each host's breaker says which host it is through its event context. */
struct host_ctx {
    struct fsim *s;
    uint32_t host;
};

static void on_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct host_ctx *hc = ctx;
    struct fsim *s = hc->s;
    struct host *h = &s->hosts[hc->host];
    if (ev->to == BREAKER_HALF_OPEN) h->half_opens++;
    if (ev->from == BREAKER_CLOSED && ev->to == BREAKER_OPEN) {
        s->r->local_trips++;
        if (!h->tripped && ev->time_ns >= s->r->outage_at_ns) {
            h->tripped = true;
            if (s->r->first_open_ns == UINT64_MAX) s->r->first_open_ns = ev->time_ns;
            s->r->last_open_ns = ev->time_ns;
            s->r->hosts_opened++;
        }
    }
    s->r->local_transitions++;
    /* The timeline's state band: host 1's breaker in the local run (the
     * fleet's state in the fleet run, recorded after each event). */
    if (!s->fleet && hc->host == 0 && tool_timeline_event(&s->r->timeline, ev) != 0) s->oom = true;
}

static void schedule(struct fsim *s, uint64_t t, enum ev_type type, uint32_t who) {
    struct event e = {.key = {.at = t, .tie = s->seq++}, .type = type, .who = who};
    if (tool_heap_push(&s->heap, &e) != 0) s->oom = true;
}

/* The round a probe admitted now at host `h` belongs to (from 1). */
static uint32_t round_now(struct fsim *s, uint32_t h) {
    uint32_t r = s->fleet ? s->fleet_half_opens : s->hosts[h].half_opens;
    if (r == 0) r = 1;
    return r < TOOL_FLEET_MAX_ROUNDS ? r : TOOL_FLEET_MAX_ROUNDS;
}

static void note_fleet_state(struct fsim *s);

static void arrival(struct fsim *s, uint64_t id) {
    struct tool_fleet_run *r = s->r;
    struct tool_bin *bin = tool_timeline_bin(&r->timeline, s->now);
    r->requests++;
    uint32_t hi = (uint32_t)(tool_draw(s->sc->seed, id, DRAW_HOST) * (double)s->sc->instances);
    if (hi >= s->sc->instances) hi = s->sc->instances - 1;
    struct host *h = &s->hosts[hi];
    if (h->free_count == 0) {
        r->shed++;
        bin->shed++;
        return;
    }
    breaker_permit permit;
    memset(&permit, 0, sizeof(permit));
    int admit = breaker_acquire(h->b, &permit);
    if (admit != BREAKER_OK) {
        r->refused++;
        bin->refused++;
        return;
    }
    uint32_t wi = h->free_workers[--h->free_count];
    struct worker *w = &s->workers[wi];
    w->start = s->now;
    w->permit = permit;
    w->probe = breaker_permit_is_probe(&permit) != 0;
    /* The lease request may have turned the fleet HALF_OPEN: a new round. */
    if (w->probe) note_fleet_state(s);
    if (s->fleet && breaker_permit_gate_token(&permit) != 0) r->leases++;
    w->answer = tool_dependency_call(&s->dep, s->now, id, false);
    bool dead = w->answer.dead;
    r->reached++;
    bin->reached++;
    if (dead) r->reached_dead++;
    if (w->probe) {
        uint32_t k = round_now(s, hi);
        struct tool_fleet_round *rd = &r->rounds[k - 1];
        if (k > r->round_count) r->round_count = k;
        w->round = k;
        rd->probes++;
        if (rd->probes == 1) rd->first_ns = s->now;
        if (dead) rd->dead++;
        if (++s->round_in_flight[k - 1] > rd->max_in_flight)
            rd->max_in_flight = s->round_in_flight[k - 1];
        if (++s->probes_in_flight > r->max_in_flight) r->max_in_flight = s->probes_in_flight;
        r->probes++;
        if (dead) r->probes_dead++;
    }
    schedule(s, tool_add_ns(s->now, w->answer.took_ns), EV_DONE, wi);
}

static void done(struct fsim *s, uint32_t wi) {
    struct tool_fleet_run *r = s->r;
    struct worker *w = &s->workers[wi];
    struct host *h = &s->hosts[w->host];
    tool_dependency_done(&s->dep, &w->answer);
    if (w->probe) {
        s->round_in_flight[w->round - 1]--;
        s->probes_in_flight--;
    }
    bool ok = w->answer.answer == TOOL_ANSWER_OK;
    /* A 429 with Retry-After: IGNORED (breaker_classify_http()), and with
     * retry_after_opens the host's breaker opens for the wait asked. */
    uint64_t ra = w->answer.retry_after_ns;
    enum breaker_outcome o = ok ? BREAKER_SUCCESS : ra != 0 ? BREAKER_IGNORED : BREAKER_FAILURE;
    (void)breaker_complete(h->b, &w->permit, o);
    if (ra != 0) {
        r->throttled++;
        if (s->retry_after_opens &&
            breaker_open_for(h->b, ra, BREAKER_REASON_SERVER_DIRECTED) == BREAKER_OK)
            r->directed_opens++;
    }
    if (ok) {
        r->served++;
    } else {
        tool_timeline_bin(&r->timeline, s->now)->failed++;
    }
    tool_timeline_latency(&r->timeline, s->now, s->now - w->start);
    h->free_workers[h->free_count++] = wi;
}

/* The next flush of host `h`: the interval, jittered by +-20% as the Redis
 * client's flusher does, drawn from (seed, host, flush number). */
static void schedule_flush(struct fsim *s, uint32_t hi) {
    struct host *h = &s->hosts[hi];
    uint64_t iv = s->sc->flush_interval_ns;
    double u = tool_draw(s->sc->seed, ((uint64_t)hi << 32) | h->flushes, DRAW_FLUSH);
    uint64_t wait = iv - iv / 5 + (uint64_t)(u * (double)(2 * (iv / 5)));
    h->flushes++;
    if (tool_add_ns(s->now, wait) < s->sc->duration_ns) schedule(s, s->now + wait, EV_FLUSH, hi);
}

/* A field of the fleet's state hash in the in-process Redis, as a number
 * (0: absent). */
static uint64_t fleet_field(struct fsim *s, const char *field) {
    char key[BREAKER__FLEET_KEY_LEN];
    breaker__fleet_key(s->name, FLEET_KEY_STATE, key, sizeof key);
    const char *v = breaker__redis_inproc_hget(s->redis, key, field, NULL);
    return v != NULL ? strtoull(v, NULL, 10) : 0;
}

/* The fleet's state after each event: its band in the timeline, and its
 * entries into HALF_OPEN (its recovery rounds). */
static void note_fleet_state(struct fsim *s) {
    if (!s->fleet) return;
    enum breaker_state st = (enum breaker_state)fleet_field(s, "st");
    if (st == s->fleet_state) return;
    s->fleet_state = st;
    if (st == BREAKER_HALF_OPEN) s->fleet_half_opens++;
    if (tool_timeline_state(&s->r->timeline, s->now, st) != 0) s->oom = true;
}

/* A host's client asks for a round now (a leased probe settled): run at
 * once, as its flusher thread would, after the event that asked. */
static void on_wake(void *ctx) {
    struct host *h = ctx;
    if (h->wake_due) return;
    h->wake_due = true;
    schedule(h->sim, h->sim->now, EV_WAKE, h->index);
}

/* Host `i`'s fleet handle: a link to the run's Redis, no flusher thread
 * (the simulation runs its rounds). @return 0, or -1 with `msg`. */
static int open_fleet(struct fsim *s, uint32_t i, char *msg, size_t msg_len) {
    struct host *h = &s->hosts[i];
    struct breaker__inproc_link *link = breaker__inproc_link_create(s->redis, fsim_clock, s);
    if (link == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    h->sim = s;
    h->index = i;
    breaker__inproc_link_set_wake(link, on_wake, h);
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    rc.flush_interval_ns = s->sc->flush_interval_ns;
    return breaker_redis_open_transport(&rc, &breaker__inproc_link_ops, link,
                                        BREAKER_REDIS_NO_FLUSHER, &h->fleet, msg,
                                        msg_len) == BREAKER_OK
               ? 0
               : -1;
}

static uint64_t outage_start(const struct tool_scenario *sc, const uint64_t *starts) {
    for (size_t i = 0; i < sc->phase_count; i++)
        if (tool_phase_is_outage(&sc->phases[i])) return starts[i];
    return UINT64_MAX;
}

/* Each host's breaker (and, for the fleet run, the model and each host's
 * client of it), on the simulation's clock, each with its own jitter seed.
 * @return 0, or -1 with `msg`. */
static int make_hosts(struct fsim *s, const struct tool_breaker *cfg, struct host_ctx *ctxs,
                      char *msg, size_t msg_len) {
    const struct tool_scenario *sc = s->sc;
    s->retry_after_opens = cfg->retry_after_opens;
    if (s->fleet && (s->redis = breaker__redis_inproc_create(fsim_redis_clock, s)) == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < sc->instances; i++) {
        struct host *h = &s->hosts[i];
        breaker_config c = cfg->cfg;
        c.clock = fsim_clock;
        c.clock_ctx = s;
        ctxs[i].s = s;
        ctxs[i].host = i;
        c.on_event = on_event;
        c.event_ctx = &ctxs[i];
        /* Each host its own jitter, as separate processes have. */
        uint64_t seed = c.seed != 0 ? c.seed : sc->seed != 0 ? sc->seed : 1;
        c.seed = breaker__splitmix64(seed + i);
        if (c.seed == 0) c.seed = 1;
        int rc;
        if (s->fleet) {
            if (open_fleet(s, i, msg, msg_len) != 0) return -1;
            rc = breaker_redis_attach(h->fleet, s->name, &c, &h->b, NULL, 0);
            if (rc == BREAKER_CONFIG_DIFFERS) rc = BREAKER_OK; /* the seed alone */
        } else {
            rc = breaker_create(&c, &h->b);
        }
        if (rc != BREAKER_OK) {
            snprintf(msg, msg_len, "breaker %s: %s", cfg->name, breaker_strerror(rc));
            return -1;
        }
    }
    return 0;
}

/* Every event in time order, until none is left: arrivals up to the
 * scenario's end, their completions, and the fleet run's flushes. */
static void event_loop(struct fsim *s) {
    const struct tool_scenario *sc = s->sc;
    uint64_t id = 0;
    uint64_t next = tool_arrival_gap(sc, id);
    if (next < sc->duration_ns) schedule(s, next, EV_ARRIVAL, 0);
    while (s->heap.n > 0 && !s->oom) {
        struct event e;
        tool_heap_pop(&s->heap, &e);
        s->now = e.key.at;
        switch (e.type) {
        case EV_DONE:
            done(s, e.who);
            break;
        case EV_FLUSH:
            s->hosts[e.who].wake_due = false;
            (void)breaker_redis_flush(s->hosts[e.who].fleet);
            schedule_flush(s, e.who);
            break;
        case EV_WAKE:
            if (s->hosts[e.who].wake_due) {
                s->hosts[e.who].wake_due = false;
                (void)breaker_redis_flush(s->hosts[e.who].fleet);
            }
            break;
        case EV_ARRIVAL: {
            arrival(s, id);
            id++;
            uint64_t gap = tool_arrival_gap(sc, id);
            if (tool_add_ns(s->now, gap) < sc->duration_ns)
                schedule(s, s->now + gap, EV_ARRIVAL, 0);
            break;
        }
        }
        note_fleet_state(s);
    }
}

/* What only the end of the run can say: the fleet's own counts, and the
 * hosts closed at the end. */
static void final_counts(struct fsim *s) {
    struct tool_fleet_run *r = s->r;
    if (s->fleet) {
        r->fleet_trips = fleet_field(s, "trips");
        r->fleet_transitions = fleet_field(s, "transitions");
    }
    for (uint32_t i = 0; i < s->sc->instances; i++)
        if (breaker_get_state(s->hosts[i].b) == BREAKER_CLOSED) r->hosts_closed_at_end++;
}

static int run(struct fsim *s, const struct tool_breaker *cfg, struct host_ctx *ctxs, char *msg,
               size_t msg_len) {
    if (make_hosts(s, cfg, ctxs, msg, msg_len) != 0) return -1;
    if (tool_timeline_state(&s->r->timeline, 0, BREAKER_CLOSED) != 0) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    s->fleet_state = BREAKER_CLOSED;
    if (s->fleet)
        for (uint32_t i = 0; i < s->sc->instances; i++)
            schedule_flush(s, i);
    event_loop(s);
    if (s->oom) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    final_counts(s);
    return 0;
}

static void setup_timeline(struct fsim *s, const struct tool_breaker *cfg) {
    const struct tool_scenario *sc = s->sc;
    struct tool_timeline *tl = &s->r->timeline;
    tl->has_breaker = true;
    tl->has_shed = true;
    tl->timeout_ns = sc->timeout_ns;
    tool_dependency_bands(&s->dep, tl);
    snprintf(tl->title, sizeof(tl->title), "%s: %s, %u hosts", cfg->name,
             s->fleet ? "fleet store (breaker_redis on an in-process Redis)" : "local breakers",
             sc->instances);
    snprintf(tl->subtitle, sizeof(tl->subtitle), "%s",
             s->fleet ? "calls of all hosts; the band is the fleet's state"
                      : "calls of all hosts; the band is host 1's breaker");
}

static int run_one(const struct tool_scenario *sc, const struct tool_breaker *cfg, bool fleet,
                   struct tool_fleet_run *out, char *msg, size_t msg_len) {
    memset(out, 0, sizeof(*out));
    out->fleet = fleet;
    out->first_open_ns = out->last_open_ns = UINT64_MAX;
    struct fsim s;
    memset(&s, 0, sizeof(s));
    s.sc = sc;
    s.r = out;
    s.fleet = fleet;
    s.name = "dependency";
    tool_dependency_init(&s.dep, sc);
    out->outage_at_ns = outage_start(sc, s.dep.phase_start);
    tool_heap_init(&s.heap, sizeof(struct event));
    size_t n = sc->instances, nw = (size_t)sc->instances * sc->workers;
    s.hosts = calloc(n, sizeof(*s.hosts));
    s.workers = calloc(nw, sizeof(*s.workers));
    s.round_in_flight = calloc(TOOL_FLEET_MAX_ROUNDS, sizeof(*s.round_in_flight));
    struct host_ctx *ctxs = calloc(n, sizeof(*ctxs));
    int rc = -1;
    if (s.hosts == NULL || s.workers == NULL || s.round_in_flight == NULL || ctxs == NULL ||
        tool_timeline_init(&out->timeline, 0, sc->duration_ns, 0) != 0) {
        snprintf(msg, msg_len, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < sc->instances; i++) {
        struct host *h = &s.hosts[i];
        h->free_workers = calloc(sc->workers, sizeof(*h->free_workers));
        if (h->free_workers == NULL) {
            snprintf(msg, msg_len, "out of memory");
            goto out;
        }
        for (uint32_t j = 0; j < sc->workers; j++) {
            uint32_t wi = i * sc->workers + (sc->workers - 1 - j);
            h->free_workers[j] = wi;
            s.workers[wi].host = i;
        }
        h->free_count = sc->workers;
    }
    setup_timeline(&s, cfg);
    rc = run(&s, cfg, ctxs, msg, msg_len);
out:
    for (uint32_t i = 0; s.hosts != NULL && i < sc->instances; i++) {
        if (s.hosts[i].fleet != NULL) {
            breaker_redis_close(s.hosts[i].fleet); /* destroys its breaker */
        } else {
            breaker_destroy(s.hosts[i].b);
        }
        free(s.hosts[i].free_workers);
    }
    breaker__redis_inproc_destroy(s.redis);
    tool_heap_free(&s.heap);
    free(s.hosts);
    free(s.workers);
    free(s.round_in_flight);
    free(ctxs);
    if (rc != 0) tool_timeline_free(&out->timeline);
    return rc;
}

int tool_simulate_fleet(const struct tool_scenario *sc, const struct tool_breaker *cfg,
                        struct tool_fleet_result *out, char *msg, size_t msg_len) {
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", cfg->name);
    if (sc->instances == 0) {
        snprintf(msg, msg_len, "not a fleet scenario (instances is 0)");
        return -1;
    }
    if (tool_scenario_has_abuser(sc)) {
        snprintf(msg, msg_len, "a fleet scenario has no abusive caller (abuser_share)");
        return -1;
    }
    breaker *tmp = NULL;
    if (breaker_create(&cfg->cfg, &tmp) != BREAKER_OK) {
        snprintf(msg, msg_len, "breaker %s: cannot create", cfg->name);
        return -1;
    }
    breaker_config eff;
    breaker_get_config(tmp, &eff);
    breaker_destroy(tmp);
    out->max_probes = eff.half_open_max_probes;
    if (run_one(sc, cfg, false, &out->local, msg, msg_len) != 0) return -1;
    if (run_one(sc, cfg, true, &out->fleet, msg, msg_len) != 0) {
        tool_timeline_free(&out->local.timeline);
        return -1;
    }
    return 0;
}

void tool_fleet_result_free(struct tool_fleet_result *r) {
    tool_timeline_free(&r->local.timeline);
    tool_timeline_free(&r->fleet.timeline);
}
