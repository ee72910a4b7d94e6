/* SPDX-License-Identifier: MIT */
/*
 * reference_model.c - the simple model of the breaker (see reference_model.h).
 *
 * Every rule below is one sentence of the manual (docs/correctness.md lists
 * them); the code follows the sentence rather than any cleverness, so that a
 * reader can check it line by line.
 */
#include "reference_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define K_MAX 4095u

uint64_t ref_splitmix64(uint64_t x) {
    uint64_t z = x + UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t ceil_us(uint64_t ns) { return ns / 1000 + (ns % 1000 != 0); }

/* Deadlines and open_until are kept in whole microseconds since the epoch,
 * rounded up, and reported back in nanoseconds. */
static uint64_t deadline_after(const struct ref_model *m, uint64_t t, uint64_t span) {
    return m->epoch + ceil_us(t - m->epoch + span) * 1000;
}

uint64_t ref_model_wait_ns(const breaker_config *cfg, uint32_t k, uint64_t gen) {
    double w = (double)cfg->open_ns;
    double max = (double)cfg->open_max_ns;
    for (uint32_t i = 0; i < k; i++) {
        if (w >= max) break;
        w *= cfg->open_backoff;
        if (w > max) w = max;
    }
    if (cfg->open_jitter > 0) {
        uint64_t r = ref_splitmix64(cfg->seed ^ (gen * UINT64_C(0x9e3779b97f4a7c15)));
        double u = (double)(r >> 11) * 0x1p-53;
        w += w * cfg->open_jitter * u;
    }
    return (uint64_t)w;
}

int ref_model_init(struct ref_model *m, const breaker_config *cfg, uint64_t now) {
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    m->cfg = *cfg;
    m->epoch = now;
    m->bucket_ns = cfg->window_ns / cfg->window_buckets;
    m->state = BREAKER_CLOSED;
    m->generation = 1;
    m->since = now;
    m->next_permit_id = 1;
    m->probes = calloc(cfg->half_open_max_probes, sizeof(*m->probes));
    m->slot_last_us = calloc(cfg->half_open_max_probes, sizeof(*m->slot_last_us));
    m->cap_records = 1024;
    m->records = malloc(m->cap_records * sizeof(*m->records));
    if (m->probes == NULL || m->slot_last_us == NULL || m->records == NULL) {
        ref_model_fini(m);
        return -1;
    }
    return 0;
}

void ref_model_fini(struct ref_model *m) {
    free(m->probes);
    free(m->slot_last_us);
    free(m->records);
    m->probes = NULL;
    m->slot_last_us = NULL;
    m->records = NULL;
    pthread_mutex_destroy(&m->mu);
}

/* ---- Windows ------------------------------------------------------------- */

static void window_clear(struct ref_model *m) {
    m->run = 0;
    m->nrecords = 0;
    m->src_cur = m->src_prev = 0; /* the period number and the chunks carry on */
}

/* ---- Failing sources: a 64-bit map per period, the same rules as the
 * library's (src/core/window.c), written out again. */
static void sources_enter(struct ref_model *m, uint64_t period) {
    if (period <= m->src_period) return;
    m->src_prev = period == m->src_period + 1 ? m->src_cur : 0;
    m->src_cur = 0;
    m->src_period = period;
}

/* As the manual: N distinct bits for N sources; min_failing_sources 0 is
 * the default, 3 for a window whose failures name a source; 1 is off. */
static uint32_t sources_bits_needed(uint32_t n) {
    if (n == 0) n = 3;
    return n <= 1 ? 0 : n;
}

/* Whether the map's bits meet the rule (the default asks it only of a map
 * with a bit set). */
static bool sources_enough(const breaker_config *c, uint32_t bits) {
    if (bits >= sources_bits_needed(c->min_failing_sources)) return true;
    return c->min_failing_sources == 0 && bits == 0;
}

static uint32_t sources_estimate(uint32_t bits) {
    if (bits >= 64) return 64 * 5;
    return (uint32_t)lround(-64.0 * log(1.0 - (double)bits / 64.0));
}

/* Before recording an outcome in the window: the period bookkeeping. */
static void sources_record(struct ref_model *m, uint64_t now, bool failure, uint64_t source) {
    m->src_bits = 0;
    bool on = sources_bits_needed(m->cfg.min_failing_sources) != 0;
    switch (m->cfg.trip) {
    case BREAKER_TRIP_CONSECUTIVE:
        if (failure && m->run == 0 && on) m->src_cur = m->src_prev = 0; /* a run begins */
        break;
    case BREAKER_TRIP_COUNT_WINDOW: {
        /* Chunks of K = window_size / 4 slots (1..64); the last may be short. */
        uint64_t n = m->cfg.window_size, k = n / 4 < 1 ? 1 : n / 4 > 64 ? 64 : n / 4;
        uint64_t chunks = (n + k - 1) / k;
        uint64_t len = m->chunk == 0 ? 0 : m->chunk < chunks ? k : n - (chunks - 1) * k;
        if (m->chunk != 0 && m->chunk_used < len) {
            m->chunk_used++;
        } else {
            uint64_t c = m->ring_next++ % chunks;
            m->chunk = c + 1;
            m->chunk_used = 1;
            if (c == 0 && on) sources_enter(m, m->src_period + 1);
        }
        break;
    }
    case BREAKER_TRIP_TIME_WINDOW:
        if (failure && on) sources_enter(m, (now - m->epoch) / m->cfg.window_ns + 1);
        break;
    }
    if (failure && on) {
        if (source != 0) m->src_cur |= UINT64_C(1) << (ref_splitmix64(source) & 63u);
        m->src_bits = (uint32_t)__builtin_popcountll(m->src_cur | m->src_prev);
    }
}

static void drop_oldest_record(struct ref_model *m) {
    memmove(m->records, m->records + 1, (m->nrecords - 1) * sizeof(*m->records));
    m->nrecords--;
}

static uint64_t bucket_of(const struct ref_model *m, uint64_t now) {
    return (now - m->epoch) / m->bucket_ns;
}

/* A time-window record is in the window at `now` when its bucket is one of
 * the last window_buckets buckets, the current one included. */
static bool record_in_window(const struct ref_model *m, const struct ref_record *r, uint64_t now) {
    uint64_t e = bucket_of(m, now);
    return r->bucket <= e && r->bucket + m->cfg.window_buckets > e;
}

struct ref_view {
    uint64_t calls, failures, slow;
    uint32_t consecutive;
};

static void window_view(struct ref_model *m, uint64_t now, struct ref_view *v) {
    memset(v, 0, sizeof(*v));
    if (m->cfg.trip == BREAKER_TRIP_CONSECUTIVE) {
        /* The manual: with CONSECUTIVE the window fields are 0 and
         * consecutive_failures holds the run. */
        v->consecutive = m->run;
        return;
    }
    for (size_t i = 0; i < m->nrecords; i++) {
        const struct ref_record *r = &m->records[i];
        if (m->cfg.trip == BREAKER_TRIP_TIME_WINDOW && !record_in_window(m, r, now)) continue;
        v->calls++;
        v->failures += r->failure;
        v->slow += r->slow;
    }
}

static void window_record(struct ref_model *m, uint64_t now, bool failure, bool slow) {
    switch (m->cfg.trip) {
    case BREAKER_TRIP_CONSECUTIVE:
        (void)slow;
        m->run = failure ? m->run + 1 : 0;
        return;
    case BREAKER_TRIP_COUNT_WINDOW:
        if (m->nrecords == m->cfg.window_size) drop_oldest_record(m);
        break;
    case BREAKER_TRIP_TIME_WINDOW:
        /* Records that left the window never come back (time only moves
         * forward), so forgetting them keeps the list short. */
        while (m->nrecords > 0 && !record_in_window(m, &m->records[0], now))
            drop_oldest_record(m);
        break;
    }
    if (m->nrecords == m->cap_records) {
        /* Only a time window with more calls per window than this grows. */
        m->cap_records *= 2;
        struct ref_record *r = realloc(m->records, m->cap_records * sizeof(*r));
        if (r == NULL) abort();
        m->records = r;
    }
    m->records[m->nrecords++] = (struct ref_record){bucket_of(m, now), failure, slow};
}

/* ---- Transitions ----------------------------------------------------------- */

static void transition(struct ref_model *m, uint64_t now, enum breaker_state to,
                       enum breaker_reason reason, uint32_t k, const struct ref_view *evidence) {
    breaker_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.from = m->state;
    ev.to = to;
    ev.reason = reason;
    ev.time_ns = now;
    if (evidence != NULL) {
        ev.evidence.calls = evidence->calls;
        ev.evidence.failures = evidence->failures;
        ev.evidence.slow_calls = evidence->slow;
        ev.evidence.consecutive_failures = evidence->consecutive;
        ev.evidence.failing_sources = m->src_bits ? sources_estimate(m->src_bits) : 0;
    }
    ev.evidence.probe_successes = m->probe_successes;

    if (now > m->since) m->time_in_state[m->state] += now - m->since;
    /* Who is refused a probe: the callers of the failed probes of a
     * half-open that reopens, through the OPEN and the HALF_OPEN after it,
     * for probe_timeout_ns after the wait (in HALF_OPEN: after it began). */
    enum breaker_state from = m->state;
    if (from == BREAKER_OPEN && to == BREAKER_HALF_OPEN) {
        m->turns_from = m->open_until;
        m->turns_gen = m->generation;
    }
    if (from == BREAKER_HALF_OPEN && to == BREAKER_OPEN)
        m->refused_callers = m->probe_src;
    else if (!(from == BREAKER_OPEN && to == BREAKER_HALF_OPEN))
        m->refused_callers = 0;
    m->since = now;
    m->state = to;
    m->generation++;
    m->counters.transitions++;
    m->k = k > K_MAX ? K_MAX : k;
    ev.evidence.failed_recoveries = m->k;
    /* A new generation: every probe of the old one lost its slot. */
    m->nprobes = 0;
    memset(m->slot_last_us, 0, m->cfg.half_open_max_probes * sizeof(*m->slot_last_us));
    m->probe_successes = 0;
    m->probe_src = 0; /* a new half-open starts its map */
    m->open_until = 0;
    m->ramp_until = 0;
    if (to == BREAKER_OPEN) {
        ev.open_ns = ref_model_wait_ns(&m->cfg, m->k, m->generation);
        breaker_config flat = m->cfg;
        flat.open_jitter = 0;
        m->turns_spread = ref_model_wait_ns(&flat, m->k, m->generation) / 4 / 1000 * 1000;
        m->open_until = deadline_after(m, now, ev.open_ns);
        m->refused_until = m->open_until + m->cfg.probe_timeout_ns;
    }
    if (to == BREAKER_HALF_OPEN) m->refused_until = deadline_after(m, now, m->cfg.probe_timeout_ns);
    if (to == BREAKER_CLOSED || to == BREAKER_FORCED_CLOSED) {
        window_clear(m);
        m->timeout_spared = false;
    }
    ev.generation = m->generation;
    if (m->nevents < REF_MAX_EVENTS) m->events[m->nevents++] = ev;
}

/* The share a ramp admits at `now` (< ramp_until), linear from ramp_start
 * to 1, and as the 32.32 credit increment. The same arithmetic as the
 * library's, written out again. */
static double ramp_share_at(const struct ref_model *m, uint64_t now) {
    uint64_t left = m->ramp_until - now;
    if (left > m->cfg.ramp_ns) left = m->cfg.ramp_ns;
    return m->cfg.ramp_start +
           (1.0 - m->cfg.ramp_start) * ((double)(m->cfg.ramp_ns - left) / (double)m->cfg.ramp_ns);
}

static uint64_t ramp_increment(const struct ref_model *m, uint64_t now) {
    return (uint64_t)(ramp_share_at(m, now) * 4294967296.0);
}

/* Where failing sources count (min_failing_sources not 1), a caller's
 * bit in the maps of failed probes: splitmix64(source) mod 48. */
static bool callers_count(const struct ref_model *m) {
    return sources_bits_needed(m->cfg.min_failing_sources) != 0;
}

static void note_failed_caller(struct ref_model *m, uint64_t source) {
    if (source != 0 && callers_count(m))
        m->probe_src |= UINT64_C(1) << (ref_splitmix64(source) % 48u);
}

/* In HALF_OPEN, a probe past its deadline fails the recovery: the failure
 * of the caller it was admitted for, as every probe past its deadline now.
 * The first such timeout of a trip streak whose probes all named their
 * caller (where callers count) reopens at the level it had; any other
 * raises it. @return true if that moved the state. */
static bool apply_probe_timeout(struct ref_model *m, uint64_t now) {
    if (m->state != BREAKER_HALF_OPEN) return false;
    /* The timeout takes effect at the earliest passed deadline, whenever it
     * is noticed: the transition (and the next wait) is dated then. */
    uint64_t at = UINT64_MAX;
    bool named = callers_count(m);
    for (uint32_t i = 0; i < m->nprobes; i++) {
        if (now < m->probes[i].deadline) continue;
        if (m->probes[i].deadline < at) at = m->probes[i].deadline;
        note_failed_caller(m, m->probes[i].source);
        if (m->probes[i].source == 0) named = false;
    }
    if (at == UINT64_MAX) return false;
    m->counters.probes_timed_out++;
    m->counters.probes_failed++;
    bool keep = named && !m->timeout_spared;
    if (keep) m->timeout_spared = true;
    transition(m, at, BREAKER_OPEN, BREAKER_REASON_PROBE_TIMEOUT, keep ? m->k : m->k + 1, NULL);
    return true;
}

/* A probe takes the lowest free slot (the transition's own probe, slot 0). */
static uint32_t lowest_free_slot(const struct ref_model *m) {
    for (uint32_t slot = 0;; slot++) {
        bool used = false;
        for (uint32_t i = 0; i < m->nprobes && !used; i++)
            used = m->probes[i].slot == slot;
        if (!used) return slot;
    }
}

/* The deadline (us since the epoch) the next probe would claim, or 0 when its
 * slot's claims outran the microseconds: a step of more than 1000 us past its
 * own deadline is refused, never taken. */
static uint64_t next_claim_us(const struct ref_model *m, uint64_t now, uint32_t *slot) {
    *slot = lowest_free_slot(m);
    uint64_t due = (deadline_after(m, now, m->cfg.probe_timeout_ns) - m->epoch) / 1000;
    uint64_t us = due <= m->slot_last_us[*slot] ? m->slot_last_us[*slot] + 1 : due;
    return us > due + 1000 ? 0 : us;
}

static void admit_probe(struct ref_model *m, uint64_t now, struct ref_permit *p) {
    m->counters.probes_admitted++;
    uint32_t slot;
    uint64_t us = next_claim_us(m, now, &slot);
    m->slot_last_us[slot] = us;
    m->probes[m->nprobes++] = (struct ref_probe){p->id, m->epoch + us * 1000, slot, p->source};
    p->probe = true;
}

/* ---- The call path --------------------------------------------------------- */

/* Whether the caller of `source` is refused a probe now: its probe failed in
 * the half-open this OPEN or HALF_OPEN follows, and the stretch is not over. */
static bool caller_refused(const struct ref_model *m, uint64_t now, uint64_t source) {
    return source != 0 && callers_count(m) && now < m->refused_until &&
           (m->refused_callers >> (ref_splitmix64(source) % 48u) & 1) != 0;
}

/* Whether the named caller of `source` must still wait for its own point
 * after the wait (OPEN past it, or HALF_OPEN), where failing sources count:
 * the end of the wait plus a draw keyed by the seed, the OPEN's generation
 * and the source, uniform over a quarter of the OPEN's wait before jitter. */
static bool caller_waits_turn(const struct ref_model *m, uint64_t now, uint64_t source) {
    if (source == 0 || !callers_count(m)) return false;
    bool open = m->state == BREAKER_OPEN;
    uint64_t gen = open ? m->generation : m->turns_gen;
    uint64_t spread = m->turns_spread;
    uint64_t key = ref_splitmix64(m->cfg.seed ^ gen * UINT64_C(0x9e3779b97f4a7c15)) ^
                   ref_splitmix64(source ^ UINT64_C(0x9e3779b97f4a7c15));
    double u = (double)(ref_splitmix64(key) >> 11) * 0x1p-53;
    uint64_t point = (open ? m->open_until : m->turns_from) + (uint64_t)((double)spread * u);
    return now < point;
}

static int acquire_locked(struct ref_model *m, uint64_t now, struct ref_permit *p,
                          uint64_t source) {
    memset(p, 0, sizeof(*p));
    switch (m->state) {
    case BREAKER_CLOSED:
        if (m->ramp_until != 0) {
            if (now >= m->ramp_until) {
                m->ramp_until = 0; /* the recovery is complete */
                m->k = 0;
            } else {
                uint64_t inc = ramp_increment(m, now);
                uint64_t old = m->ramp_credit;
                m->ramp_credit += inc;
                if (((old + inc) >> 32) == (old >> 32)) {
                    m->counters.rejected_ramp++;
                    return BREAKER_REJECTED_RAMP;
                }
            }
        }
        break;
    case BREAKER_FORCED_CLOSED:
        break;
    case BREAKER_FORCED_OPEN:
        m->counters.rejected_forced++;
        return BREAKER_REJECTED_OPEN;
    case BREAKER_OPEN:
        if (now < m->open_until || caller_refused(m, now, source) ||
            caller_waits_turn(m, now, source)) {
            m->counters.rejected_open++;
            return BREAKER_REJECTED_OPEN;
        }
        transition(m, now, BREAKER_HALF_OPEN, BREAKER_REASON_WAIT_ELAPSED, m->k, NULL);
        break;
    case BREAKER_HALF_OPEN:
        if (apply_probe_timeout(m, now)) return acquire_locked(m, now, p, source);
        uint32_t unused;
        if (m->nprobes >= m->cfg.half_open_max_probes ||
            m->probe_successes >= m->cfg.half_open_successes || caller_refused(m, now, source) ||
            caller_waits_turn(m, now, source) || next_claim_us(m, now, &unused) == 0) {
            m->counters.rejected_half_open++;
            return BREAKER_REJECTED_HALF_OPEN;
        }
        break;
    }
    p->admitted = true;
    p->source = source;
    p->id = m->next_permit_id++;
    p->generation = m->generation;
    p->admitted_at = now;
    m->counters.admitted++;
    if (m->state == BREAKER_HALF_OPEN) admit_probe(m, now, p);
    return BREAKER_OK;
}

int ref_model_acquire_from(struct ref_model *m, uint64_t now, struct ref_permit *p,
                           uint64_t source) {
    pthread_mutex_lock(&m->mu);
    int rc = acquire_locked(m, now, p, source);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ref_model_acquire(struct ref_model *m, uint64_t now, struct ref_permit *p) {
    return ref_model_acquire_from(m, now, p, 0);
}

static void maybe_trip(struct ref_model *m, uint64_t now) {
    struct ref_view v;
    window_view(m, now, &v);
    const breaker_config *c = &m->cfg;
    /* During a ramp (until the first acquire after its end clears it) the
     * ramp's share of min_calls suffices, and a trip is a failed recovery. */
    uint32_t k = m->ramp_until != 0 ? m->k + 1 : 0;
    uint32_t min_calls = c->min_calls;
    if (m->ramp_until != 0) {
        double share = now < m->ramp_until ? ramp_share_at(m, now) : 1.0;
        double scaled = ceil((double)min_calls * share);
        min_calls = scaled < 1.0 ? 1u : (uint32_t)scaled;
    }
    if (c->trip == BREAKER_TRIP_CONSECUTIVE) {
        if (v.consecutive >= c->failure_threshold && sources_enough(c, m->src_bits))
            transition(m, now, BREAKER_OPEN, BREAKER_REASON_CONSECUTIVE_FAILURES, k, &v);
        return;
    }
    if (v.calls < min_calls) return;
    if ((double)v.failures >= c->failure_rate * (double)v.calls && sources_enough(c, m->src_bits))
        transition(m, now, BREAKER_OPEN, BREAKER_REASON_FAILURE_RATE, k, &v);
    else if (c->slow_call_rate > 0 && (double)v.slow >= c->slow_call_rate * (double)v.calls)
        transition(m, now, BREAKER_OPEN, BREAKER_REASON_SLOW_CALL_RATE, k, &v);
}

/* Count a current-generation completion by its (mapped) outcome. @return
 * false for IGNORED, which counts and does nothing else. */
static bool count_outcome(struct ref_model *m, int outcome, bool slow) {
    if (outcome == BREAKER_IGNORED) {
        m->counters.ignored++;
        return false;
    }
    if (outcome == BREAKER_FAILURE)
        m->counters.failures++;
    else
        m->counters.successes++;
    m->counters.slow += slow;
    return true;
}

static void complete_closed(struct ref_model *m, uint64_t now, int outcome, bool slow,
                            uint64_t source) {
    if (!count_outcome(m, outcome, slow)) return;
    bool failure = outcome == BREAKER_FAILURE;
    sources_record(m, now, failure, source);
    window_record(m, now, failure, slow);
    if ((failure || slow) && m->state == BREAKER_CLOSED) maybe_trip(m, now);
}

static void free_probe_slot(struct ref_model *m, uint64_t permit_id) {
    for (uint32_t i = 0; i < m->nprobes; i++) {
        if (m->probes[i].permit_id == permit_id) {
            m->probes[i] = m->probes[--m->nprobes];
            return;
        }
    }
}

/* Recovery closes on all its evidence: once half_open_successes probes have
 * succeeded no more are admitted, and the breaker closes when the last probe
 * in flight settles without failing (any failure reopens it first). */
static void close_if_settled(struct ref_model *m, uint64_t now) {
    if (m->state == BREAKER_HALF_OPEN && m->probe_successes >= m->cfg.half_open_successes &&
        m->nprobes == 0) {
        bool ramp = m->cfg.ramp_ns != 0;
        transition(m, now, BREAKER_CLOSED, BREAKER_REASON_PROBES_SUCCEEDED, ramp ? m->k : 0, NULL);
        if (ramp) m->ramp_until = deadline_after(m, now, m->cfg.ramp_ns);
    }
}

static void complete_probe(struct ref_model *m, uint64_t now, const struct ref_permit *p,
                           int outcome, bool slow, uint64_t source) {
    free_probe_slot(m, p->id);
    if (!count_outcome(m, outcome, slow)) {
        close_if_settled(m, now); /* an ignored probe freed its slot */
        return;
    }
    bool failure = outcome == BREAKER_FAILURE;
    if (failure || (slow && m->cfg.slow_call_rate > 0)) {
        /* Every failed probe reopens; its caller (the completion's, else
         * the admission's) waits out the next half-open's first stretch. */
        m->counters.probes_failed++;
        note_failed_caller(m, source != 0 ? source : p->source);
        transition(m, now, BREAKER_OPEN,
                   failure ? BREAKER_REASON_PROBE_FAILED : BREAKER_REASON_PROBE_SLOW, m->k + 1,
                   NULL);
        return;
    }
    m->counters.probes_succeeded++;
    if (m->probe_successes < 4095) m->probe_successes++; /* the library's field saturates */
    close_if_settled(m, now);
}

static int complete_locked(struct ref_model *m, uint64_t now, struct ref_permit *p, int outcome,
                           uint64_t source) {
    if (!p->admitted || outcome < BREAKER_SUCCESS || outcome > BREAKER_CANCELLED)
        return BREAKER_EINVAL;
    if (p->settled) {
        m->counters.duplicates++;
        return BREAKER_ALREADY_SETTLED;
    }
    p->settled = true;
    if (outcome == BREAKER_CANCELLED) {
        m->counters.cancelled++;
        outcome = (int)m->cfg.cancelled_as;
    }
    bool slow = m->cfg.slow_call_ns != 0 && outcome != BREAKER_IGNORED &&
                now - p->admitted_at > m->cfg.slow_call_ns;
    if (p->generation == m->generation && apply_probe_timeout(m, now)) {
        /* The hung-probe rule fired first: this permit's generation is over. */
    }
    if (p->generation != m->generation) {
        m->counters.stale++;
        return BREAKER_STALE;
    }
    if (p->probe)
        complete_probe(m, now, p, outcome, slow, source);
    else
        complete_closed(m, now, outcome, slow, source);
    return BREAKER_OK;
}

int ref_model_complete_from(struct ref_model *m, uint64_t now, struct ref_permit *p, int outcome,
                            uint64_t source) {
    pthread_mutex_lock(&m->mu);
    int rc = complete_locked(m, now, p, outcome, source);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ref_model_complete(struct ref_model *m, uint64_t now, struct ref_permit *p, int outcome) {
    return ref_model_complete_from(m, now, p, outcome, 0);
}

/* ---- Manual control ----------------------------------------------------------- */

/* force_open / force_closed: nothing if already there, else a transition. */
static int force(struct ref_model *m, uint64_t now, enum breaker_state to,
                 enum breaker_reason reason) {
    pthread_mutex_lock(&m->mu);
    if (m->state != to) transition(m, now, to, reason, 0, NULL);
    pthread_mutex_unlock(&m->mu);
    return BREAKER_OK;
}

int ref_model_force_open(struct ref_model *m, uint64_t now) {
    return force(m, now, BREAKER_FORCED_OPEN, BREAKER_REASON_FORCED_OPEN);
}

int ref_model_force_closed(struct ref_model *m, uint64_t now) {
    return force(m, now, BREAKER_FORCED_CLOSED, BREAKER_REASON_FORCED_CLOSED);
}

int ref_model_reset(struct ref_model *m, uint64_t now) {
    pthread_mutex_lock(&m->mu);
    transition(m, now, BREAKER_CLOSED, BREAKER_REASON_RESET, 0, NULL);
    pthread_mutex_unlock(&m->mu);
    return BREAKER_OK;
}

/* ---- Introspection --------------------------------------------------------------- */

enum breaker_state ref_model_get_state(struct ref_model *m, uint64_t now) {
    pthread_mutex_lock(&m->mu);
    apply_probe_timeout(m, now);
    enum breaker_state s = m->state;
    pthread_mutex_unlock(&m->mu);
    return s;
}

uint64_t ref_model_retry_after(struct ref_model *m, uint64_t now) {
    pthread_mutex_lock(&m->mu);
    apply_probe_timeout(m, now);
    uint64_t r = 0;
    switch (m->state) {
    case BREAKER_CLOSED:
        if (m->ramp_until != 0 && now < m->ramp_until) {
            uint64_t inc = ramp_increment(m, now);
            if (((m->ramp_credit + inc) >> 32) == (m->ramp_credit >> 32)) r = m->ramp_until - now;
        }
        break;
    case BREAKER_FORCED_CLOSED:
        break;
    case BREAKER_FORCED_OPEN:
        r = UINT64_MAX;
        break;
    case BREAKER_OPEN:
        r = now < m->open_until ? m->open_until - now : 0;
        break;
    case BREAKER_HALF_OPEN:
        if (m->nprobes < m->cfg.half_open_max_probes &&
            m->probe_successes < m->cfg.half_open_successes) {
            /* A free slot: 0, unless its claims outran the microseconds. */
            uint32_t slot = lowest_free_slot(m);
            uint64_t due = (deadline_after(m, now, m->cfg.probe_timeout_ns) - m->epoch) / 1000;
            uint64_t us = due <= m->slot_last_us[slot] ? m->slot_last_us[slot] + 1 : due;
            if (us - due > 1000) r = (us - due - 1000) * 1000;
        } else {
            uint64_t first = UINT64_MAX;
            for (uint32_t i = 0; i < m->nprobes; i++)
                if (m->probes[i].deadline < first) first = m->probes[i].deadline;
            r = first - now; /* > 0: apply_probe_timeout() left no due probe */
        }
        break;
    }
    pthread_mutex_unlock(&m->mu);
    return r;
}

uint64_t ref_model_generation(struct ref_model *m) {
    pthread_mutex_lock(&m->mu);
    uint64_t g = m->generation;
    pthread_mutex_unlock(&m->mu);
    return g;
}

void ref_model_stats(struct ref_model *m, uint64_t now, breaker_stats *out) {
    pthread_mutex_lock(&m->mu);
    apply_probe_timeout(m, now); /* a snapshot shows the state as of now */
    *out = m->counters;
    out->state = m->state;
    out->generation = m->generation;
    out->state_since_ns = m->since;
    memcpy(out->time_in_state_ns, m->time_in_state, sizeof(out->time_in_state_ns));
    if (now > m->since) out->time_in_state_ns[m->state] += now - m->since;
    out->failed_recoveries = m->k;
    out->probes_in_flight = m->state == BREAKER_HALF_OPEN ? m->nprobes : 0;
    out->probe_successes = m->state == BREAKER_HALF_OPEN ? m->probe_successes : 0;
    out->open_until_ns = m->state == BREAKER_OPEN ? m->open_until : 0;
    out->ramp_share = m->state == BREAKER_CLOSED || m->state == BREAKER_FORCED_CLOSED;
    if (m->ramp_until != 0 && now < m->ramp_until) {
        out->ramp_until_ns = m->ramp_until;
        out->ramp_share = ramp_share_at(m, now);
    }
    struct ref_view v;
    window_view(m, now, &v);
    out->consecutive_failures = v.consecutive;
    out->window_calls = v.calls;
    out->window_failures = v.failures;
    out->window_slow = v.slow;
    out->window_failure_rate = v.calls ? (double)v.failures / (double)v.calls : 0.0;
    out->window_slow_rate = v.calls ? (double)v.slow / (double)v.calls : 0.0;
    pthread_mutex_unlock(&m->mu);
}

size_t ref_model_take_events(struct ref_model *m, breaker_event *out, size_t cap) {
    pthread_mutex_lock(&m->mu);
    size_t n = m->nevents < cap ? m->nevents : cap;
    memcpy(out, m->events, n * sizeof(*out));
    memmove(m->events, m->events + n, (m->nevents - n) * sizeof(*out));
    m->nevents -= n;
    pthread_mutex_unlock(&m->mu);
    return n;
}
