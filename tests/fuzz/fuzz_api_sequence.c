/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api_sequence.c - one breaker on a fake clock, driven by a program the
 * fuzzer writes, with the accounting checked after every operation.
 *
 * Input: a header of 20 bytes chooses the configuration (trip policy, its
 * thresholds, slow calls, backoff, jitter, probes), then a varint starts the
 * clock, then each operation is an opcode byte and its operands (see `enum
 * op`). Reads past the end give zeros, so every prefix is a program.
 *
 * The harness keeps its own ledger of what it did (every admission, every
 * completion and its answer) and after every operation checks the breaker
 * against it and against the manual (include/breaker.h):
 * - admitted == successes + failures + ignored + stale + unsettled, where
 *   completing two copies of one closed permit counts twice (documented);
 *   each of those counters, cancelled, slow, duplicates, the rejections and
 *   probes_admitted equal the ledger's count exactly;
 * - probes_in_flight is the ledger's count of this half-open's unsettled
 *   probes, and at most half_open_max_probes;
 * - generation == 1 + transitions, never decreases; the events arrive once
 *   per transition, chained (from == the previous to), at the clock's time,
 *   with reasons that fit their from/to and open waits within the backoff
 *   range; the state is in range; forced states stay until an operator
 *   changes them;
 * - the time in each state adds up to the time since create;
 * - answers fit the state: CLOSED admits, FORCED_OPEN and a waiting OPEN
 *   refuse, a rejected or never-admitted permit is EINVAL, an out-of-range
 *   outcome is EINVAL and leaves the permit unsettled, a permit object
 *   completed twice is ALREADY_SETTLED, an earlier generation's is STALE;
 *   retry_after matches the state.
 */
#include "fuzz_util.h"

#include <breaker.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MS        UINT64_C(1000000)
#define SEC       (1000 * MS)
#define SLOTS     16
#define MAX_ADMIT 4096
#define MAX_OPS   4096
/* Tagged times in the core count microseconds in 48 bits (8.9 years); stay
 * well inside, with room for a one-year wait. */
#define MAX_ELAPSED (UINT64_C(6) * 365 * 24 * 3600 * SEC)

enum op {
    OP_ACQUIRE,      /* slot */
    OP_COMPLETE,     /* slot, outcome byte */
    OP_ADVANCE,      /* varint ns */
    OP_ADVANCE_MS,   /* byte: ms */
    OP_FORCE_OPEN,   /* - */
    OP_FORCE_CLOSED, /* - */
    OP_RESET,        /* - */
    OP_GET_STATE,    /* - */
    OP_RETRY_AFTER,  /* - */
    OP_COPY,         /* from slot, to slot */
    OP_GARBAGE,      /* slot, 48 bytes (never marked admitted) */
    OP_ZERO,         /* slot: a zeroed permit */
    OP_BURST,        /* n: acquire into n slots, complete with outcome bytes */
    OP_GENERATION,   /* - */
    OP_COUNT
};

enum held_kind { HELD_NONE, HELD_ADMITTED, HELD_REJECTED, HELD_GARBAGE };

struct held {
    breaker_permit permit;
    enum held_kind kind;
    bool object_settled; /* this object was completed (OK, STALE or ALREADY_SETTLED) */
    uint32_t admission;  /* index into the ledger's admissions */
};

struct admission {
    uint64_t generation;
    uint64_t at;
    bool probe;
    uint32_t settles; /* completions of any copy answered OK or STALE */
};

struct ledger {
    uint64_t admitted, successes, failures, ignored, stale, cancelled, slow, duplicates;
    uint64_t rejected_open_any, rejected_forced, rejected_half_open, probes_admitted;
    uint64_t rejected_ramp;
};

struct run {
    uint64_t now;
    uint64_t created_at;
    breaker *b;
    breaker_config cfg; /* effective */
    struct held slots[SLOTS];
    struct admission *adm;
    uint32_t nadm;
    struct ledger want;
    breaker_stats last; /* after the previous operation */
    /* events */
    uint64_t events;
    enum breaker_state last_to;
    uint64_t last_event_gen;
    uint64_t last_event_time; /* time_ns of the last event, 0 before any */
    bool manual_op;           /* the current operation is force/reset */
    /* A generation in which two copies of one probe were both accepted: the
     * second freed the slot of another probe admitted since with the same
     * deadline word, whose own completion may then answer ALREADY_SETTLED. */
    uint64_t probe_copy_gen;
};

static uint64_t clock_read(void *ctx) { return ((const struct run *)ctx)->now; }

static bool reason_fits(const breaker_event *ev) {
    switch (ev->reason) {
    case BREAKER_REASON_CONSECUTIVE_FAILURES:
    case BREAKER_REASON_FAILURE_RATE:
    case BREAKER_REASON_SLOW_CALL_RATE:
        return ev->from == BREAKER_CLOSED && ev->to == BREAKER_OPEN;
    case BREAKER_REASON_WAIT_ELAPSED:
        return ev->from == BREAKER_OPEN && ev->to == BREAKER_HALF_OPEN;
    case BREAKER_REASON_PROBE_FAILED:
    case BREAKER_REASON_PROBE_TIMEOUT:
    case BREAKER_REASON_PROBE_SLOW:
        return ev->from == BREAKER_HALF_OPEN && ev->to == BREAKER_OPEN;
    case BREAKER_REASON_PROBES_SUCCEEDED:
        return ev->from == BREAKER_HALF_OPEN && ev->to == BREAKER_CLOSED;
    case BREAKER_REASON_FORCED_OPEN:
        return ev->to == BREAKER_FORCED_OPEN;
    case BREAKER_REASON_FORCED_CLOSED:
        return ev->to == BREAKER_FORCED_CLOSED;
    case BREAKER_REASON_RESET:
        return ev->to == BREAKER_CLOSED;
    case BREAKER_REASON_OUTSIDE_TRIP:
    case BREAKER_REASON_OUTSIDE_CLOSE:
        return false; /* only a store makes them; this harness has none */
    case BREAKER_REASON_SERVER_DIRECTED:
    case BREAKER_REASON_OPERATOR:
    case BREAKER_REASON_RECONFIGURED:
    case BREAKER_REASON_FORCE_EXPIRED:
        return false; /* breaker_open_for(), which this harness does not call */
    }
    return false;
}

static void on_event(void *ctx, breaker *b, const breaker_event *ev) {
    struct run *r = ctx;
    FUZZ_CHECK(b == r->b, "event for another breaker");
    FUZZ_CHECK(ev->from == r->last_to, "event from %s, but the last event went to %s",
               breaker_state_name(ev->from), breaker_state_name(r->last_to));
    FUZZ_CHECK(ev->generation == r->last_event_gen + 1, "event generation %llu after %llu",
               (unsigned long long)ev->generation, (unsigned long long)r->last_event_gen);
    /* A probe timeout is dated at the probe's deadline, which may lie in the
     * past when it is noticed late; every other transition happens now. */
    if (ev->reason == BREAKER_REASON_PROBE_TIMEOUT)
        FUZZ_CHECK(ev->time_ns <= r->now && ev->time_ns >= r->last_event_time,
                   "timeout dated %llu, clock %llu, previous event %llu",
                   (unsigned long long)ev->time_ns, (unsigned long long)r->now,
                   (unsigned long long)r->last_event_time);
    else
        FUZZ_CHECK(ev->time_ns == r->now, "event at %llu, clock %llu",
                   (unsigned long long)ev->time_ns, (unsigned long long)r->now);
    r->last_event_time = ev->time_ns;
    FUZZ_CHECK(reason_fits(ev), "reason %s for %s -> %s", breaker_reason_name(ev->reason),
               breaker_state_name(ev->from), breaker_state_name(ev->to));
    bool manual = ev->reason == BREAKER_REASON_FORCED_OPEN ||
                  ev->reason == BREAKER_REASON_FORCED_CLOSED || ev->reason == BREAKER_REASON_RESET;
    FUZZ_CHECK(manual == r->manual_op, "%s transition during a%s operation",
               breaker_reason_name(ev->reason), r->manual_op ? " manual" : "n automatic");
    FUZZ_CHECK(ev->from != BREAKER_FORCED_OPEN && ev->from != BREAKER_FORCED_CLOSED ? 1 : manual,
               "left %s by %s", breaker_state_name(ev->from), breaker_reason_name(ev->reason));
    if (ev->to == BREAKER_OPEN) {
        double lo = (double)r->cfg.open_ns, hi = (double)r->cfg.open_max_ns;
        if (lo > hi) lo = hi;
        hi += hi * r->cfg.open_jitter;
        FUZZ_CHECK((double)ev->open_ns >= lo - 1 && (double)ev->open_ns <= hi + 1,
                   "open wait %llu outside [%g, %g]", (unsigned long long)ev->open_ns, lo, hi);
        if (ev->evidence.failed_recoveries == 0 && r->cfg.open_jitter == 0.0)
            FUZZ_CHECK(ev->open_ns == r->cfg.open_ns, "first wait %llu, open_ns %llu",
                       (unsigned long long)ev->open_ns, (unsigned long long)r->cfg.open_ns);
    }
    /* Closing into a ramp keeps k until the ramp completes. */
    if (ev->to == BREAKER_CLOSED &&
        !(ev->reason == BREAKER_REASON_PROBES_SUCCEEDED && r->cfg.ramp_ns != 0))
        FUZZ_CHECK(ev->evidence.failed_recoveries == 0, "closed with k = %u",
                   ev->evidence.failed_recoveries);
    r->events++;
    r->last_to = ev->to;
    r->last_event_gen = ev->generation;
}

/* ---- Configuration from the header ----------------------------------------- */

static void config_from(struct fuzz_reader *in, breaker_config *c) {
    breaker_config_init(c);
    uint8_t flags = fuzz_byte(in);
    c->trip = (enum breaker_trip)(flags % 3);
    c->failure_threshold = 1 + fuzz_byte(in) % 8;
    c->window_size = 1 + fuzz_byte(in) % 24;
    c->min_calls = 1 + fuzz_byte(in) % 12;
    /* A count window never trips on more calls than it holds: refused. */
    if (c->trip == BREAKER_TRIP_COUNT_WINDOW && c->min_calls > c->window_size)
        c->min_calls = c->window_size;
    c->failure_rate = (1 + fuzz_byte(in) % 100) / 100.0;
    c->window_buckets = 1 + fuzz_byte(in) % 12;
    c->window_ns = c->window_buckets * MS * (1 + fuzz_byte(in) % 200);
    if (flags & 4) c->slow_call_ns = MS * (1 + fuzz_byte(in));
    if ((flags & 8) && c->slow_call_ns != 0 && c->trip != BREAKER_TRIP_CONSECUTIVE)
        c->slow_call_rate = (1 + fuzz_byte(in) % 100) / 100.0;
    c->open_ns = 10 * MS * (1 + fuzz_byte(in));
    c->open_backoff = 1.0 + (fuzz_byte(in) % 40) / 10.0;
    c->open_max_ns = c->open_ns * (1 + fuzz_byte(in) % 20);
    if (flags & 16) c->open_jitter = (fuzz_byte(in) % 101) / 100.0;
    c->half_open_max_probes = 1 + fuzz_byte(in) % 5;
    c->half_open_successes = 1 + fuzz_byte(in) % 5;
    c->probe_timeout_ns = 10 * MS * (1 + fuzz_byte(in));
    c->cancelled_as = (flags & 32) ? BREAKER_FAILURE : BREAKER_IGNORED;
    c->seed = 1 + fuzz_byte(in);
    if (flags & 128) { /* slow start after recovery, and failing-source diversity */
        c->ramp_ns = MS * (1 + fuzz_byte(in));
        c->ramp_start = (1 + fuzz_byte(in) % 100) / 100.0;
        c->min_failing_sources = fuzz_byte(in) % 5;
    }
    if (flags & 64) { /* one huge value, to test the edges of the ranges */
        uint8_t which = fuzz_byte(in) % 4;
        if (which == 0) c->open_max_ns = 365 * 24 * 3600 * SEC;
        if (which == 1) c->probe_timeout_ns = 365 * 24 * 3600 * SEC;
        if (which == 2) c->half_open_max_probes = 4095;
        if (which == 3) c->open_backoff = 100.0;
    }
}

/* ---- The checks after each operation ------------------------------------------ */

static uint64_t unsettled(const struct run *r, uint64_t *extra) {
    uint64_t n = 0;
    *extra = 0;
    for (uint32_t i = 0; i < r->nadm; i++) {
        if (r->adm[i].settles == 0) n++;
        if (r->adm[i].settles > 1) *extra += r->adm[i].settles - 1;
    }
    return n;
}

/* This half-open's probes not settled yet, or UINT32_MAX when that is not
 * known: once two copies of one probe were both accepted (a caller error the
 * manual says is only "usually" detected: the second copy's slot had been
 * claimed again by a probe with the same deadline word), the second one freed
 * that other probe's slot. */
static uint32_t probes_unsettled(const struct run *r, uint64_t gen) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nadm; i++) {
        const struct admission *a = &r->adm[i];
        if (!a->probe || a->generation != gen) continue;
        if (a->settles > 1) return UINT32_MAX;
        n += a->settles == 0;
    }
    return n;
}

#define EQ(field)                                                              \
    FUZZ_CHECK(s.field == r->want.field, #field ": breaker %llu, ledger %llu", \
               (unsigned long long)s.field, (unsigned long long)r->want.field)

static void check(struct run *r, const breaker_stats *prev, int op) {
    breaker_stats s;
    FUZZ_CHECK(breaker_stats_get(r->b, &s) == BREAKER_OK, "stats");
    FUZZ_CHECK((unsigned)s.state <= BREAKER_FORCED_CLOSED, "state %d", (int)s.state);
    FUZZ_CHECK(s.generation >= prev->generation, "generation went back %llu -> %llu",
               (unsigned long long)prev->generation, (unsigned long long)s.generation);
    FUZZ_CHECK(s.generation == 1 + s.transitions, "generation %llu, transitions %llu",
               (unsigned long long)s.generation, (unsigned long long)s.transitions);
    FUZZ_CHECK(s.transitions == r->events, "transitions %llu, events %llu",
               (unsigned long long)s.transitions, (unsigned long long)r->events);
    FUZZ_CHECK(s.state == r->last_to, "state %s, last event to %s", breaker_state_name(s.state),
               breaker_state_name(r->last_to));
    FUZZ_CHECK(breaker_generation(r->b) == s.generation, "breaker_generation differs from stats");
    bool manual = op == OP_FORCE_OPEN || op == OP_FORCE_CLOSED || op == OP_RESET;
    if (!manual && (prev->state == BREAKER_FORCED_OPEN || prev->state == BREAKER_FORCED_CLOSED))
        FUZZ_CHECK(s.state == prev->state && s.generation == prev->generation,
                   "left %s without an operator", breaker_state_name(prev->state));

    EQ(admitted);
    EQ(successes);
    EQ(failures);
    EQ(ignored);
    EQ(stale);
    EQ(cancelled);
    EQ(slow);
    EQ(duplicates);
    EQ(rejected_half_open);
    EQ(rejected_forced);
    EQ(rejected_ramp);
    EQ(probes_admitted);
    FUZZ_CHECK(s.rejected_open + s.rejected_forced == r->want.rejected_open_any,
               "rejected_open %llu + rejected_forced %llu, ledger %llu",
               (unsigned long long)s.rejected_open, (unsigned long long)s.rejected_forced,
               (unsigned long long)r->want.rejected_open_any);
    uint64_t extra;
    uint64_t open = unsettled(r, &extra);
    FUZZ_CHECK(s.admitted + extra == s.successes + s.failures + s.ignored + s.stale + open,
               "admitted %llu (+%llu copies) != successes %llu + failures %llu + ignored %llu + "
               "stale %llu + unsettled %llu",
               (unsigned long long)s.admitted, (unsigned long long)extra,
               (unsigned long long)s.successes, (unsigned long long)s.failures,
               (unsigned long long)s.ignored, (unsigned long long)s.stale,
               (unsigned long long)open);

    FUZZ_CHECK(s.probes_in_flight <= r->cfg.half_open_max_probes, "%u probes in flight, max %u",
               s.probes_in_flight, r->cfg.half_open_max_probes);
    if (s.state == BREAKER_HALF_OPEN) {
        uint32_t mine = probes_unsettled(r, s.generation);
        FUZZ_CHECK(mine == UINT32_MAX || s.probes_in_flight == mine,
                   "probes_in_flight %u, ledger %u", s.probes_in_flight, mine);
    } else {
        FUZZ_CHECK(s.probes_in_flight == 0, "%u probes in flight in %s", s.probes_in_flight,
                   breaker_state_name(s.state));
    }
    FUZZ_CHECK(s.probes_succeeded + s.probes_failed <= s.probes_admitted,
               "probes: %llu succeeded + %llu failed > %llu admitted",
               (unsigned long long)s.probes_succeeded, (unsigned long long)s.probes_failed,
               (unsigned long long)s.probes_admitted);
    FUZZ_CHECK(s.probes_timed_out <= s.probes_failed, "timed out > failed");
    FUZZ_CHECK(s.window_failures <= s.window_calls && s.window_slow <= s.window_calls,
               "window %llu calls, %llu failures, %llu slow", (unsigned long long)s.window_calls,
               (unsigned long long)s.window_failures, (unsigned long long)s.window_slow);
    if (r->cfg.trip == BREAKER_TRIP_COUNT_WINDOW)
        FUZZ_CHECK(s.window_calls <= r->cfg.window_size, "count window holds %llu > %u",
                   (unsigned long long)s.window_calls, r->cfg.window_size);
    /* (With failing-source diversity a run may outgrow the threshold while
     * its failures come from too few callers.) */
    if (r->cfg.trip == BREAKER_TRIP_CONSECUTIVE && s.state == BREAKER_CLOSED &&
        r->cfg.min_failing_sources <= 1)
        FUZZ_CHECK(s.consecutive_failures < r->cfg.failure_threshold,
                   "closed with %u consecutive failures, threshold %u", s.consecutive_failures,
                   r->cfg.failure_threshold);
    /* (A ramp after recovery keeps k until the first call after its end.) */
    if ((s.state == BREAKER_CLOSED && r->cfg.ramp_ns == 0) || s.state == BREAKER_FORCED_CLOSED)
        FUZZ_CHECK(s.failed_recoveries == 0, "%s with k = %u", breaker_state_name(s.state),
                   s.failed_recoveries);
    if (s.state == BREAKER_OPEN) FUZZ_CHECK(s.open_until_ns != 0, "open without a deadline");

    uint64_t total = 0;
    for (int i = 0; i < 5; i++)
        total += s.time_in_state_ns[i];
    FUZZ_CHECK(total == r->now - r->created_at, "time in states %llu, elapsed %llu",
               (unsigned long long)total, (unsigned long long)(r->now - r->created_at));
    FUZZ_CHECK(s.state_since_ns <= r->now, "state since the future");
    r->last = s;
}

/* ---- Operations -------------------------------------------------------------------*/

static void do_acquire(struct run *r, unsigned slot) {
    struct held *h = &r->slots[slot % SLOTS];
    if (r->nadm == MAX_ADMIT) return;
    /* A fresh snapshot (no side effects): a burst acquires several times
     * within one operation. */
    breaker_stats now;
    (void)breaker_stats_get(r->b, &now);
    enum breaker_state before = now.state;
    uint64_t gen_before = now.generation;
    int rc = breaker_acquire(r->b, &h->permit);
    memset((char *)h + sizeof(h->permit), 0, sizeof(*h) - sizeof(h->permit));
    switch (before) {
    case BREAKER_CLOSED:
        /* Only a ramp after recovery refuses in CLOSED. */
        FUZZ_CHECK(rc == BREAKER_OK || (rc == BREAKER_REJECTED_RAMP && now.ramp_until_ns != 0),
                   "closed refused a call: %d", rc);
        break;
    case BREAKER_FORCED_CLOSED:
        FUZZ_CHECK(rc == BREAKER_OK, "%s refused a call: %d", breaker_state_name(before), rc);
        break;
    case BREAKER_FORCED_OPEN:
        FUZZ_CHECK(rc == BREAKER_REJECTED_OPEN, "forced open answered %d", rc);
        break;
    case BREAKER_OPEN:
        if (r->now < now.open_until_ns)
            FUZZ_CHECK(rc == BREAKER_REJECTED_OPEN, "open before its deadline answered %d", rc);
        else
            FUZZ_CHECK(rc == BREAKER_OK, "open after its deadline refused the probe: %d", rc);
        break;
    case BREAKER_HALF_OPEN:
        FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_REJECTED_HALF_OPEN ||
                       rc == BREAKER_REJECTED_OPEN,
                   "half-open answered %d", rc);
        break;
    }
    if (rc == BREAKER_OK) {
        bool probe = before == BREAKER_OPEN || before == BREAKER_HALF_OPEN;
        r->want.admitted++;
        r->want.probes_admitted += probe;
        h->kind = HELD_ADMITTED;
        h->admission = r->nadm;
        r->adm[r->nadm++] = (struct admission){
            .generation = breaker_generation(r->b), .at = r->now, .probe = probe};
        if (!probe) FUZZ_CHECK(breaker_generation(r->b) == gen_before, "closed admission moved on");
    } else {
        h->kind = HELD_REJECTED;
        if (rc == BREAKER_REJECTED_HALF_OPEN) r->want.rejected_half_open++;
        if (rc == BREAKER_REJECTED_RAMP) r->want.rejected_ramp++;
        if (rc == BREAKER_REJECTED_OPEN) {
            r->want.rejected_open_any++;
            r->want.rejected_forced += before == BREAKER_FORCED_OPEN;
        }
    }
}

static void do_complete(struct run *r, unsigned slot, uint8_t outcome_byte) {
    struct held *h = &r->slots[slot % SLOTS];
    enum breaker_outcome outcome =
        (enum breaker_outcome)(outcome_byte < 240 ? outcome_byte % 4 : outcome_byte);
    uint64_t gen_before = breaker_generation(r->b);
    /* With sources on, the outcome byte's high bits name one of four callers
     * (or none). */
    uint64_t source = r->cfg.min_failing_sources > 1 ? (uint64_t)(outcome_byte >> 6) : 0;
    int rc = breaker_complete_from(r->b, &h->permit, outcome, source);
    if (getenv("BREAKER_FUZZ_TRACE") != NULL)
        fprintf(stderr, "  complete slot %u (kind %d, admission %u%s) outcome %d: %s\n",
                slot % SLOTS, (int)h->kind, h->admission,
                h->kind == HELD_ADMITTED && r->adm[h->admission].probe ? ", probe" : "",
                (int)outcome, breaker_status_name(rc));
    if (h->kind != HELD_ADMITTED) {
        FUZZ_CHECK(rc == BREAKER_EINVAL, "a permit never admitted (kind %d) answered %d",
                   (int)h->kind, rc);
        return;
    }
    if ((unsigned)outcome > BREAKER_CANCELLED) {
        FUZZ_CHECK(rc == BREAKER_EINVAL, "outcome %d answered %d", (int)outcome, rc);
        return;
    }
    struct admission *a = &r->adm[h->admission];
    bool was_object_settled = h->object_settled;
    if (was_object_settled) {
        FUZZ_CHECK(rc == BREAKER_ALREADY_SETTLED, "second completion of one object answered %d",
                   rc);
    } else if (a->settles == 0 && !(a->probe && a->generation == r->probe_copy_gen)) {
        FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_STALE, "first completion answered %d", rc);
    } else {
        FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_STALE || rc == BREAKER_ALREADY_SETTLED,
                   "completion of a copy answered %d", rc);
    }
    if (a->generation != gen_before && rc != BREAKER_ALREADY_SETTLED)
        FUZZ_CHECK(rc == BREAKER_STALE, "generation %llu permit in generation %llu answered %d",
                   (unsigned long long)a->generation, (unsigned long long)gen_before, rc);
    h->object_settled = true;
    if (rc == BREAKER_ALREADY_SETTLED) {
        r->want.duplicates++;
        return;
    }
    a->settles++;
    if (a->probe && a->settles == 2) r->probe_copy_gen = a->generation;
    if (outcome == BREAKER_CANCELLED) {
        r->want.cancelled++;
        outcome = r->cfg.cancelled_as;
    }
    if (rc == BREAKER_STALE) {
        r->want.stale++;
        return;
    }
    if (outcome == BREAKER_SUCCESS) r->want.successes++;
    if (outcome == BREAKER_FAILURE) r->want.failures++;
    if (outcome == BREAKER_IGNORED) r->want.ignored++;
    if (outcome != BREAKER_IGNORED && r->cfg.slow_call_ns != 0 &&
        r->now - a->at > r->cfg.slow_call_ns)
        r->want.slow++;
}

static void advance(struct run *r, uint64_t ns) {
    uint64_t room = r->created_at + MAX_ELAPSED - r->now;
    r->now += ns < room ? ns : room;
}

static void check_retry_after(struct run *r) {
    uint64_t ra = breaker_retry_after_ns(r->b);
    breaker_stats s;
    (void)breaker_stats_get(r->b, &s);
    switch (s.state) {
    case BREAKER_CLOSED:
        /* During a ramp a call may be outside the admitted share: then at
         * most until the ramp's end. */
        if (s.ramp_until_ns != 0)
            FUZZ_CHECK(ra <= s.ramp_until_ns - r->now, "retry_after %llu in a ramp ending in %llu",
                       (unsigned long long)ra, (unsigned long long)(s.ramp_until_ns - r->now));
        else
            FUZZ_CHECK(ra == 0, "retry_after %llu in closed", (unsigned long long)ra);
        break;
    case BREAKER_FORCED_CLOSED:
        FUZZ_CHECK(ra == 0, "retry_after %llu in %s", (unsigned long long)ra,
                   breaker_state_name(s.state));
        break;
    case BREAKER_FORCED_OPEN:
        FUZZ_CHECK(ra == UINT64_MAX, "retry_after %llu in forced_open", (unsigned long long)ra);
        break;
    case BREAKER_OPEN: {
        uint64_t want = s.open_until_ns > r->now ? s.open_until_ns - r->now : 0;
        FUZZ_CHECK(ra == want, "retry_after %llu in open, until %llu - now %llu",
                   (unsigned long long)ra, (unsigned long long)s.open_until_ns,
                   (unsigned long long)r->now);
        break;
    }
    case BREAKER_HALF_OPEN:
        /* A free slot admits now, unless its claims outran the clock by more
         * than 1 ms (then within that); a probe is due at most probe_timeout
         * + 1 ms (the claim step bound) + 1 us (rounding) after admission. */
        if (s.probes_in_flight < r->cfg.half_open_max_probes &&
            s.probe_successes < r->cfg.half_open_successes)
            FUZZ_CHECK(ra <= 1000000, "retry_after %llu with a free probe slot",
                       (unsigned long long)ra);
        else
            FUZZ_CHECK(ra > 0 && ra <= r->cfg.probe_timeout_ns + 1000000 + 1000,
                       "retry_after %llu with every slot taken or enough successes",
                       (unsigned long long)ra);
        break;
    }
}

static const char *const op_names[] = {
    "acquire",   "complete",    "advance", "advance_ms", "force_open", "force_closed", "reset",
    "get_state", "retry_after", "copy",    "garbage",    "zero",       "burst",        "generation",
};

/* BREAKER_FUZZ_TRACE=1 prints each operation and the state after it, to
 * read what a corpus input does. */
static void trace_op(const struct run *r, enum op op) {
    static int on = -1;
    if (on < 0) on = getenv("BREAKER_FUZZ_TRACE") != NULL;
    if (!on) return;
    fprintf(stderr, "t=%llu %-12s -> %s gen %llu admitted %llu ok %llu/%llu/%llu stale %llu\n",
            (unsigned long long)(r->now - r->created_at), op_names[op],
            breaker_state_name(r->last.state), (unsigned long long)r->last.generation,
            (unsigned long long)r->last.admitted, (unsigned long long)r->last.successes,
            (unsigned long long)r->last.failures, (unsigned long long)r->last.ignored,
            (unsigned long long)r->last.stale);
}

static void step(struct run *r, struct fuzz_reader *in) {
    uint8_t opcode = fuzz_byte(in);
    enum op op = (enum op)(opcode % OP_COUNT);
    breaker_stats prev = r->last;
    r->manual_op = false;
    switch (op) {
    case OP_ACQUIRE:
        do_acquire(r, fuzz_byte(in));
        break;
    case OP_COMPLETE: {
        uint8_t slot = fuzz_byte(in);
        do_complete(r, slot, fuzz_byte(in));
        break;
    }
    case OP_ADVANCE:
        advance(r, fuzz_varint(in));
        break;
    case OP_ADVANCE_MS:
        advance(r, MS * fuzz_byte(in));
        break;
    case OP_FORCE_OPEN:
        r->manual_op = true;
        FUZZ_CHECK(breaker_force_open(r->b) == BREAKER_OK, "force_open");
        FUZZ_CHECK(breaker_get_state(r->b) == BREAKER_FORCED_OPEN, "not forced open");
        break;
    case OP_FORCE_CLOSED:
        r->manual_op = true;
        FUZZ_CHECK(breaker_force_closed(r->b) == BREAKER_OK, "force_closed");
        FUZZ_CHECK(breaker_get_state(r->b) == BREAKER_FORCED_CLOSED, "not forced closed");
        break;
    case OP_RESET: {
        r->manual_op = true;
        FUZZ_CHECK(breaker_reset(r->b) == BREAKER_OK, "reset");
        breaker_stats s;
        (void)breaker_stats_get(r->b, &s);
        FUZZ_CHECK(s.state == BREAKER_CLOSED && s.failed_recoveries == 0 && s.window_calls == 0 &&
                       s.consecutive_failures == 0,
                   "after reset: %s, k %u, window %llu, run %u", breaker_state_name(s.state),
                   s.failed_recoveries, (unsigned long long)s.window_calls, s.consecutive_failures);
        break;
    }
    case OP_GET_STATE: {
        enum breaker_state st = breaker_get_state(r->b);
        FUZZ_CHECK((unsigned)st <= BREAKER_FORCED_CLOSED, "get_state %d", (int)st);
        break;
    }
    case OP_RETRY_AFTER:
        check_retry_after(r);
        break;
    case OP_COPY: {
        struct held *from = &r->slots[fuzz_byte(in) % SLOTS];
        struct held *to = &r->slots[fuzz_byte(in) % SLOTS];
        if (from != to) *to = *from;
        break;
    }
    case OP_GARBAGE: {
        struct held *h = &r->slots[fuzz_byte(in) % SLOTS];
        unsigned char *bytes = (unsigned char *)&h->permit;
        for (size_t i = 0; i < sizeof(h->permit); i++)
            bytes[i] = fuzz_byte(in);
        /* Never marked admitted (the low bit of the first word), so the
         * answer is EINVAL whatever the rest says. */
        h->permit.opaque_[0] &= ~UINT64_C(1);
        h->kind = HELD_GARBAGE;
        break;
    }
    case OP_ZERO: {
        struct held *h = &r->slots[fuzz_byte(in) % SLOTS];
        memset(h, 0, sizeof(*h));
        h->kind = HELD_GARBAGE;
        break;
    }
    case OP_BURST: {
        unsigned n = 1 + fuzz_byte(in) % 8;
        uint8_t base = fuzz_byte(in);
        for (unsigned i = 0; i < n; i++)
            do_acquire(r, base + i);
        for (unsigned i = 0; i < n; i++)
            do_complete(r, base + i, fuzz_byte(in));
        break;
    }
    case OP_GENERATION:
        FUZZ_CHECK(breaker_generation(r->b) >= prev.generation, "generation went back");
        break;
    case OP_COUNT:
        break;
    }
    check(r, &prev, (int)op);
    trace_op(r, op);
}

/* BREAKER_FUZZ_NO_OWNED_STRIPE=1: before the first input, eight parked
 * threads take every owned counter stripe, so the fuzzing thread counts the
 * way the threads of a pool do (on per-CPU stripes where the machine has
 * them, else atomically on shared ones), against the same ledger. */
static _Atomic int owned_taken;
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static bool park_over;
static pthread_t parked[8];

static void *hold_an_owned_stripe(void *arg) {
    (void)arg;
    breaker_config cfg;
    breaker_config_init(&cfg);
    breaker *b = NULL;
    breaker_permit p;
    /* Without its call the thread holds no stripe, and the mode would run
     * the fuzzing thread on an owned one unnoticed. */
    if (breaker_create(&cfg, &b) != BREAKER_OK || breaker_acquire(b, &p) != BREAKER_OK) abort();
    (void)breaker_complete(b, &p, BREAKER_SUCCESS);
    breaker_destroy(b);
    atomic_fetch_add(&owned_taken, 1);
    /* Keep the stripe until the process exits (end_parking). */
    pthread_mutex_lock(&park_lock);
    while (!park_over)
        pthread_cond_wait(&park_cond, &park_lock);
    pthread_mutex_unlock(&park_lock);
    return NULL;
}

/* At exit: the parked threads end, and are joined, so that nothing of
 * theirs is left for valgrind to call lost. */
static void end_parking(void) {
    pthread_mutex_lock(&park_lock);
    park_over = true;
    pthread_cond_broadcast(&park_cond);
    pthread_mutex_unlock(&park_lock);
    for (int i = 0; i < 8; i++)
        pthread_join(parked[i], NULL);
}

static void give_away_owned_stripes(void) {
    static bool done;
    if (done) return;
    done = true;
    const char *v = getenv("BREAKER_FUZZ_NO_OWNED_STRIPE");
    if (v == NULL || strcmp(v, "1") != 0) return;
    for (int i = 0; i < 8; i++)
        if (pthread_create(&parked[i], NULL, hold_an_owned_stripe, NULL) != 0) abort();
    if (atexit(end_parking) != 0) abort();
    /* Each takes its stripe on its first call: wait until all eight did. */
    while (atomic_load(&owned_taken) < 8)
        sched_yield();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    give_away_owned_stripes();
    struct fuzz_reader in = {data, size, 0};
    struct run *r = calloc(1, sizeof(*r));
    if (r == NULL) return 0;
    r->adm = calloc(MAX_ADMIT, sizeof(*r->adm));
    if (r->adm == NULL) {
        free(r);
        return 0;
    }
    breaker_config cfg;
    config_from(&in, &cfg);
    cfg.clock = clock_read;
    cfg.clock_ctx = r;
    cfg.on_event = on_event;
    cfg.event_ctx = r;
    r->now = fuzz_varint(&in) % (UINT64_C(1) << 62);
    r->created_at = r->now;
    r->last_to = BREAKER_CLOSED;
    r->last_event_gen = 1;
    int rc = breaker_create(&cfg, &r->b);
    FUZZ_CHECK(rc == BREAKER_OK, "config from the header refused: %d", rc);
    breaker_get_config(r->b, &r->cfg);
    FUZZ_CHECK(breaker_stats_get(r->b, &r->last) == BREAKER_OK, "stats");
    FUZZ_CHECK(r->last.generation == 1 && r->last.state == BREAKER_CLOSED, "new breaker");
    for (unsigned ops = 0; fuzz_more(&in) && ops < MAX_OPS; ops++)
        step(r, &in);
    breaker_destroy(r->b);
    free(r->adm);
    free(r);
    return 0;
}
