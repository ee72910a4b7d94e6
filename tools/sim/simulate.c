/* SPDX-License-Identifier: MIT */
/*
 * simulate.c - a discrete-event simulation of a service calling one
 * dependency through the real library, on a virtual clock.
 *
 * The service has `workers` workers; requests arrive as a Poisson process of
 * `rate` per second. A request that finds every worker busy is shed at once.
 * Otherwise it asks the breaker for a permit (if there is a breaker); a
 * refused request fails fast and frees its worker; an admitted one calls the
 * dependency and holds its worker until the answer or the timeout.
 *
 * The dependency follows the scenario's phases. It can hold `capacity` calls
 * at once (0 = no limit); a call beyond that knocks it down for `knockdown`,
 * during which it answers like a down phase. While recovering, its latency
 * falls from cold_latency to latency and its capacity rises from
 * cold_capacity to capacity over the phase's duration; a knockdown starts
 * that warm-up again (it comes back cold), so a flood of calls early in the
 * recovery keeps it down and a trickle of probes does not. At the end of the
 * phase it is healthy whatever happened (say, the operators scaled it).
 *
 * Callers: each request comes from one of `clients` legitimate callers (0:
 * calls name no caller, as a service that does not tell them apart), or,
 * with the phase's abuser_share, from one abusive caller whose requests the
 * dependency always answers with an error (a malformed request answered
 * 500). Completions name the caller to the breaker (breaker_complete_from),
 * so that min_failing_sources can tell one caller's failures from an outage.
 * In a phase with abuser_snipes, the abusive caller also sends one request
 * at the instant each open wait ends (breaker_retry_after_ns() told it when),
 * so that it is the probe; or, with abuser_snipes = hint, at the instant its
 * own retry hint names (breaker_retry_after_hint_from()), all a service that
 * publishes hints tells it. With abuser_hangs, the dependency never answers
 * the abusive caller: each of its calls ends at the timeout. Every call
 * names its caller at admission too (breaker_acquire_from()).
 *
 * Determinism: every random draw is a pure function of (seed, request
 * number, purpose), so all runs of one scenario see the same arrivals and
 * the same dependency answers for the same request, and differ only by what
 * their breaker did. Events at the same instant run in the order they were
 * scheduled.
 */
#include "sim/simulate.h"
#include "sim/dependency.h"
#include "sim/heap.h"

#include "cli/parse.h"
#include "cli/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Random draws: a counter-based generator -------------------------------*/

/* The dependency's purposes first (sim/dependency.h), then these. */
enum { DRAW_ABUSER = TOOL_DRAW_OWN, DRAW_CLIENT };

/* The abusive caller's key as the breaker sees it (a request's source is
 * its caller + 1: a key is never 0). */
#define ABUSER_KEY 1

/* ---- Events ------------------------------------------------------------------*/

enum ev_type { EV_ARRIVAL, EV_DONE, EV_SNIPE };

struct event {
    struct tool_heap_key key; /* time, then scheduling order */
    enum ev_type type;
    uint32_t worker;
};

/* ---- The run ---------------------------------------------------------------------*/

struct worker {
    uint64_t start;
    breaker_permit permit;
    uint64_t source;                /* the caller, as breaker_complete_from() takes it */
    struct tool_call_answer answer; /* the dependency's */
};

struct sim {
    const struct tool_scenario *sc;
    struct tool_sim_result *r;
    breaker *b;
    bool retry_after_opens; /* a 429 with Retry-After opens b for that long */
    uint64_t now;           /* the virtual clock */
    uint64_t seq;
    struct tool_heap heap; /* of struct event */
    struct worker *workers;
    uint32_t *free_workers;
    uint32_t free_count;
    uint64_t saturated_since;
    uint64_t *latencies;
    size_t latency_count, latency_cap;
    struct tool_dependency dep;
    /* The breaker's last close, for closed_after. */
    uint64_t last_close_ns;
    bool ever_opened;
    bool oom;
    uint64_t snipes;    /* requests the sniping abuser sent */
    bool snipers;       /* some phase has abuser_snipes */
    bool snipe_by_hint; /* ...with hint: the abuser is told hints, never the exact wait */
};

static uint64_t sim_clock(void *ctx) { return ((struct sim *)ctx)->now; }

static void schedule(struct sim *s, uint64_t t, enum ev_type type, uint32_t worker) {
    struct event e = {.key = {.at = t, .tie = s->seq++}, .type = type, .worker = worker};
    if (tool_heap_push(&s->heap, &e) != 0) s->oom = true;
}

static void on_transition(void *ctx, breaker *b, const breaker_event *ev) {
    struct sim *s = ctx;
    if (tool_timeline_event(&s->r->timeline, ev) != 0) s->oom = true;
    if (ev->to == BREAKER_CLOSED) s->last_close_ns = ev->time_ns;
    if (ev->to == BREAKER_CLOSED && ev->reason == BREAKER_REASON_PROBES_SUCCEEDED) s->r->closes++;
    if (ev->to == BREAKER_OPEN) s->ever_opened = true;
    /* A sniping abuser reads the wait (a read-only call, allowed here) and
     * comes back the instant it ends, if its phase snipes then. */
    if (ev->to == BREAKER_OPEN && s->snipers) {
        bool by_hint = s->snipe_by_hint;
        uint64_t hint = breaker_retry_after_hint_from(b, ABUSER_KEY);
        uint64_t wait = !by_hint                       ? breaker_retry_after_ns(b)
                        : hint > UINT64_MAX / TOOL_SEC ? UINT64_MAX
                                                       : hint * TOOL_SEC;
        uint64_t at = tool_add_ns(s->now, wait);
        if (at < s->sc->duration_ns) schedule(s, at, EV_SNIPE, 0);
    }
}

/* Every request's response time goes into the p50/p99 of the table; only
 * calls that reached the dependency go into the timeline's latency chart, so
 * that it shows the dependency's answers, not the instant refusals. */
static void record_latency(struct sim *s, uint64_t latency, bool reached) {
    if (s->latency_count == s->latency_cap) {
        size_t cap = s->latency_cap ? 2 * s->latency_cap : 4096;
        uint64_t *l = realloc(s->latencies, cap * sizeof(*l));
        if (l == NULL) {
            s->oom = true;
            return;
        }
        s->latencies = l;
        s->latency_cap = cap;
    }
    s->latencies[s->latency_count++] = latency;
    if (reached) tool_timeline_latency(&s->r->timeline, s->now, latency);
}

/* The caller of request `id`, made now: 0 for the abusive caller, else a
 * legitimate one, 1 to clients (1 with clients 0: callers not named). */
static uint64_t caller_of(struct sim *s, uint64_t id) {
    const struct tool_scenario *sc = s->sc;
    const struct tool_phase *p = tool_dependency_phase(&s->dep, s->now);
    if (p->abuser_share > 0.0 && tool_draw(sc->seed, id, DRAW_ABUSER) < p->abuser_share) return 0;
    if (sc->clients == 0) return 1;
    uint64_t c = (uint64_t)(tool_draw(sc->seed, id, DRAW_CLIENT) * (double)sc->clients);
    return (c < sc->clients ? c : sc->clients - 1) + 1;
}

/* Request `id` arrives, from `caller` when sniping (0, the abuser), else
 * from whoever caller_of() draws. */
static void arrival(struct sim *s, uint64_t id, bool snipe) {
    struct tool_sim_result *r = s->r;
    struct tool_bin *bin = tool_timeline_bin(&r->timeline, s->now);
    r->requests++;
    uint64_t caller = snipe ? 0 : caller_of(s, id);
    if (caller == 0) r->abuser_requests++;
    bool up = !tool_phase_is_outage(tool_dependency_phase(&s->dep, s->now));
    if (caller != 0 && up) r->legit_up++;
    if (s->free_count == 0) {
        r->shed++;
        bin->shed++;
        record_latency(s, 0, false);
        return;
    }
    breaker_permit permit;
    memset(&permit, 0, sizeof(permit));
    /* Named at admission and at completion (a source key is never 0): a
     * probe keeps its caller, for its timeout and for the next half-open. */
    /* The caller's key (a key is never 0), or 0 where callers are not
     * named (clients 0): breaker_acquire() itself. */
    uint64_t key = s->sc->clients != 0 ? caller + 1 : 0;
    int admit = s->b != NULL ? breaker_acquire_from(s->b, &permit, key) : BREAKER_OK;
    if (admit != BREAKER_OK) {
        /* Open, half-open with its probes taken, or the ramp after a
         * recovery: the request fails fast either way. */
        r->refused++;
        if (admit == BREAKER_REJECTED_RAMP) {
            r->refused_ramp++;
        } else if (caller != 0) {
            r->refused_legit++;
            r->refused_legit_up += up;
        }
        bin->refused++;
        record_latency(s, 0, false);
        return;
    }
    uint32_t wi = s->free_workers[--s->free_count];
    if (s->free_count == 0) s->saturated_since = s->now;
    struct worker *w = &s->workers[wi];
    w->start = s->now;
    w->permit = permit;
    w->source = key;
    w->answer = tool_dependency_call(&s->dep, s->now, id, caller == 0);
    r->reached++;
    bin->reached++;
    const struct tool_phase *p = &s->sc->phases[s->dep.phase];
    if (tool_phase_is_outage(p)) r->reached_outage++;
    if (p->kind == PHASE_RECOVERING) r->reached_recovery++;
    schedule(s, tool_add_ns(s->now, w->answer.took_ns), EV_DONE, wi);
}

static void done(struct sim *s, uint32_t wi) {
    struct tool_sim_result *r = s->r;
    struct worker *w = &s->workers[wi];
    tool_dependency_done(&s->dep, &w->answer);
    enum tool_answer answer = w->answer.answer;
    /* A 429 says nothing of the dependency's health (IGNORED, as
     * breaker_classify_http() has it); with retry_after_opens it opens the
     * breaker for the wait it asks (breaker_open_for(), as breaker_curl's
     * retry_after_opens does). */
    uint64_t ra = w->answer.retry_after_ns;
    if (ra != 0) r->throttled++;
    if (s->b != NULL) {
        (void)breaker_complete_from(s->b, &w->permit,
                                    answer == TOOL_ANSWER_OK ? BREAKER_SUCCESS
                                    : ra != 0                ? BREAKER_IGNORED
                                                             : BREAKER_FAILURE,
                                    w->source);
        if (ra != 0 && s->retry_after_opens)
            (void)breaker_open_for(s->b, ra, BREAKER_REASON_SERVER_DIRECTED);
    }
    switch (answer) {
    case TOOL_ANSWER_OK:
        r->served++;
        break;
    case TOOL_ANSWER_ERROR:
        r->errors++;
        tool_timeline_bin(&r->timeline, s->now)->failed++;
        break;
    case TOOL_ANSWER_TIMEOUT:
        r->timeouts++;
        tool_timeline_bin(&r->timeline, s->now)->failed++;
        break;
    }
    record_latency(s, s->now - w->start, true);
    if (s->free_count == 0) r->saturated_ns += s->now - s->saturated_since;
    s->free_workers[s->free_count++] = wi;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t quantile(const uint64_t *sorted, size_t n, double q) {
    if (n == 0) return 0;
    size_t i = (size_t)ceil(q * (double)n);
    if (i > 0) i--;
    return sorted[i < n ? i : n - 1];
}

static void setup_timeline(struct sim *s) {
    const struct tool_scenario *sc = s->sc;
    struct tool_timeline *tl = &s->r->timeline;
    tl->has_breaker = s->b != NULL;
    tl->has_shed = true;
    tl->timeout_ns = sc->timeout_ns;
    tool_dependency_bands(&s->dep, tl);
}

static uint64_t recovery_time(const struct tool_scenario *sc, const uint64_t *starts) {
    bool seen_outage = false;
    for (size_t i = 0; i < sc->phase_count; i++) {
        if (tool_phase_is_outage(&sc->phases[i])) {
            seen_outage = true;
        } else if (seen_outage) {
            return starts[i];
        }
    }
    return UINT64_MAX;
}

/* The breaker under test, on the simulation's clock and events. */
static int make_breaker(struct sim *s, const struct tool_breaker *cfg, char *msg, size_t msg_len) {
    const struct tool_scenario *sc = s->sc;
    breaker_config c = cfg->cfg;
    c.clock = sim_clock;
    c.clock_ctx = s;
    c.on_event = on_transition;
    c.event_ctx = s;
    if (c.seed == 0) c.seed = sc->seed != 0 ? sc->seed : 1;
    char why[TOOL_MSG_MAX];
    if (breaker_config_validate(&c, why, sizeof(why)) != BREAKER_OK) {
        snprintf(msg, msg_len, "breaker %s: %s", cfg->name, why);
        return -1;
    }
    if (breaker_create(&c, &s->b) != BREAKER_OK) {
        snprintf(msg, msg_len, "breaker %s: cannot create", cfg->name);
        return -1;
    }
    if (cfg->shadow) (void)breaker_set_shadow(s->b, 1);
    s->retry_after_opens = cfg->retry_after_opens;
    return tool_timeline_state(&s->r->timeline, 0, BREAKER_CLOSED);
}

/* Arrivals, completions and the abuser's snipes, in time order, until the
 * scenario ends (or memory runs out: s->oom). */
static void event_loop(struct sim *s) {
    const struct tool_scenario *sc = s->sc;
    uint64_t id = 0;
    uint64_t next = tool_arrival_gap(sc, id);
    if (next < sc->duration_ns) schedule(s, next, EV_ARRIVAL, 0);
    while (s->heap.n > 0 && !s->oom) {
        struct event e;
        tool_heap_pop(&s->heap, &e);
        s->now = e.key.at;
        if (e.type == EV_DONE) {
            done(s, e.worker);
            continue;
        }
        if (e.type == EV_SNIPE) {
            /* Its own draws, apart from the arrivals' (every run of a
             * scenario keeps the same arrivals and answers). */
            if (tool_dependency_phase(&s->dep, s->now)->abuser_snipes)
                arrival(s, UINT64_MAX - s->snipes++, true);
            continue;
        }
        arrival(s, id, false);
        id++;
        uint64_t gap = tool_arrival_gap(sc, id);
        if (tool_add_ns(s->now, gap) < sc->duration_ns) schedule(s, s->now + gap, EV_ARRIVAL, 0);
    }
}

/* The result's figures once the run is over: latencies, recovery, and what
 * the breaker counted. */
static void summarise(struct sim *s) {
    const struct tool_scenario *sc = s->sc;
    struct tool_sim_result *r = s->r;
    if (s->latency_count > 1) qsort(s->latencies, s->latency_count, sizeof(uint64_t), cmp_u64);
    r->p50_ns = quantile(s->latencies, s->latency_count, 0.50);
    r->p99_ns = quantile(s->latencies, s->latency_count, 0.99);
    r->knockdowns = s->dep.knockdowns;
    r->recovered_at_ns = recovery_time(sc, s->dep.phase_start);
    r->closed_after_ns = UINT64_MAX;
    if (s->b != NULL) {
        breaker_stats st;
        breaker_stats_get(s->b, &st);
        r->transitions = st.transitions;
        r->probes = st.probes_admitted;
        r->shadow = st.shadow != 0;
        r->would_reject = st.would_reject_open + st.would_reject_half_open +
                          st.would_reject_forced + st.would_reject_ramp;
        r->shadow_served = st.shadow_successes;
        bool closed = st.state == BREAKER_CLOSED;
        if (!s->ever_opened) {
            r->closed_after_ns = 0;
        } else if (closed && r->recovered_at_ns != UINT64_MAX) {
            r->closed_after_ns =
                s->last_close_ns > r->recovered_at_ns ? s->last_close_ns - r->recovered_at_ns : 0;
        }
    }
}

static int run(struct sim *s, const struct tool_breaker *cfg, char *msg, size_t msg_len) {
    if (cfg != NULL && make_breaker(s, cfg, msg, msg_len) != 0) return -1;
    setup_timeline(s);
    event_loop(s);
    if (s->oom) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    summarise(s);
    return 0;
}

int tool_simulate(const struct tool_scenario *sc, const struct tool_breaker *cfg,
                  struct tool_sim_result *out, char *msg, size_t msg_len) {
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", cfg != NULL ? cfg->name : "no breaker");
    out->has_breaker = cfg != NULL;
    out->has_ramp = cfg != NULL && cfg->cfg.ramp_ns > 0;
    struct sim s;
    memset(&s, 0, sizeof(s));
    s.sc = sc;
    s.r = out;
    for (size_t i = 0; i < sc->phase_count; i++) {
        s.snipers |= sc->phases[i].abuser_snipes;
        s.snipe_by_hint |= sc->phases[i].snipes_by_hint;
    }
    tool_dependency_init(&s.dep, sc);
    tool_heap_init(&s.heap, sizeof(struct event));
    s.workers = calloc(sc->workers, sizeof(*s.workers));
    s.free_workers = calloc(sc->workers, sizeof(*s.free_workers));
    int rc = -1;
    if (s.workers == NULL || s.free_workers == NULL ||
        tool_timeline_init(&out->timeline, 0, sc->duration_ns, 0) != 0) {
        snprintf(msg, msg_len, "out of memory");
        goto out;
    }
    /* Hand out workers lowest first (pure bookkeeping: all are equal). */
    for (uint32_t i = 0; i < sc->workers; i++)
        s.free_workers[i] = sc->workers - 1 - i;
    s.free_count = sc->workers;
    snprintf(out->timeline.title, sizeof(out->timeline.title), "%s", out->name);
    if (cfg != NULL)
        snprintf(out->timeline.subtitle, sizeof(out->timeline.subtitle), "%s",
                 cfg->description[0] ? cfg->description
                 : cfg->summary[0]   ? cfg->summary
                                     : "library defaults");
    else
        snprintf(out->timeline.subtitle, sizeof(out->timeline.subtitle),
                 "every request calls the dependency");
    rc = run(&s, cfg, msg, msg_len);
out:
    breaker_destroy(s.b);
    tool_heap_free(&s.heap);
    free(s.workers);
    free(s.free_workers);
    free(s.latencies);
    if (rc != 0) tool_sim_result_free(out);
    return rc;
}

void tool_sim_result_free(struct tool_sim_result *r) { tool_timeline_free(&r->timeline); }
