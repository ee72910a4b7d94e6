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
 * Callers: each request comes from one of `clients` legitimate callers, or,
 * with the phase's abuser_share, from one abusive caller whose requests the
 * dependency always answers with an error (a malformed request answered
 * 500). Completions name the caller to the breaker (breaker_complete_from),
 * so that min_failing_sources can tell one caller's failures from an outage.
 *
 * Determinism: every random draw is a pure function of (seed, request
 * number, purpose), so all runs of one scenario see the same arrivals and
 * the same dependency answers for the same request, and differ only by what
 * their breaker did. Events at the same instant run in the order they were
 * scheduled.
 */
#include "sim/simulate.h"
#include "sim/heap.h"

#include "cli/parse.h"
#include "cli/text.h"

#include "common/splitmix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Random draws: a counter-based generator -------------------------------*/

enum { DRAW_ARRIVAL, DRAW_LATENCY_U1, DRAW_LATENCY_U2, DRAW_ERROR, DRAW_ABUSER, DRAW_CLIENT };

/* A uniform draw in (0, 1) for request `id` and purpose `what`: the
 * library's splitmix64 finaliser applied to the counter, then to the seed. */
static double draw(uint64_t seed, uint64_t id, unsigned what) {
    uint64_t x = breaker__splitmix64(seed ^ breaker__splitmix64(id * 8u + what));
    return ((double)(x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* ---- Events ------------------------------------------------------------------*/

enum ev_type { EV_ARRIVAL, EV_DONE };

struct event {
    struct tool_heap_key key; /* time, then scheduling order */
    enum ev_type type;
    uint32_t worker;
};

/* ---- The run ---------------------------------------------------------------------*/

enum answer { ANSWER_OK, ANSWER_ERROR, ANSWER_TIMEOUT };

struct worker {
    uint64_t start;
    breaker_permit permit;
    uint64_t source; /* the caller, as breaker_complete_from() takes it */
    enum answer answer;
    bool holds_capacity; /* counted in the dependency's calls in flight */
};

struct sim {
    const struct tool_scenario *sc;
    struct tool_sim_result *r;
    breaker *b;
    uint64_t now; /* the virtual clock */
    uint64_t seq;
    struct tool_heap heap; /* of struct event */
    struct worker *workers;
    uint32_t *free_workers;
    uint32_t free_count;
    uint64_t saturated_since;
    uint64_t *latencies;
    size_t latency_count, latency_cap;
    /* The dependency. */
    uint64_t phase_start[TOOL_MAX_PHASE + 1];
    size_t phase;
    uint64_t knocked_until;
    uint32_t in_flight;
    /* The breaker's last close, for closed_after. */
    uint64_t last_close_ns;
    bool ever_opened;
    bool oom;
};

static uint64_t sim_clock(void *ctx) { return ((struct sim *)ctx)->now; }

static void on_transition(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    struct sim *s = ctx;
    if (tool_timeline_event(&s->r->timeline, ev) != 0) s->oom = true;
    if (ev->to == BREAKER_CLOSED) s->last_close_ns = ev->time_ns;
    if (ev->to == BREAKER_OPEN) s->ever_opened = true;
}

static void schedule(struct sim *s, uint64_t t, enum ev_type type, uint32_t worker) {
    struct event e = {.key = {.at = t, .tie = s->seq++}, .type = type, .worker = worker};
    if (tool_heap_push(&s->heap, &e) != 0) s->oom = true;
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

static const struct tool_phase *phase_at(struct sim *s, uint64_t t) {
    while (s->phase + 1 < s->sc->phase_count && t >= s->phase_start[s->phase + 1])
        s->phase++;
    return &s->sc->phases[s->phase];
}

/* The caller of request `id`, made now: 0 for the abusive caller, else a
 * legitimate one, 1 to clients. */
static uint64_t caller_of(struct sim *s, uint64_t id) {
    const struct tool_scenario *sc = s->sc;
    const struct tool_phase *p = phase_at(s, s->now);
    if (p->abuser_share > 0.0 && draw(sc->seed, id, DRAW_ABUSER) < p->abuser_share) return 0;
    uint64_t c = (uint64_t)(draw(sc->seed, id, DRAW_CLIENT) * (double)sc->clients);
    return (c < sc->clients ? c : sc->clients - 1) + 1;
}

/* The dependency's answer to a call made now by request `id` from `caller`:
 * how long it takes (capped by the timeout) and what it says. */
static uint64_t dependency_call(struct sim *s, uint64_t id, uint64_t caller, struct worker *w) {
    const struct tool_scenario *sc = s->sc;
    const struct tool_phase *p = phase_at(s, s->now);
    uint64_t t = s->now;
    /* Warm-up starts with the phase, and again after each knockdown: a
     * dependency that fell over comes back cold. */
    uint64_t warm_start = s->phase_start[s->phase];
    if (s->knocked_until > warm_start) warm_start = s->knocked_until;
    double progress = tool_phase_progress(p, t, warm_start);

    w->holds_capacity = false;
    bool down = p->kind == PHASE_DOWN || t < s->knocked_until;
    if (!down) {
        double cap = tool_phase_capacity(p, progress);
        if (p->capacity > 0 && (double)(s->in_flight + 1) > cap) {
            /* Overload: it falls over, and this call with it. */
            s->knocked_until = t + p->knockdown_ns;
            s->r->knockdowns++;
            down = true;
        }
    }
    if (down) {
        if (p->down == DOWN_REFUSED) {
            w->answer = ANSWER_ERROR;
            return sc->timeout_ns < TOOL_MS ? sc->timeout_ns : TOOL_MS; /* connect refused */
        }
        w->answer = ANSWER_TIMEOUT;
        return sc->timeout_ns;
    }

    double latency = tool_phase_latency_ns(p, progress, draw(sc->seed, id, DRAW_LATENCY_U1),
                                           draw(sc->seed, id, DRAW_LATENCY_U2));
    w->holds_capacity = true;
    s->in_flight++;
    if (latency >= (double)sc->timeout_ns) {
        w->answer = ANSWER_TIMEOUT;
        return sc->timeout_ns;
    }
    if (caller == 0) {
        w->answer = ANSWER_ERROR; /* the abusive caller's requests always fail */
    } else {
        w->answer = draw(sc->seed, id, DRAW_ERROR) < p->error_rate ? ANSWER_ERROR : ANSWER_OK;
    }
    return latency < 1.0 ? 1 : (uint64_t)latency;
}

static void arrival(struct sim *s, uint64_t id) {
    struct tool_sim_result *r = s->r;
    struct tool_bin *bin = tool_timeline_bin(&r->timeline, s->now);
    r->requests++;
    uint64_t caller = caller_of(s, id);
    if (caller == 0) r->abuser_requests++;
    if (s->free_count == 0) {
        r->shed++;
        bin->shed++;
        record_latency(s, 0, false);
        return;
    }
    breaker_permit permit;
    memset(&permit, 0, sizeof(permit));
    int admit = s->b != NULL ? breaker_acquire(s->b, &permit) : BREAKER_OK;
    if (admit != BREAKER_OK) {
        /* Open, half-open with its probes taken, or the ramp after a
         * recovery: the request fails fast either way. */
        r->refused++;
        if (admit == BREAKER_REJECTED_RAMP) {
            r->refused_ramp++;
        } else if (caller != 0) {
            r->refused_legit++;
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
    w->source = caller + 1; /* a source key is never 0 */
    uint64_t took = dependency_call(s, id, caller, w);
    r->reached++;
    bin->reached++;
    enum tool_phase_kind kind = s->sc->phases[s->phase].kind;
    if (tool_phase_is_outage(&s->sc->phases[s->phase])) r->reached_outage++;
    if (kind == PHASE_RECOVERING) r->reached_recovery++;
    schedule(s, s->now + took, EV_DONE, wi);
}

static void done(struct sim *s, uint32_t wi) {
    struct tool_sim_result *r = s->r;
    struct worker *w = &s->workers[wi];
    if (w->holds_capacity) s->in_flight--;
    if (s->b != NULL)
        (void)breaker_complete_from(s->b, &w->permit,
                                    w->answer == ANSWER_OK ? BREAKER_SUCCESS : BREAKER_FAILURE,
                                    w->source);
    switch (w->answer) {
    case ANSWER_OK:
        r->served++;
        break;
    case ANSWER_ERROR:
        r->errors++;
        tool_timeline_bin(&r->timeline, s->now)->failed++;
        break;
    case ANSWER_TIMEOUT:
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
    for (size_t i = 0; i < sc->phase_count && i < TOOL_MAX_PHASE; i++) {
        struct tool_band *band = &tl->bands[tl->band_count++];
        band->from_ns = s->phase_start[i];
        band->to_ns = s->phase_start[i] + sc->phases[i].duration_ns;
        snprintf(band->label, sizeof(band->label), "%s", sc->phases[i].name);
        band->shade = tool_phase_is_outage(&sc->phases[i])     ? 1
                      : sc->phases[i].kind == PHASE_RECOVERING ? 2
                                                               : 0;
    }
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

static int run(struct sim *s, const struct tool_breaker *cfg, char *msg, size_t msg_len) {
    const struct tool_scenario *sc = s->sc;
    struct tool_sim_result *r = s->r;
    if (cfg != NULL) {
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
        if (tool_timeline_state(&r->timeline, 0, BREAKER_CLOSED) != 0) return -1;
    }
    setup_timeline(s);

    uint64_t id = 0;
    uint64_t next = (uint64_t)(-log(draw(sc->seed, id, DRAW_ARRIVAL)) / sc->rate * 1e9);
    if (next < sc->duration_ns) schedule(s, next, EV_ARRIVAL, 0);
    while (s->heap.n > 0 && !s->oom) {
        struct event e;
        tool_heap_pop(&s->heap, &e);
        s->now = e.key.at;
        if (e.type == EV_DONE) {
            done(s, e.worker);
            continue;
        }
        arrival(s, id);
        id++;
        uint64_t gap = (uint64_t)(-log(draw(sc->seed, id, DRAW_ARRIVAL)) / sc->rate * 1e9);
        if (s->now + gap < sc->duration_ns) schedule(s, s->now + gap, EV_ARRIVAL, 0);
    }
    if (s->oom) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }

    if (s->latency_count > 1) qsort(s->latencies, s->latency_count, sizeof(uint64_t), cmp_u64);
    r->p50_ns = quantile(s->latencies, s->latency_count, 0.50);
    r->p99_ns = quantile(s->latencies, s->latency_count, 0.99);
    r->recovered_at_ns = recovery_time(sc, s->phase_start);
    r->closed_after_ns = UINT64_MAX;
    if (s->b != NULL) {
        breaker_stats st;
        breaker_stats_get(s->b, &st);
        r->transitions = st.transitions;
        r->probes = st.probes_admitted;
        bool closed = st.state == BREAKER_CLOSED;
        if (!s->ever_opened) {
            r->closed_after_ns = 0;
        } else if (closed && r->recovered_at_ns != UINT64_MAX) {
            r->closed_after_ns =
                s->last_close_ns > r->recovered_at_ns ? s->last_close_ns - r->recovered_at_ns : 0;
        }
    }
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
    for (size_t i = 0; i < sc->phase_count; i++)
        s.phase_start[i + 1] = s.phase_start[i] + sc->phases[i].duration_ns;
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
