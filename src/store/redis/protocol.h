/* SPDX-License-Identifier: MIT */
/*
 * protocol.h - everything a fleet client decides, as plain data in and plain
 * data out (docs/fleet.md, "The client"): the limits as text, the keys and
 * the scripts' arguments, a flush's deltas, what an answer means for the
 * local breaker, how a lease answer settles a probe, and when a lease slot
 * may be given up.
 *
 * As hiredis keeps its parser (read.c, no socket) apart from its network
 * code (net.c), this module includes no socket or hiredis header, takes no
 * lock, reads no clock and calls no breaker: the caller reads the local
 * breaker (its generation, then its state, with functions that apply no
 * transition) and the clock, passes the values in, and applies what comes
 * out. So tests/fleet/test_fleet_protocol.c checks every rule without
 * Redis, and the client (client.h) runs the same code against a real Redis
 * or, in a simulation, the in-process one (inproc/).
 *
 * The server's half is the Lua scripts (lua/, scripts.h); the layout of their
 * answers and the constants both sides use (FLEET_* states and results,
 * VERDICT_*, ANS_*) are in scripts.h.
 * Private: nothing here is API.
 */
#ifndef BREAKER_REDIS_PROTOCOL_H
#define BREAKER_REDIS_PROTOCOL_H

#include "breaker.h"
#include "store/redis/scripts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- The limits as text ------------------------------------------------------- */

/* The limits the fleet decides on, as the scripts read them (lua/prelude.lua: c[1]
 * to c[14]; times in microseconds, Redis's unit). In Redis each is a field
 * of the state hash named by the configuration's own key
 * (breaker__fleet_limit_names: breaker_config_set(), an INI file). */
struct breaker__fleet_limits {
    uint32_t min_calls;
    double failure_rate;
    double slow_call_rate;
    uint64_t window_us;
    uint32_t buckets;
    uint64_t open_us;
    double open_backoff;
    uint64_t open_max_us;
    double open_jitter;
    uint32_t max_probes;
    uint32_t successes;
    uint64_t probe_timeout_us;
    /* CONSECUTIVE: the fleet's run of failures that trips; 0 for a window
     * policy (COUNT_WINDOW included: the fleet keeps a time window for it),
     * and for a stored text of 12 fields (a client from before the field). */
    uint32_t failure_threshold;
    /* The failing-source rule (breaker_config.min_failing_sources, 0..64);
     * 1 (off) for a stored text of 13 fields or fewer (a client from before
     * the field). */
    uint32_t min_failing_sources;
};

/* Room for the limits as named text (14 fields; the longest under 480 bytes). */
#define BREAKER__FLEET_LIMITS_LEN 512

/* The limits' names, in the order of the scripts' c[1] .. c[14]: the
 * configuration's keys (durations in µs in Redis). */
#define BREAKER__FLEET_LIMIT_COUNT 14
extern const char *const breaker__fleet_limit_names[BREAKER__FLEET_LIMIT_COUNT];

/* The limits of `cfg`, whose defaults are applied (breaker_get_config()). */
void breaker__fleet_limits_of(const breaker_config *cfg, struct breaker__fleet_limits *out);

/* `l` as the scripts' ARGV 2: "name=value" for each limit, separated by
 * one space; integers in decimal (durations in µs), rates with 17
 * significant digits (exact through strtod and Lua's tonumber). */
void breaker__fleet_limits_format(const struct breaker__fleet_limits *l, char *out, size_t len);

/* breaker__fleet_limits_of() then _format(): the text a host sends. */
void breaker__fleet_limits_text(const breaker_config *cfg, char *out, size_t len);

/* Read the limits of a control record (`v`: each limit's text, in the
 * order of breaker__fleet_limit_names; NULL: absent). They come from a
 * store every host writes, so they are input: each must be a plain
 * non-negative number of its kind (an integer of digits that fits its
 * field, a finite rate), and the whole within the configuration's ranges
 * (breaker__fleet_limits_check()). @return 1 with `out`, or 0 with `why`
 * naming the field and what is wrong with it. */
int breaker__fleet_limits_read(const char *const v[BREAKER__FLEET_LIMIT_COUNT],
                               struct breaker__fleet_limits *out, char *why, size_t why_len);

/* @return true when `a` and `b` hold the same limits; with `live`, only
 * those breaker_reconfigure() can change (breaker__fleet_limits_apply_live()). */
bool breaker__fleet_limits_same(const struct breaker__fleet_limits *a,
                                const struct breaker__fleet_limits *b, bool live);

/* `l` against the configuration's ranges, as the scripts check stored
 * limits (lua/prelude.lua, limits()): min_calls 1..10^6, failure_rate (0, 1],
 * slow_call_rate [0, 1], window_us 1..365 days with at least 1 ms per
 * bucket, window_buckets 1..600, open_us 1..365 days, open_backoff
 * 1..100, open_max_us open_us..365 days, open_jitter [0, 1], probes and
 * successes 1..4095, probe_timeout_us 1..365 days, failure_threshold
 * 0..10^6. @return 1, or 0 with `why` naming the field. */
int breaker__fleet_limits_check(const struct breaker__fleet_limits *l, char *why, size_t why_len);

/* Stored integers (generations, times in µs, counters) are at most this:
 * 2^52, exact in Lua's doubles with room to count (scripts.h, BIG). */
#define BREAKER__FLEET_BIG             INT64_C(4503599627370496)
#define BREAKER__FLEET_MAX_DURATION_US UINT64_C(31536000000000) /* 365 days */

/* Overlay `l` on `cfg`: the fields the fleet stores, nothing else (clock,
 * seed, callbacks, ramp, slow_call_ns and the other local choices stay the
 * caller's). A failure_threshold makes the policy CONSECUTIVE; none turns a
 * CONSECUTIVE policy into a time window (the fleet keeps a window). */
void breaker__fleet_limits_apply(const struct breaker__fleet_limits *l, breaker_config *cfg);

/* Attach: adopt the stored limits `stored` over `cfg` (the caller's, its
 * defaults applied), as a later attacher of a store file gets the stored
 * ones. @return 1 with `*cfg` overlaid and valid (breaker_config_validate())
 * and `*differs` set when they are not the caller's (fields the fleet does
 * not store never differ); 0 when they make no valid configuration, with
 * `why` and `*cfg` unchanged. */
int breaker__fleet_limits_adopt(const struct breaker__fleet_limits *stored, breaker_config *cfg,
                                bool *differs, char *why, size_t why_len);

/* ---- Keys and the scripts' arguments ------------------------------------------ */

/* The keys of a name: its state hash, its window, its leases, the flush
 * sequences of its hosts (docs/fleet.md, "Keys"). One hash tag, {name}, puts
 * the four in one Cluster slot. */
enum { FLEET_KEY_STATE, FLEET_KEY_WINDOW, FLEET_KEY_LEASES, FLEET_KEY_SEQ, FLEET_KEY_COUNT };
#define BREAKER__FLEET_KEY_COUNT_TEXT "4" /* the scripts' numkeys */
#define BREAKER__FLEET_KEY_LEN        (BREAKER_NAME_MAX + 32)
void breaker__fleet_key(const char *name, int which, char *out, size_t len);

/* The scripts (lua/). */
enum {
    FLEET_SCRIPT_FLUSH,
    FLEET_SCRIPT_ACQUIRE,
    FLEET_SCRIPT_RELEASE,
    FLEET_SCRIPT_CONTROL,
    FLEET_SCRIPT_CREDIT,
    FLEET_SCRIPT_COUNT
};

/* One script call: which script, and its ARGV after the two every script
 * takes (the key TTL and the limits text). */
#define BREAKER__FLEET_CALL_ARGS \
    10 /* the flush's: known_gen .. run, host, seq, sources, directed */
struct breaker__fleet_call {
    int script;
    int argc;
    char argv[BREAKER__FLEET_CALL_ARGS][24];
};

/* A lease token as the scripts store it: 16 hex digits. */
void breaker__fleet_token_text(uint64_t token, char out[17]);
/* The key TTL argument: milliseconds. */
void breaker__fleet_ttl_text(uint64_t ttl_ns, char out[24]);

/* ---- A flush's deltas ------------------------------------------------------- */

/* What a host last sent for a name: the counters it had read, and a carry. */
struct breaker__fleet_seen {
    uint64_t successes, failures, slow, probes_succeeded, probes_failed;
    /* A probe's success reaches probes_succeeded before its stripe's
     * successes: a snapshot between the two sees one success too few, which
     * is carried (negative) to the next round, never sent as a wrapped
     * unsigned delta. */
    int64_t success_carry;
};

/* A flush's arguments after the known generation. */
struct breaker__fleet_deltas {
    uint64_t calls, failures, slow; /* closed-state calls since the last flush */
    uint32_t run;                   /* the host's consecutive_failures now */
    uint64_t sources;               /* breaker_failing_sources_peek(): the host's map */
};

/* The deltas since `seen` in the counters `now` (breaker_stats_peek() of the
 * local breaker: successes, failures, slow, the probes' counts and
 * consecutive_failures), and `seen` moved on to `now`. Closed-state calls
 * only: a probe's result is the fleet's through its lease (a failed probe
 * is one of `failures`; a timed-out one is not a completion). */
void breaker__fleet_take_deltas(struct breaker__fleet_seen *seen, const breaker_stats *now,
                                struct breaker__fleet_deltas *out);

/* A flush's sequence number for one name: newer than the name's `last`
 * (the host's previous flush call of it), and at least the monotonic clock
 * in µs `now_us`, so a host's sequences only grow, also across a handle
 * that attached the name again. The flush script applies a host's deltas
 * only with a sequence newer than the last it applied for that host
 * (docs/fleet.md, "The scripts"): the retry of a round after a cut connection
 * sends the same call, and its deltas count once whether or not Redis ran
 * the first try. Pure. */
uint64_t breaker__fleet_next_seq(uint64_t last, uint64_t now_us);

/* The host id of a handle whose random lease-token key is `token_key`: 16
 * hex digits, the flush script's field in the sequences key. Pure. */
void breaker__fleet_host_id(uint64_t token_key, char out[17]);

/* The calls: flush(known_gen, deltas), acquire_probe(token),
 * release_probe(gen, token, result). */
void breaker__fleet_call_flush(struct breaker__fleet_call *c, uint64_t known_gen,
                               const struct breaker__fleet_deltas *d);
/* A flush call's host id and sequence (ARGV 8 and 9): its deltas are then
 * applied at most once (a flush without them, the attach's, carries none). */
void breaker__fleet_call_sequence(struct breaker__fleet_call *c, const char host[17], uint64_t seq);
/* A flush call's failing-source map (ARGV 10 and 11: its low and high 32
 * bits), after the sequence: OR-ed into the fleet window's bucket. */
void breaker__fleet_call_sources(struct breaker__fleet_call *c, uint64_t map);
/* A flush call's server-directed wait (ARGV 12, after the sources): the
 * host's local breaker was opened for that long by a dependency's answer
 * (breaker_open_for(), reason SERVER_DIRECTED) since its last flush; the
 * script opens the fleet until then (capped at open_max), unless it is
 * open that long already or an operator's order forces it. */
void breaker__fleet_call_directed(struct breaker__fleet_call *c, uint64_t wait_us);
/* A host's whole flush call, as the Redis client sends it (and the
 * simulator's model): the deltas `d` for `known_gen`, the host id and
 * sequence, d->sources and the server-directed wait. */
void breaker__fleet_call_host_flush(struct breaker__fleet_call *c, uint64_t known_gen,
                                    const struct breaker__fleet_deltas *d, const char host[17],
                                    uint64_t seq, uint64_t directed_us);
/* A credit (lua/credit.lua) of one name: the generation `known_gen` the
 * host knows, its `calls` (successes alone), and the time since the host's
 * last flush of the name, `since_us` (the window's buckets that aged out
 * since then are deleted; 1 .. 365 days, clamped). Its arguments follow
 * the TTL; several names' go in one call, in the order of their keys. A
 * credit is counted without the host's sequence: it must never be sent
 * twice (not idempotent for the transport). */
void breaker__fleet_call_credit(struct breaker__fleet_call *c, uint64_t known_gen, uint64_t calls,
                                uint64_t since_us);
/* What is left at `now_ns` (the local breaker's clock) of a server-directed
 * open of the local breaker since the last flush: its stats `s` count more
 * such opens than `seen` (the count the last flush sent) and it is still
 * OPEN (`local`), until s->open_until_ns. In microseconds; 0: none to send. */
uint64_t breaker__fleet_directed_left_us(const breaker_stats *s, enum breaker_state local,
                                         uint64_t seen, uint64_t now_ns);
void breaker__fleet_call_acquire(struct breaker__fleet_call *c, uint64_t token);
void breaker__fleet_call_release(struct breaker__fleet_call *c, uint64_t gen, uint64_t token,
                                 int result);

/* ---- Answers -------------------------------------------------------------------- */

/* One script's answer (scripts.h, ANS_*), read. */
struct breaker__fleet_answer {
    int state;        /* FLEET_CLOSED, FLEET_OPEN or FLEET_HALF_OPEN */
    uint64_t gen;     /* the fleet's generation */
    uint64_t wait_us; /* OPEN: the open wait left; a refused lease in
                         HALF_OPEN: until the earliest lease deadline; a
                         granted lease: its time to its deadline */
    uint32_t k;       /* failed recoveries */
    uint64_t successes;
    int verdict;                    /* VERDICT_* */
    uint64_t calls, failures, slow; /* the last trip's evidence */
    uint64_t born;                  /* the generation the state was created with */
    uint64_t cv;                    /* the control record's version (0: never set) */
};

/* The control record: the operators' desired state of a name, which every
 * host converges to (lua/control.lua, docs/fleet.md "Controls"), as its
 * script answers it. */
struct breaker__fleet_record {
    uint64_t version; /* 0: never set */
    /* The state the record is of (its `born`): versions count from 1 again
     * in a state made anew (Redis restarted empty, a rebuild), so a record
     * is known by both. */
    uint64_t born;
    int forced;         /* FLEET_FORCED_* in force (one whose time ran out: NONE) */
    uint64_t left_us;   /* its time left (0: no end) */
    int shadow;         /* 0, 1 */
    uint64_t reset_gen; /* the generation the last reset made (0: none) */
    char who[BREAKER__FLEET_WHO_MAX + 1];
    char why[BREAKER__FLEET_WHY_MAX + 1];
    uint64_t age_us;       /* since the last change */
    uint64_t reset_age_us; /* since the last reset (0: none) */
    struct breaker__fleet_limits limits;
};

/* Read a record's parts (ANS_REC_*) of an answer whose version is
 * `version`: `num` = forced 0..2, time left at most 365 days, shadow 0..1,
 * reset generation 0..2^52, the reset's age 0..2^52 µs; who and why texts of at most
 * BREAKER__FLEET_WHO_MAX and _WHY_MAX bytes of printable text, age 0..2^52, and the limits
 * (breaker__fleet_limits_read()). @return 1, or 0 with `why_not` (the
 * answer is no answer). */
int breaker__fleet_record_read(uint64_t version, const int64_t num[5], const char *who,
                               size_t who_len, const char *why, size_t why_len, int64_t age_us,
                               const char *const limits[BREAKER__FLEET_LIMIT_COUNT],
                               struct breaker__fleet_record *out, char *why_not,
                               size_t why_not_len);

/* Read the integers of an answer. @return 1 with `out` when every field is
 * in its range (breaker__fleet_answer_check()), else 0: the round takes it
 * as an error reply. */
int breaker__fleet_answer_read(const int64_t v[ANS_COUNT], struct breaker__fleet_answer *out);

/* Every field's range: a state and a verdict the scripts send; gen and the
 * counts 0..2^52 (BREAKER__FLEET_BIG); k and successes within 32 bits;
 * failures and slow at most calls; born at most gen; the wait at most two
 * years (a negative wait, which the scripts never send, reads as none).
 * @return 1, or 0 with `why` naming the first field out of range and its
 * value. */
int breaker__fleet_answer_check(const int64_t v[ANS_COUNT], char *why, size_t why_len);

/* ---- What an answer means for the local breaker ------------------------------- */

/* A name's protocol state on one host, kept between rounds. */
struct breaker__fleet_follow {
    uint64_t known_gen;    /* the fleet generation of the last answer, 0 = none */
    bool follows;          /* the local breaker follows a fleet open: close it
                              when that fleet closes */
    uint64_t followed_gen; /* the generation of the fleet open it follows */
    /* Rejoining after a degraded period (docs/fleet.md, "Failure modes"): the
     * local generation when the host became degraded (valid when
     * degraded_gen_set); this round, whether the local breaker recovered
     * on its own meanwhile; and the fleet generation whose expired open this
     * host declined to follow because of that (0 = none). */
    uint64_t degraded_gen;
    bool degraded_gen_set;
    bool recovered;
    uint64_t spared_gen;
    /* FAIL_CLOSED: the flusher tripped the local breaker because the fleet
     * view was too old (breaker__fleet_trip_stale()). */
    bool stale_tripped;
    /* The cadence (breaker__fleet_round_call()): whether a full flush was
     * answered since the entry was armed or the last failed round (false:
     * the next flush is full); the fleet state of the last answer
     * (FLEET_*); the fleet's run at the last read (CONSECUTIVE; 0: none);
     * the rounds since the last full flush; and the name's cadences, in
     * rounds: of its successes, and of its full flush (the keys' TTL) (0:
     * not computed yet); a CONSECUTIVE policy (its run: no credit). */
    bool synced;
    int known_state;
    uint64_t known_run;
    uint32_t since_full;
    uint32_t every, keep_every;
    bool consecutive;
    uint64_t flushed_at_ns; /* when the last flush was sent (monotonic; 0: none) */
    /* The last answer decided on, and when (monotonic ns): what a version
     * read that shows no change stands for (breaker__fleet_version_read()). */
    struct breaker__fleet_answer last;
    uint64_t last_at_ns;
    /* The control record (breaker__fleet_converge()): the last one read
     * (version 0: none yet) and when (monotonic ns: a forced state's end is
     * record_at_ns + its time left); the record (its born and version: a
     * state made anew counts versions from 1 again) whose limits the local
     * breaker refused (not tried again); the last reset applied to the
     * local breaker, or taken as history (a reset made before the breaker
     * was: its generation is at most the one the breaker was armed in). */
    struct breaker__fleet_record record;
    uint64_t record_at_ns;
    uint64_t refused_version, refused_born;
    uint64_t reset_seen;
    /* The local generation the record's forced state made when this host
     * applied it (0: none): a forced state the record no longer holds is
     * released only if it is still that one (an operator's control of this
     * host alone is left as it is). */
    uint64_t forced_gen;
    /* When the local breaker was made (monotonic ns): without an answer at
     * its attach, a reset the first record shows is history when it was
     * made before then. */
    uint64_t attached_ns;
    /* The flush interval (breaker__fleet_cadence_setup()): how far a local
     * wait's end may be from the fleet's before it is brought to it. */
    uint64_t interval_ns;
};

/* The local breaker as the caller read it: its generation first, then its
 * state, so a transition fenced by `gen` cannot act on a later state; what
 * is left of its open wait (OPEN: its end minus now; else 0) and of a timed
 * forced close (FORCED_CLOSED with an expiry; else 0), its shadow
 * mode, and its limits (breaker__fleet_limits_of() of its configuration). */
struct breaker__fleet_local {
    uint64_t gen;
    enum breaker_state state;
    uint64_t open_left_ns;
    uint64_t forced_left_ns;
    int shadow;
    struct breaker__fleet_limits limits;
};

/* A transition for the local breaker, fenced by its generation: applied
 * after the round (breaker_trip_outside_for(b, gen, wait_ns, &evidence) or
 * breaker_close_outside(b, gen, NULL)), it does nothing (STALE) to a breaker
 * that moved on since it was read. */
enum {
    FLEET_ACT_NONE,
    FLEET_ACT_TRIP,
    FLEET_ACT_CLOSE,
    /* The control record's forced state, or the fleet's open wait, brought
     * to the local breaker (breaker__fleet_converge(), breaker__fleet_decide()),
     * unfenced (the operator's intent wins, as breaker_force_open()'s):
     * breaker_force_open(); breaker_open_for(wait_ns, OPERATOR);
     * breaker_force_closed() or, with wait_ns, breaker_force_closed_for();
     * breaker_reset() of a forced state the record does not hold. */
    FLEET_ACT_FORCE_OPEN,
    FLEET_ACT_OPEN_FOR,
    FLEET_ACT_FORCE_CLOSED,
    FLEET_ACT_RESET
};
struct breaker__fleet_action {
    int kind;
    uint64_t gen;
    breaker_evidence evidence; /* FLEET_ACT_TRIP: the fleet's trip */
    /* FLEET_ACT_TRIP: the local open wait (breaker_trip_outside_for()); 0 =
     * the breaker's own. Following a fleet OPEN: what is left of the fleet's
     * wait (at least 1 ns), so the host probes when the fleet would lease;
     * following a HALF_OPEN fleet: 1 ns, since the lease decides (a host
     * that waited its own open_ns would never probe, and a fleet of
     * short-lived processes needing several successes would never close). */
    uint64_t wait_ns;
    /* The control record's forced state (breaker__fleet_converge()): its
     * who and why go with the event. */
    bool by_record;
};

/* The lease gate (no lease request before until_ns, monotonic): `change`
 * says whether to store until_ns (0 opens the gate). Callers write the gate
 * too (lease refusals), so an unchanged gate must not be stored back. */
struct breaker__fleet_gate {
    bool change;
    uint64_t until_ns;
};

/* Forget a name's protocol state for a new local breaker made at `now_ns`
 * (a retired entry re-armed): what it followed, its rejoin and FAIL_CLOSED
 * records, its control record. The known generation stays: it is the
 * name's, not the breaker's. */
void breaker__fleet_follow_rearm(struct breaker__fleet_follow *f, uint64_t now_ns);

/* A name armed with a new local breaker (an attach, or a retired entry
 * re-armed), whose attach's call (a flush without deltas) got the answer
 * `a` (NULL: none, the call was skipped or failed): the breaker's evidence
 * starts in a's generation. The next flush names it, so the script counts
 * its deltas only while the fleet is still in that generation: a reset
 * (or a trip, a close) between the attach and the name's first round ends
 * the period those calls belong to. A reset made before (its generation
 * at most a's) is history for this breaker; without an answer, a reset in
 * the first record read is taken as history too. Pure. */
void breaker__fleet_follow_armed(struct breaker__fleet_follow *f,
                                 const struct breaker__fleet_answer *a);

/* The round that found Redis unreachable, when the host was not degraded
 * yet: remember where the local breaker stands (`local` NULL: retired), to
 * tell on rejoining whether it recovered on its own. Not when some answers
 * of that round were decided on (`answers_decided`): their transitions are
 * still to be applied, and would look like a recovery. */
void breaker__fleet_note_degraded(struct breaker__fleet_follow *f,
                                  const struct breaker__fleet_local *local, bool answers_decided);

/* Every answered round, before its answers are decided: whether the local
 * breaker recovered on its own while the host was degraded (`was_degraded`):
 * it moved since and is CLOSED again (a successful local probe). */
void breaker__fleet_check_recovered(struct breaker__fleet_follow *f, bool was_degraded,
                                    const struct breaker__fleet_local *local);

/* FAIL_CLOSED: @return true when a fleet view whose last good round was at
 * `last_ok_ns` (0: none yet) is too old at `now_ns` to admit calls. */
bool breaker__fleet_view_stale(uint64_t last_ok_ns, uint64_t now_ns, uint64_t stale_after_ns);

/* FAIL_CLOSED, the view too old: a CLOSED local breaker is tripped (no
 * evidence: the trip is this host's lack of a view), so that its calls are
 * refused on the open short path; the call path never looks at the view's
 * age. The first good answer undoes it if the fleet is closed
 * (breaker__fleet_decide()). @return true with `act` set (the round's
 * action replaced), or false for a local breaker that is not CLOSED. */
bool breaker__fleet_trip_stale(struct breaker__fleet_follow *f,
                               const struct breaker__fleet_local *local,
                               struct breaker__fleet_action *act);

/* A breaker tripped on a stale view at attach (FAIL_CLOSED with no view
 * yet): remembered as the flusher's own trips are. */
void breaker__fleet_note_stale_trip(struct breaker__fleet_follow *f);

/* What answer `a`, read at `now_ns` (monotonic), means for a name whose
 * local breaker is `local` (NULL: the entry is retired, and only its known
 * generation moves). `act` is the round's action for the name so far: the
 * answers of one round are decided in order and a later one overrides an
 * earlier (it is the newer fleet state); start a round with FLEET_ACT_NONE.
 * The rules (docs/fleet.md, "The client"):
 *  - the first good answer after a FAIL_CLOSED trip closes the local
 *    breaker if the fleet is CLOSED (whatever its born: the trip was no
 *    fleet's) and the breaker is still OPEN or HALF_OPEN; otherwise the host
 *    goes on as below (it follows the fleet's open as after any trip);
 *  - fleet CLOSED: the gate opens; a host that follows an open whose state
 *    this is (born no later than the open it followed; born 0 counts as the
 *    same) closes its OPEN or HALF_OPEN local breaker. A state born later
 *    was created from scratch (Redis restarted empty, keys expired): no
 *    close. The host stops following either way;
 *  - fleet OPEN or HALF_OPEN: the host follows it; an OPEN with its wait to
 *    run gates lease requests until it ends. A CLOSED local breaker is
 *    tripped with the fleet's evidence, unless it recovered on its own while
 *    the host was degraded and the fleet's open wait is over (or this
 *    generation was spared already): then it stays CLOSED for this
 *    generation. A local breaker OPEN with a wait that ends well after the
 *    fleet's (more than twice what the fleet has left, plus an interval:
 *    the fleet's wait was cut, by new limits) is opened again until the
 *    fleet's end, so that it probes when the fleet leases; any other open
 *    local breaker needs nothing. */
void breaker__fleet_decide(struct breaker__fleet_follow *f, const struct breaker__fleet_answer *a,
                           const struct breaker__fleet_local *local, uint64_t now_ns,
                           struct breaker__fleet_action *act, struct breaker__fleet_gate *gate);

/* What the control record asks of the local breaker this round, applied
 * after the round (as the actions are): breaker_set_shadow(b, shadow)
 * unless shadow is -1; with `reconfigure`, breaker_reconfigure() with the
 * local configuration whose stored fields are `limits`
 * (breaker__fleet_limits_apply_live()); with `reset`, breaker_reset()
 * before the round's action. Start a round with
 * breaker__fleet_controls_none(). */
struct breaker__fleet_controls {
    int shadow;
    bool reconfigure;
    struct breaker__fleet_limits limits;
    bool reset;
};
void breaker__fleet_controls_none(struct breaker__fleet_controls *c);

/* Converge the local breaker `local` to the control record `f->record`
 * (docs/fleet.md, "Controls"), level-triggered: every round compares what
 * the record asks with what the breaker is, and asks only for what
 * differs, so that applying a record twice changes nothing, and a host
 * that missed a change, took over a name, or attached late reaches the
 * same state.
 *  - a reset whose generation this breaker has not seen (f->reset_seen:
 *    the last applied, or the generation the breaker was armed in):
 *    `out->reset`, once;
 *  - a forced state in force: FORCED_OPEN (no end) or FORCED_CLOSED
 *    (breaker_force_closed(), or _for() what is left) when the breaker is
 *    not in it, or not until the record's end (renewed, made endless); no
 *    forced state in force: a FORCED_OPEN breaker, or a FORCED_CLOSED one
 *    with no end, that the record forced (its generation f->forced_gen) is
 *    reset (FLEET_ACT_RESET: it follows the fleet again); a timed open: OPEN until the record's end
 * (within an interval) else breaker_open_for() what is left. It replaces the round's action (the
 * operator's intent wins);
 *  - shadow mode and the limits that can change live, when they differ
 *    (limits a breaker refused once, for this record: its born and
 *    version, are not asked for again).
 * Nothing before a record was read (version 0). */
void breaker__fleet_converge(struct breaker__fleet_follow *f,
                             const struct breaker__fleet_local *local, uint64_t now_ns,
                             struct breaker__fleet_action *act,
                             struct breaker__fleet_controls *out);

/* A record read (its answer `rec`) at `now_ns`: kept as the one the host
 * converges to. */
void breaker__fleet_record_keep(struct breaker__fleet_follow *f,
                                const struct breaker__fleet_record *rec, uint64_t now_ns);

/* Overlay what may change live of `l` on `cfg` (breaker_reconfigure()'s
 * set, where the fleet stores it): min_calls, the rates, the open wait, its
 * backoff, maximum and jitter, half_open_successes, probe_timeout,
 * min_failing_sources, and failure_threshold on a CONSECUTIVE breaker. The
 * window, its buckets, the policy and half_open_max_probes stay `cfg`'s
 * (the reconfig script refuses to change them). */
void breaker__fleet_limits_apply_live(const struct breaker__fleet_limits *l, breaker_config *cfg);

/* ---- The cadence: what a round sends for a name ------------------------------- */

/* A healthy name costs the fleet almost nothing (docs/fleet.md, "Cost";
 * breaker_redis_config.full_flush_rounds). Each round a name gets one of:
 *  - a version read: HMGET of its state's gen, cv and run (no script, no
 *    TIME). Every transition of the fleet is a new generation and every
 *    control change a new cv, so equal values mean the state the host last
 *    decided on still holds: the round decides again on that answer (its
 *    open wait run down on the host's clock). Values that moved (or that
 *    cannot be read) have the state read whole in the same round (the
 *    control script's read, one more exchange), so a trip or a control
 *    change reaches a host at its next round, read or not;
 *  - a credit (lua/credit.lua, a script without the prelude: the names
 *    of one server due in a round in one call where the transport allows
 *    it), which counts successes alone into a closed window that holds no
 *    failure or slow call with a few Redis calls per name and answers the
 *    control version, or -1: not counted, and the round sends the full
 *    flush for the name in its second exchange;
 *  - a full flush: the flush script, every check of the prelude, carrying
 *    every delta pending. */
enum { FLEET_ROUND_FULL, FLEET_ROUND_CREDIT, FLEET_ROUND_READ };

/* The version read's fields (HMGET of the state hash), in this order. */
#define BREAKER__FLEET_VERSION_FIELDS 3
extern const char *const breaker__fleet_version_fields[BREAKER__FLEET_VERSION_FIELDS];

/* The whole state as a read gives it (the status read, status.c: HMGET of
 * these fields, with TIME for Redis's clock). */
#define BREAKER__FLEET_READ_FIELDS 11 /* the state's 10, then cv */
/* How much later than the read's TIME the state read may have been
 * written (other clients' scripts run between the commands of a long
 * pipeline): an OPEN state's until may be this much past now + the
 * longest wait. */
#define BREAKER__FLEET_READ_SKEW_US UINT64_C(1000000)
extern const char *const breaker__fleet_read_fields[BREAKER__FLEET_READ_FIELDS];

/* The default cadence of a healthy name's successes, in rounds
 * (breaker_redis_config.full_flush_rounds 0). */
#define BREAKER__FLEET_FULL_ROUNDS 16u
/* The successes a healthy name holds back are at most this fraction of the
 * fleet window (1/20: 5%): the cadence of a name whose window is short is
 * lowered to fit (breaker__fleet_full_every()). */
#define BREAKER__FLEET_LAG_SHARE 20u

/* The cadence of a name's successes: `rounds` (the handle's
 * full_flush_rounds), lowered so that `rounds` of the flusher's longest
 * intervals (`interval_ns` + its 20% jitter) are at most
 * 1/BREAKER__FLEET_LAG_SHARE of the window `window_us` (the stored
 * limits'), and at least 1 (every round). Pure. */
uint32_t breaker__fleet_full_every(uint32_t rounds, uint64_t interval_ns, uint64_t window_us);

/* The rounds in half of the keys' TTL `ttl_ns` when each round lasts the
 * flush interval `interval_ns` jittered up by 20%, at most `rounds`, at
 * least 1: a name's full flush comes at least this often, since only a full
 * flush refreshes the keys' TTL (a read or a credit does not; the
 * other half is left for a late flusher). Pure. */
uint32_t breaker__fleet_ttl_rounds(uint32_t rounds, uint64_t interval_ns, uint64_t ttl_ns);

/* What a round knows about a name before it chooses its call. */
struct breaker__fleet_pending {
    const struct breaker__fleet_deltas *deltas; /* since the last flush; sources set */
    bool probes_moved;        /* the local breaker's probe counts moved since then */
    bool releases;            /* lease results go out for it in this round */
    enum breaker_state local; /* the local breaker's state (peeked) */
    bool directed;            /* a server-directed open goes to the fleet */
    bool last_round;          /* the handle's last round (close): nothing is held back */
    uint64_t round;           /* the handle's round, counted from 1 */
};

/* @return the round's call for the name (FLEET_ROUND_*). A full flush in
 * the handle's last round, and when: no full flush was answered since the
 * entry was armed or a round failed (`synced`); failures or slow calls are
 * pending; probes moved; lease results go out; a server-directed open goes
 * out; the local breaker or the fleet (at the last answer) is HALF_OPEN
 * (the script's prelude reaps a lease past its deadline); the last read
 * showed a fleet run of failures (CONSECUTIVE: a success held back would
 * let other hosts' failures run on); the successes' cadence is 1 (every
 * round: the full flush every round, as full_flush_rounds 1 asks, or a
 * window too short to hold any back); or f->keep_every rounds passed since
 * the last full flush (the keys' TTL). Otherwise, in the handle's rounds
 * whose number is a multiple of f->every (so that the names of one cadence
 * send in one round, and a success waits at most f->every rounds), when
 * some are pending: a credit for a window policy with no failing
 * source in its map, a full flush for a CONSECUTIVE one (its run) or a map
 * (OR-ed into the window). Otherwise the version read: also a fleet OPEN is read, not flushed
 * (until a lease request turns it HALF_OPEN, a script would answer what the read shows, and its
 * hosts' local breakers, open too, have no closed-state calls to send). */
int breaker__fleet_round_call(const struct breaker__fleet_follow *f,
                              const struct breaker__fleet_pending *p);

/* After the round's call for a name was answered: `full`, whether the
 * answer was the flush script's (a credit's, counted, is not). `stagger` (the entry's index)
 * spreads the names' full flushes (the keys' TTL) over the rounds after the first. */
void breaker__fleet_round_done(struct breaker__fleet_follow *f, bool full, uint32_t stagger);

/* The cadence of a name whose limits are `limits` (the stored ones), for a
 * handle flushing every `interval_ns` with full_flush_rounds `rounds` and
 * keys kept `ttl_ns`: set once in `f` (f->every 0: not yet). */
void breaker__fleet_cadence_setup(struct breaker__fleet_follow *f,
                                  const struct breaker__fleet_limits *limits, uint32_t rounds,
                                  uint64_t interval_ns, uint64_t ttl_ns);

/* The version read's answer `v` (breaker__fleet_version_fields' texts,
 * NULL: absent) at `now_ns` (monotonic). @return 1 when it shows the state
 * the host last decided on (f->last: the same generation and control
 * version; an absent run is 0), with `out` that answer as of now (verdict
 * none, the open wait left run down on the host's clock) and `*run` the
 * fleet's run of failures (CONSECUTIVE); 0 when it moved, is absent, is
 * not plain numbers in range, or no answer was decided since the entry was
 * armed: the round reads the whole state (the control script's read). */
int breaker__fleet_version_read(const struct breaker__fleet_follow *f,
                                const char *const v[BREAKER__FLEET_VERSION_FIELDS], uint64_t now_ns,
                                struct breaker__fleet_answer *out, uint64_t *run);

/* A credit's answer for a name, `cv`, at `now_ns`. @return 1 when it was
 * counted (cv, the control version, 1..2^52), with `out` the last answer
 * as of now with that control version (a credit counts only in the
 * generation the host knows, the state CLOSED); 0 when it was not (-1, or
 * a number out of range, or the last answer is not CLOSED): the round
 * sends the name's full flush. */
int breaker__fleet_credit_answer(const struct breaker__fleet_follow *f, int64_t cv, uint64_t now_ns,
                                 struct breaker__fleet_answer *out);

/* Redis's clock from TIME's two fields (seconds, microseconds). @return 1
 * with `*now_us`, or 0 (not two plain numbers in range). */
int breaker__fleet_time_read(const char *sec, const char *usec, uint64_t *now_us);

/* A read of a name's whole state hash (the status read): the fields of
 * breaker__fleet_read_fields, each NULL (absent) or its text, at Redis's
 * clock `now_us`, as the answer a script would give (verdict none, the
 * open wait left), and in `*run` the fleet's run of failures (CONSECUTIVE;
 * 0: none). @return 1 with `out`; 0 when the state is absent, a field is
 * not a plain number in its range (breaker__fleet_answer_check()), or an
 * OPEN state's wait is longer than `max_wait_us` plus
 * BREAKER__FLEET_READ_SKEW_US, with `why` naming it. A read applies no due
 * lease deadline (the script's prelude does). */
int breaker__fleet_read_answer(const char *const v[BREAKER__FLEET_READ_FIELDS], uint64_t now_us,
                               uint64_t max_wait_us, struct breaker__fleet_answer *out,
                               uint64_t *run, char *why, size_t why_len);

/* ---- Leases ------------------------------------------------------------------- */

/* How an inline lease request went: an answer (granted, "the fleet is
 * closed", refused), an error (no usable answer, or no connection), or LOST:
 * sent but not answered in time, so Redis may still run it and grant a
 * lease nobody holds. */
enum {
    FLEET_LEASE_GRANTED,
    FLEET_LEASE_CLOSED,
    FLEET_LEASE_REFUSED,
    FLEET_LEASE_ERROR,
    FLEET_LEASE_LOST
};

/* The lease verdict of the acquire script's answer (NULL: not an answer). */
int breaker__fleet_lease_verdict(const struct breaker__fleet_answer *a);

/* The times a lease decision needs, monotonic ns. */
struct breaker__fleet_lease_times {
    uint64_t start_ns;         /* when the acquire began */
    uint64_t now_ns;           /* when the answer was in */
    uint64_t budget_ns;        /* probe_budget_ns */
    uint64_t interval_ns;      /* flush_interval_ns */
    uint64_t probe_timeout_ns; /* the local breaker's */
};

/* What the probe does with a lease verdict. */
struct breaker__fleet_lease_plan {
    int verdict;                /* as counted: a grant past the budget is an ERROR */
    int rc;                     /* BREAKER_OK (go ahead), BREAKER_REJECTED_OPEN or
                                   BREAKER_REJECTED_HALF_OPEN (the local probe slot is
                                   given back, counted as a refusal) */
    bool hold;                  /* keep the lease (granted in time) */
    uint64_t lease_deadline_ns; /* hold: when the lease is surely over (the
                                   probe timeout from now), for reclaiming a
                                   slot whose probe never settles */
    bool give_back;             /* granted too late: release it (result NEITHER) */
    bool orphan;                /* LOST: keep the token, released as an orphan */
    uint64_t orphan_deadline_ns;
    bool flush_now; /* the fleet closed the open this host follows: a round
                       now closes the local breaker */
    struct breaker__fleet_gate gate;
};

/* Settle a lease request: `verdict` (FLEET_LEASE_*) and, when Redis
 * answered, its answer `a` (the state, the generation, the wait);
 * `followed_gen` is the generation of the fleet open the host follows (0:
 * none; breaker__fleet_follow.followed_gen while follows is set, as the
 * flusher last published it). A grant later than the budget is given
 * straight back (too late to use). "The fleet is closed" lets the probe go
 * without a lease (the local breaker tripped on its own evidence), except
 * for a host that follows an open of that very state (born no later than
 * the open it follows): the fleet recovered, and a probe of every follower
 * between the close and its next round would be more probes in flight than
 * the fleet's limit. It is refused, and a round now closes the local
 * breaker (flush_now). A refusal gates requests until the fleet may answer
 * otherwise (its open wait, its earliest lease deadline; one flush
 * interval when it said no time or a longer one). An error gates for one
 * interval (the flusher looks first). */
void breaker__fleet_lease_settle(int verdict, const struct breaker__fleet_answer *a,
                                 uint64_t followed_gen, const struct breaker__fleet_lease_times *t,
                                 struct breaker__fleet_lease_plan *out);

/* A leased probe completes with `outcome` (CANCELLED already mapped through
 * cancelled_as): @return its result for release_probe (FLEET_RESULT_*). */
int breaker__fleet_release_result(enum breaker_outcome outcome);

/* ... and @return what the local breaker records for it: a leased success
 * is the fleet's (IGNORED locally: the local breaker closes when the fleet
 * does); a failure reopens the local breaker too. */
enum breaker_outcome breaker__fleet_local_outcome(enum breaker_outcome outcome);

/* A lease slot whose release went out in a round Redis answered: @return
 * true to free the slot, false to send the release again next round.
 * `a`: the release's answer, NULL for an error reply (-OOM, -READONLY: not
 * an answer, so the slot is kept). A completed lease is freed by any answer
 * (a release is idempotent: applied, or stale). An orphan (`orphan`: a
 * request that got no answer, released for any generation) is freed once
 * Redis applied its release, or once its deadline has passed and two
 * answered rounds found no such lease (`*stale_answers` counts them): a
 * request still queued in Redis when it came back was run before the
 * second. */
bool breaker__fleet_release_settled(const struct breaker__fleet_answer *a, bool orphan,
                                    uint64_t now_ns, uint64_t deadline_ns, uint32_t *stale_answers);

#endif /* BREAKER_REDIS_PROTOCOL_H */
