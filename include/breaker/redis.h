/* SPDX-License-Identifier: MIT */
/*
 * breaker/redis.h - one breaker for a whole fleet, on Redis, without Redis on
 * the call path. Library `breaker_redis` (CMake target breaker::redis),
 * built when hiredis is found. docs/fleet.md explains the protocol, the Lua
 * scripts, the staleness bound and the failure modes.
 *
 * The model. A fleet handle (breaker_redis_open()) connects to one Redis and
 * runs one background thread, the flusher. Every name attached through it
 * (breaker_redis_attach()) is an ordinary local breaker: its calls in CLOSED
 * and OPEN are the local breaker's (no network I/O, no lock). Every flush
 * interval (default 250 ms, jittered) the flusher sends each name's local
 * deltas (calls, failures, slow calls, from breaker_stats_get()) to Redis in
 * one round trip for all names; a Lua script adds them to the fleet's time
 * window (on Redis's clock) and decides, once per fleet generation, whether
 * the fleet trips. The reply tells each host the fleet state: a host whose
 * local breaker is CLOSED while the fleet is not trips it (reason
 * BREAKER_REASON_OUTSIDE_TRIP), and one that followed the fleet open is
 * closed (reason BREAKER_REASON_OUTSIDE_CLOSE) when the fleet closes. A host's view is
 * at most one flush interval (plus one round trip) old.
 *
 * Probes are fleet leases: when the local breaker admits a probe,
 * breaker_acquire() itself asks Redis for a lease (at most the fleet's
 * half_open_max_probes at once, each with a deadline on Redis's clock),
 * within a strict budget (default 25 ms, raised to twice the measured round
 * trip of the flush rounds up to probe_budget_max_ns). Not granted, or past
 * the budget: the call is refused; but from the second lease request in a
 * row that got no answer in time, until one does, the probe goes ahead (a
 * slow store is no evidence against the dependency). This is the only call
 * that may touch Redis inline.
 * The scope is the breaker's, not the function's: a breaker attached here
 * takes leases on every path (breaker_acquire()/breaker_complete() called
 * directly, through a registry made on breaker_redis_backend(), through
 * breaker_executor_run(), through `breaker exec --redis`). Its closed calls
 * and open refusals run the same instructions as a local breaker's.
 *
 * Degraded mode: when Redis cannot be reached, is slow or answers errors, the
 * fleet is degraded within one interval: every name behaves as its local
 * breaker alone (its own window and probe limit), breaker_redis_degraded()
 * says so and on_degraded is called; the first good flush rejoins.
 * Degradation is per name: a name whose call failed in the last round (its
 * node failed or answered an error) is its local breaker alone until a
 * round answers it, while the others keep the fleet: with one Redis every
 * name at once; in a Redis Cluster (cluster_nodes) the names of a failed
 * master, the other masters answering. breaker_redis_degraded() and
 * on_degraded tell whether any name is. With
 * BREAKER_REDIS_FAIL_CLOSED, calls are refused instead once the fleet view
 * (the name's own) is older than stale_after_ns: the flusher trips every
 * such closed local breaker
 * (reason BREAKER_REASON_OUTSIDE_TRIP) at the end of the first round that
 * finds the view that old, and no probe is admitted while it stays so; the
 * first good round closes those breakers again if the fleet is closed. A
 * name attached after a failed round starts tripped (breaker_redis_attach());
 * one a registry opens, or attached before the first round, is decided by
 * the round it wakes (its calls admitted until then, io_timeout_ns at most),
 * since no event may run under the registry's lock.
 *
 * Fork. A handle belongs to the process that opened it. A child of fork()
 * has a copy of it without its flusher thread, with its locks as they
 * were at the fork (one may be held for good) and with the parent's
 * connections: it must not call anything on the handle, nor on a breaker
 * attached through it, not even breaker_redis_close() (whose join and last
 * round would hang or write into the parent's connections). It may exec
 * or exit (no handler of the library runs then), and open a handle of its
 * own, which works as any. The parent's handle is unaffected by the child;
 * its connections and wake pipe are close-on-exec, so a program the child
 * runs gets none of them.
 *
 * Linking. libbreaker_redis links libbreaker (static or shared alike) and
 * drives its breakers through the experimental seam of breaker/backend.h:
 * a program links both, and there is one copy of the core.
 */
#ifndef BREAKER_REDIS_H
#define BREAKER_REDIS_H

#include <breaker.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct breaker_redis breaker_redis; /* opaque */
typedef struct breaker_store breaker_store; /* breaker/store.h */

/* What a host does while it has no recent fleet view (degraded). */
enum breaker_redis_fail_mode {
    BREAKER_REDIS_FAIL_LOCAL = 0, /* default: each local breaker alone */
    BREAKER_REDIS_FAIL_CLOSED = 1 /* refuse calls (REJECTED_OPEN) once the last
                                     good flush is older than stale_after_ns */
};

/* Whether a fleet handle is degraded, and why (breaker_redis_degraded(),
 * on_degraded's `degraded`, breaker_redis_stats.degraded). */
enum breaker_redis_degraded_cause {
    BREAKER_REDIS_JOINED = 0, /* not degraded: the fleet answers */
    /* Redis is down, slow, unreachable, or answered an error that a
     * later round may not see (READONLY during a failover, OOM, BUSY, a
     * corrupt state rebuilt): the handle rejoins by itself. */
    BREAKER_REDIS_DEGRADED = 1,
    /* A configuration error, which no wait heals: the server refused the
     * credentials (WRONGPASS, NOAUTH, a password sent to a server without
     * one), the ACL user lacks a command or key the fleet needs (NOPERM;
     * a script's inner call refused), the server lacks a command (EVALSHA
     * disabled or renamed, SELECT or CLUSTER in the wrong mode, a db out
     * of range), the TLS handshake failed on a certificate (not trusted,
     * expired, another name, one asked of the client) or on TLS itself
     * (the server does not speak it), or the Sentinels know no master of
     * that name. The handle goes on as for DEGRADED (each name its local
     * breaker alone, or FAIL_CLOSED's refusals), and rejoins when a round
     * succeeds after someone fixed it; but a one-shot caller should stop
     * rather than run with no fleet (`breaker exec --redis` exits 78). */
    BREAKER_REDIS_MISCONFIGURED = 2
};

/* Called on the flusher thread (or the thread in breaker_redis_flush(), or
 * in breaker_redis_close(), which makes a last round) after the first flush
 * round (degraded: BREAKER_REDIS_DEGRADED or _MISCONFIGURED with what
 * failed, or BREAKER_REDIS_JOINED), then each time the fleet becomes
 * degraded (`why` says what failed), changes cause while degraded (an
 * outage that turns out to be a refused password, or the reverse), and
 * rejoins (BREAKER_REDIS_JOINED, why ""). `degraded` is an enum
 * breaker_redis_degraded_cause: nonzero means degraded. `why` lives for
 * the call. It must not call breaker_redis_close() or breaker_redis_flush(). */
typedef void breaker_redis_degraded_fn(void *ctx, int degraded, const char *why);

typedef struct breaker_redis_config breaker_redis_config;
struct breaker_redis_config {
    const char *host;           /* TCP host: NULL = "127.0.0.1" */
    int port;                   /* TCP port: 0 = 6379 */
    const char *unix_path;      /* non-NULL: connect to this unix socket instead */
    const char *password;       /* NULL = no AUTH */
    int db;                     /* SELECT db: 0..15 (or the server's limit) */
    uint64_t flush_interval_ns; /* 0 = 250 ms; each wait is jittered by +-20% */
    uint64_t probe_budget_ns;   /* the inline lease request's least budget: 0 = 25 ms
                                   (probe_budget_max_ns: how far it follows the RTT) */
    uint64_t io_timeout_ns;     /* the flusher's connect and reply timeout:
                                   0 = half the flush interval */
    uint64_t key_ttl_ns;        /* Redis keys of a name expire after this long
                                   without a flush script: 0 = 1 hour (each host
                                   sends a name's at least every half of it) */
    enum breaker_redis_fail_mode fail_mode;
    uint64_t stale_after_ns;                /* FAIL_CLOSED: 0 = 4 flush intervals */
    uint32_t max_names;                     /* names one handle may attach: 0 = 256 */
    breaker_redis_degraded_fn *on_degraded; /* NULL = none */
    void *degraded_ctx;
    /* The cap of the inline lease request's budget, which follows the
     * measured round trip of the flush rounds: budget = twice the smoothed
     * round trip, at least probe_budget_ns, at most this. 0 = 4 x
     * probe_budget_ns, but no more than io_timeout_ns (a round slower than
     * that degrades the handle); probe_budget_ns here = a fixed budget. */
    uint64_t probe_budget_max_ns;
    /* An ACL user (Redis 6+): every connection sends AUTH username password
     * (`password` required). NULL = the default user: AUTH password alone,
     * or no AUTH. The user needs the grant of BREAKER_REDIS_ACL_RULES
     * (below); an ACL that refuses one of them reports a configuration
     * error (BREAKER_REDIS_MISCONFIGURED, the reason names it). */
    const char *username;
    /* A Redis Cluster instead of one Redis: a comma-separated list of some
     * of its nodes, "host:port,host:port" ("[v6addr]:port" too), at most 64,
     * from which the flusher reads the slot map (CLUSTER SLOTS); host, port
     * and unix_path are then ignored but unix_path must be NULL, and db must
     * be 0 (a Cluster has one database). Each name's calls go to the master
     * of its slot (its keys share the hash tag {name}); a round sends one
     * pipeline per master, every master written before any is read, and
     * follows MOVED (the map updated) and ASK (ASKING, the map unchanged)
     * within the round while io_timeout_ns allows; a failed node, or a
     * MOVED, has the map read again. AUTH (username, password) and the
     * scripts go to every node. NULL = one Redis. docs/fleet.md, "Redis
     * Cluster". */
    const char *cluster_nodes;
    /* The cadence of a healthy name (docs/fleet.md, "Cost"): its
     * successes go to the fleet every this many rounds, fewer where that
     * would hold back more than 1/20 of the name's window (this many
     * rounds of the interval + its 20% jitter: at most window_ns / 20) or
     * last more than half of key_ttl_ns. 0 = 16 (10 for the default 60 s
     * window at 250 ms); 1 = the flush script every round (no cheap
     * round); at most 1000.
     * A name is healthy while it has no failure, slow call, probe or lease
     * result to send and its local breaker and the fleet (at its last
     * answer) are not HALF_OPEN. Each round of a healthy name is then one
     * of:
     *  - a version read: one HMGET of three fields of its state (no
     *    script, no TIME). Every fleet transition is a new generation and
     *    every control change a new version, so a trip, a close or a
     *    control change made by anyone reaches the host at its next round:
     *    when the version moved, the state is read whole (the control
     *    script's read) in the same round. A host's view of the fleet
     *    thus stays at most one flush interval (plus the round's time)
     *    old, as staleness_ns reports;
     *  - every this many rounds, a credit instead (in the handle's rounds
     *    whose number is a multiple of it, so that the names of one
     *    cadence send together): the credit script adds the successes held
     *    back to the fleet window with a few Redis calls per name, without
     *    the flush script's read and checks of the whole state, when the
     *    fleet is CLOSED in the generation the host knows, no forced state
     *    is in force, the policy is a window and the window holds no
     *    failure or slow call (successes alone can then trip nothing).
     *    One script call carries the credits of up to 12 of the round's
     *    names of a single Redis (BREAKER_REDIS_COMMAND_ARGS_MAX arguments;
     *    one per name on a Cluster, whose nodes refuse keys of several
     *    slots in one command). A name whose credit was not
     *    counted sends them with the flush script in the same round.
     * Successes therefore reach the fleet window at most this many rounds
     * late (at most 1/20 of the window); a failure or slow call goes at
     * the name's next round, whatever the cadence, with every success held
     * back, so a trip is never delayed by it (nor a CONSECUTIVE policy's
     * run: its successes go with the flush script, at once while the fleet
     * has a run). Each host also sends each name the flush script at least
     * every half of key_ttl_ns (it alone refreshes the keys' TTL). A credit
     * whose reply is lost (a connection cut) loses its successes, never
     * counts them twice: it is not sent again. */
    uint32_t full_flush_rounds;
    /* One flusher per host (docs/fleet.md, "One flusher per host"): a store
     * file (breaker/store.h, opened by the caller, not owned: close it after
     * breaker_redis_close()) through which every name is attached, so that
     * the processes of the host share one breaker per name; and for each
     * name one process of the host that attached it, the holder of a kernel
     * lock on the name's byte of the file (taken over at another process's
     * next round when its holder dies, closes or detaches the name; kept
     * while it is stopped, when the others go degraded for the name after
     * 2 x (flush_interval_ns + io_timeout_ns) until it resumes), flushes
     * the host breaker's deltas and applies the fleet's answers to it for
     * every process. The others send only their probes' lease requests and
     * results. Redis then runs one flush per host and name, not per
     * process. Every process of the host must use the same Redis and the
     * same file. NULL = this process flushes its own breakers (one flusher
     * per process). */
    breaker_store *store;
    /* TLS (docs/redis-production.md, "TLS"): nonzero = every connection
     * (to the Redis, a Cluster's nodes, the Sentinels) speaks TLS, through
     * hiredis's hiredis_ssl over OpenSSL, TLS 1.2 or later; unix_path must
     * then be NULL (Redis speaks TLS on TCP only). A build without TLS
     * (hiredis older than 1.0, or its hiredis_ssl not found) refuses it:
     * BREAKER_EINVAL, "this build has no TLS". The server's certificate is
     * verified unless tls_no_verify: a failed verification (not signed by
     * the CA, expired, for another name), a certificate the server asks of
     * the client and does not get, or a server that does not speak TLS is
     * a configuration error (BREAKER_REDIS_MISCONFIGURED, the reason names
     * the cause). The files are read at open: one that cannot be read, or
     * a key that is not the certificate's, is BREAKER_EINVAL naming the
     * field. */
    int tls;
    /* The CAs that verify the server: a PEM file, a directory of hashed
     * certificates (openssl rehash), or both. Both NULL: the system's
     * (OpenSSL's default paths). */
    const char *tls_ca_file;
    const char *tls_ca_dir;
    /* A client certificate (PEM, with its chain) and its private key, for
     * a server that asks for one (tls-auth-clients): both or neither. */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* The name the server's certificate must carry (a DNS name in its
     * subjectAltName, or an IP address), also sent as SNI. NULL: the
     * address connected to, as configured or as a Cluster or the
     * Sentinels named it (often an IP address: set this when the
     * certificates carry a DNS name). */
    const char *tls_server_name;
    /* Nonzero: the server's certificate is not verified (encrypted, not
     * authenticated: a test bench only). 0 (the default): verified. */
    int tls_no_verify;
    /* Redis Sentinel instead of one address (docs/redis-production.md,
     * "Sentinel"): a comma-separated list of Sentinels, "host:port,..."
     * ("[v6addr]:port" too), at most 64, and the name of the master they
     * watch (`sentinel monitor NAME ...`). host, port and unix_path are then
     * ignored (unix_path must be NULL), and cluster_nodes must be NULL. The
     * flusher asks the Sentinels in turn for the master's address
     * (SENTINEL get-master-addr-by-name, within io_timeout_ns), keeps a
     * connection to the one that answered subscribed to +switch-master,
     * and asks again when it announces a failover of this master (read at
     * the next round), when the master fails (a connection lost or timed
     * out, a refusal) or answers READONLY (a demoted master): a command
     * that got READONLY is sent to the new master within the same round.
     * The handle is degraded only while no master answers; a name no
     * Sentinel knows is a configuration error. AUTH, TLS and the scripts
     * go to each master as to one Redis. */
    const char *sentinel_nodes;
    const char *sentinel_master;
    /* The Sentinels' own AUTH (their requirepass, or an ACL user of
     * theirs, with sentinel_password): NULL = none. The master's are
     * username and password. */
    const char *sentinel_username;
    const char *sentinel_password;
};

/* The least an ACL user of the fleet needs (Redis 6.0+, Valkey): its keys
 * and the commands the client and the scripts run (Redis checks a script's
 * inner calls against the caller's ACL too). As one line to paste into
 * redis-cli (docs/redis-production.md, "ACL"):
 *
 *   ACL SETUSER breaker reset on >PASSWORD ~breaker:v2:* +time +evalsha
 *     +eval +script|load +hget +hmget +hset +hdel +hincrby +hgetall +hscan +del
 *     +pexpire +type +zadd +zcard +zrange +zrangebyscore +zrem +zscore
 *
 * (BREAKER_REDIS_ACL_RULES after "on >PASSWORD"), plus, with db other
 * than 0, +select; with cluster_nodes, BREAKER_REDIS_ACL_CLUSTER_RULES, on
 * every node (a Cluster's ACLs are per node). A test creates exactly this
 * user and runs trips, probes, orders, shadow mode and limits through it. */
#define BREAKER_REDIS_ACL_RULES                                                         \
    "~breaker:v2:* +time +evalsha +eval +script|load +hget +hmget +hset +hdel "         \
    "+hincrby +hgetall +hscan +del +pexpire +type +zadd +zcard +zrange +zrangebyscore " \
    "+zrem +zscore"
#define BREAKER_REDIS_ACL_CLUSTER_RULES "+cluster|slots +asking"

/*! breaker_redis_config_init() : clear `cfg`, then the defaults above. */
BREAKER_API void breaker_redis_config_init(breaker_redis_config *cfg) BREAKER_NONNULL(1);

/*! breaker_redis_open() :
 *  Make a fleet handle for the Redis `cfg` names and start its flusher
 *  thread (joined by breaker_redis_close()). Redis need not be up: the
 *  handle starts degraded and joins when Redis answers.
 *  @return BREAKER_OK with `*out`; BREAKER_EINVAL (a bad field, named in
 *  `msg`); BREAKER_ENOMEM; BREAKER_EIO (the thread could not start). */
BREAKER_API BREAKER_NODISCARD int breaker_redis_open(const breaker_redis_config *cfg,
                                                     breaker_redis **out, char *msg, size_t msg_len)
    BREAKER_NONNULL(1, 2);

/*! breaker_redis_close() : stop and join the flusher, make one last flush
 *  round (unless the fleet is degraded; at most io_timeout_ns), so that a
 *  short-lived process's evidence and probe results reach the fleet, then
 *  destroy every breaker attached through `fleet` and free it. No call on
 *  those breakers may run concurrently or follow. Leases still held expire
 *  at their deadlines. NULL is a no-op. */
BREAKER_API void breaker_redis_close(breaker_redis *fleet);

/*! breaker_redis_attach() :
 *  A local breaker for `name` (breaker_name_validate()) made from `cfg`
 *  (NULL: defaults), backed by the fleet. The fleet's limits (min_calls,
 *  failure_rate, slow_call_rate, window_ns and window_buckets as a time
 *  window, or failure_threshold with a CONSECUTIVE `trip`; the open wait and
 *  its backoff and jitter, half_open_max_probes, half_open_successes,
 *  probe_timeout_ns) are the first attacher's, stored in Redis: they win.
 *  Attach reads them in one round trip (at most io_timeout_ns; skipped
 *  while the last flush failed): asked with other limits, the local breaker
 *  is made with the stored ones and BREAKER_CONFIG_DIFFERS says so (the
 *  handle is attached). The handle belongs to `fleet`
 *  (breaker_redis_detach(), or breaker_redis_close() destroys it); use it
 *  with breaker_acquire()/breaker_complete() (its probes take fleet leases)
 *  and any function of breaker.h but breaker_destroy(). Not for the call
 *  path.
 *  @return BREAKER_OK; BREAKER_CONFIG_DIFFERS (attached, to the stored
 *  limits); BREAKER_EINVAL (bad name or configuration, or the name is
 *  attached already); BREAKER_REGISTRY_FULL (max_names reached);
 *  BREAKER_ENOMEM. */
BREAKER_API BREAKER_NODISCARD int breaker_redis_attach(breaker_redis *fleet, const char *name,
                                                       const breaker_config *cfg, breaker **out,
                                                       char *msg, size_t msg_len)
    BREAKER_NONNULL(1, 2, 4);

/*! breaker_redis_detach() :
 *  Give back `b` (attached through `fleet`) before breaker_redis_close():
 *  the local breaker is destroyed; the name's fleet state stays in Redis for
 *  the other hosts, and a later breaker_redis_attach() of the name attaches
 *  to it again. Deltas counted since the last flush are not sent; leased
 *  probes' results already completed still are. No call on `b` may run
 *  concurrently or follow. Waits for a flush round in progress.
 *  @return BREAKER_OK; BREAKER_EINVAL (`b` is not attached through `fleet`). */
BREAKER_API int breaker_redis_detach(breaker_redis *fleet, breaker *b) BREAKER_NONNULL(1, 2);

/* ---- The fleet's controls: one record per name -----------------------------------
 * breaker_force_open(), breaker_reset() and the other controls of breaker.h
 * act on one host's local breaker: a forced state stays until this host's
 * operator ends it; a reset or a timed open of an unforced breaker lasts
 * until the next round, which follows the fleet again. These act on the
 * whole fleet. Redis keeps, per name, one control record:
 * the operators' desired state (forced open or closed and until when,
 * shadow mode, the limits), under one version, with who changed it, why and
 * when. Every host converges to it each round: it compares the record with
 * its local breaker and changes only what differs (a forced state through
 * breaker_control_apply(), whose event, and a registry's history, carry the
 * record's who and why; shadow mode through breaker_set_shadow(); the
 * limits through breaker_reconfigure(), fenced by the local configuration
 * generation, so a local change made meanwhile is never written over).
 * Level-triggered: a host that missed a change, took over a name, or
 * attached late reaches the same state, and a host that applies a record
 * twice changes nothing; a forced state the record gave a host is released
 * (a reset, saying "the fleet's control record forces nothing") when the
 * record no longer holds it, e.g. a state Redis made anew after losing it,
 * whose record is version 1, forcing nothing. A reset is no state but a point in the fleet's
 * history: a new generation (CLOSED, empty window, no failed recoveries, no
 * forced state), which each host whose breaker is older than it applies
 * once (breaker_reset(); with a store file, once per host, whichever of
 * its processes flushes the name or dies while applying it); a breaker
 * made after it is of a later period (a breaker attached while Redis did
 * not answer tells by the reset's age on Redis's clock against its own:
 * within the clocks' difference of its attach, a reset may be taken either
 * way).
 * While the fleet is forced open no probe lease is granted; while it is
 * forced closed, the hosts' deltas are neither counted nor trip it. Every
 * live host reaches a change within two flush intervals of the call
 * (docs/fleet.md, "Controls"). */
#define BREAKER_REDIS_WHO_MAX BREAKER_WHO_MAX /* 64, the core's (breaker.h) */
#define BREAKER_REDIS_WHY_MAX BREAKER_WHY_MAX /* 200 */

/* What a control changes (breaker_redis_control.set). */
#define BREAKER_REDIS_SET_FORCED 1u /* `forced` and `for_ns` */
#define BREAKER_REDIS_SET_SHADOW 2u /* `shadow` */
#define BREAKER_REDIS_SET_LIMITS 4u /* the stored fields of `limits` */
#define BREAKER_REDIS_RESET      8u /* a reset, before the other changes */

/* A change of the control record. Fill with breaker_redis_control_init(). */
typedef struct breaker_redis_control breaker_redis_control;
struct breaker_redis_control {
    unsigned set; /* BREAKER_REDIS_SET_* and BREAKER_REDIS_RESET, or-ed */
    /* SET_FORCED: BREAKER_FORCED_OPEN, every host refuses every call (its
     * local breaker forced open) and no lease is granted; with for_ns a
     * timed open instead: OPEN until then (breaker_open_for(), reason
     * OPERATOR), then the fleet probes as after any wait.
     * BREAKER_FORCED_CLOSED: every host admits every call and never trips
     * (breaker_force_closed(), or with for_ns breaker_force_closed_for():
     * then back to CLOSED with an empty window). A reset ends either. */
    enum breaker_state forced;
    uint64_t for_ns; /* 0: no end; else 1 ms .. 365 days */
    int shadow;      /* SET_SHADOW: 1 on (every host counts what it would
                        refuse, refusing nothing: breaker_set_shadow()), 0 off */
    /* SET_LIMITS: a full configuration (start from
     * breaker_redis_control_get()'s), of which the fleet stores min_calls,
     * failure_rate, slow_call_rate, window_ns, window_buckets, open_ns,
     * open_backoff, open_max_ns, open_jitter, half_open_max_probes,
     * half_open_successes, probe_timeout_ns, failure_threshold (a
     * CONSECUTIVE trip) and min_failing_sources; its other fields are each
     * host's own. What cannot change live is refused, named: the window,
     * window_buckets, the trip policy, half_open_max_probes. A running open
     * wait, a half-open's successes and its leases' deadlines are brought
     * within the new limits (a host whose local wait then ends far later
     * than the fleet's is opened again until the fleet's end), and a
     * half-open whose successes meet the new half_open_successes with no
     * lease out closes. A host whose local breaker refuses them keeps its
     * own (breaker_redis_stats.reconfigs_refused), and is not asked again
     * for that record (its state's born and version: a state made anew is
     * another record from version 1). */
    breaker_config limits;
    /* 0: change whatever the record is; else the version read
     * (breaker_redis_control_get()): BREAKER_STALE if it moved since. */
    uint64_t expect_version;
    const char *who; /* NULL or "": none; at most BREAKER_REDIS_WHO_MAX bytes of printable text */
    const char *why; /* at most BREAKER_REDIS_WHY_MAX bytes */
};

/*! breaker_redis_control_init() : clear `c`: nothing set, no text. */
BREAKER_API void breaker_redis_control_init(breaker_redis_control *c) BREAKER_NONNULL(1);

/*! breaker_redis_control_apply() :
 *  Change the control record of `name` (attached through `fleet`): one
 *  script, one round trip on the calling thread (at most io_timeout_ns; not
 *  under any lock of a breaker: never call it from an event listener of
 *  the flusher's thread). A change to what is in force already writes
 *  nothing (the version, who and why stay). This handle's flusher is woken
 *  for its own breaker; the other hosts converge at their next round.
 *  Thread-safe. @return BREAKER_OK once Redis stored it (or it was in force
 *  already); BREAKER_STALE (expect_version moved: read again);
 *  BREAKER_EINVAL with `msg` naming the field (not attached, nothing set,
 *  forced not FORCED_OPEN or FORCED_CLOSED, for_ns out of range, an invalid
 *  configuration or one that cannot change live, who or why too long or
 *  not printable); BREAKER_EIO with `msg` (Redis unreachable or refused). */
BREAKER_API int breaker_redis_control_apply(breaker_redis *fleet, const char *name,
                                            const breaker_redis_control *c, char *msg,
                                            size_t msg_len) BREAKER_NONNULL(1, 2, 3);

/* The control record of a name, as breaker_redis_control_get() read it. */
typedef struct breaker_redis_control_state breaker_redis_control_state;
struct breaker_redis_control_state {
    uint64_t version; /* 1: as the name's state was made (the first attacher's limits,
                         nothing forced); +1 per change */
    /* The forced state in force: BREAKER_CLOSED (none, or its time ran
     * out), BREAKER_FORCED_OPEN, BREAKER_OPEN (a timed open) or
     * BREAKER_FORCED_CLOSED; and its time left (0: no end). */
    enum breaker_state forced;
    uint64_t left_ns;
    int shadow;
    uint64_t reset_generation; /* the fleet generation the last reset made (0: none) */
    /* The caller's local breaker's configuration with the stored fields
     * replaced: change what you need, pass it in breaker_redis_control.limits. */
    breaker_config limits;
    char who[BREAKER_REDIS_WHO_MAX + 1]; /* the last change's (empty: none) */
    char why[BREAKER_REDIS_WHY_MAX + 1];
    uint64_t age_ns; /* since the last change */
};

/*! breaker_redis_control_get() :
 *  Read the control record of `name` (attached through `fleet`): one round
 *  trip, which runs the control script with no change (a name with no state
 *  in Redis gets one, as at attach; a state with a field out of range is
 *  rebuilt by that call, and the call fails naming the field). @return
 *  BREAKER_OK; BREAKER_EINVAL (not attached, or detached meanwhile and not
 *  attached again); BREAKER_EIO with `msg` (Redis unreachable; the field
 *  rebuilt). Thread-safe, also against a detach of `name` (a registry's
 *  eviction) on another thread: `limits` is read from the breaker attached
 *  when the answer came, under the handle's lock. */
BREAKER_API BREAKER_NODISCARD int breaker_redis_control_get(breaker_redis *fleet, const char *name,
                                                            breaker_redis_control_state *out,
                                                            char *msg, size_t msg_len)
    BREAKER_NONNULL(1, 2, 3);

/* A server-directed open (breaker_open_for(b, wait, BREAKER_REASON_SERVER_DIRECTED)
 * on a breaker attached here: a 429 or 503 with Retry-After) is the fleet's
 * too: the next flush sends what is left of the wait, and Redis opens the
 * fleet until then (capped at the stored open_max_ns; never a shorter wait
 * than one under way; not while the fleet is forced), so every host
 * refuses for what is left of it from its next round, then probes. */

/* How a fleet-backed breaker's calls go (breaker_acquire() and
 * breaker_complete() on it). In CLOSED and OPEN it is the local call: no
 * I/O, no lock. When the local breaker admits a probe and the fleet is not
 * degraded, Redis is asked for a fleet lease within probe_budget_ns; not
 * granted (the fleet is open, or its probes are all out), an error, or past
 * the budget: BREAKER_REJECTED_OPEN (the fleet is open) or
 * BREAKER_REJECTED_HALF_OPEN (the local probe slot is given back; counted
 * as a refusal).
 * While the fleet refused, later probes are refused locally until its
 * answer's retry time, with no I/O. A probe that holds a lease reports its
 * outcome to the fleet when completed (the flusher sends it at once, woken
 * by the completion): the fleet decides recovery, so locally a leased
 * SUCCESS is recorded as IGNORED (the local breaker closes when the fleet
 * does) and a FAILURE reopens the local breaker as well. */

/* The 0.x names of the call path, kept as aliases: breaker_acquire() and
 * breaker_complete() take the fleet's leases themselves now. To be removed
 * in 0.3 (CHANGELOG). */
typedef struct breaker_redis_permit breaker_redis_permit;
struct breaker_redis_permit {
    breaker_permit permit; /* the breaker's own permit */
    uint64_t opaque_[2];   /* unused */
};

/*! breaker_redis_acquire() : breaker_acquire(b, &p->permit); `fleet` is not
 *  needed. Deprecated alias. */
BREAKER_API BREAKER_NODISCARD int breaker_redis_acquire(breaker_redis *fleet, breaker *b,
                                                        breaker_redis_permit *p)
    BREAKER_NONNULL(1, 2, 3);

/*! breaker_redis_complete() : breaker_complete(b, &p->permit, outcome).
 *  Deprecated alias. */
BREAKER_API int breaker_redis_complete(breaker_redis *fleet, breaker *b, breaker_redis_permit *p,
                                       enum breaker_outcome outcome) BREAKER_NONNULL(1, 2, 3);

/*! breaker_redis_flush() :
 *  Make one flush round now, on this thread (serialised with the flusher's):
 *  send every name's deltas and lease results, apply the fleet states.
 *  For tests and for a final flush before close.
 *  @return BREAKER_OK, or BREAKER_EIO when Redis did not answer (the fleet is
 *  then degraded). Not for the call path. */
BREAKER_API int breaker_redis_flush(breaker_redis *fleet) BREAKER_NONNULL(1);

/*! breaker_redis_degraded() : @return nonzero while the fleet is degraded for
 *  some name (a call of the last flush failed, or none succeeded yet; in a
 *  Cluster, the names of the masters that failed), else 0
 *  (BREAKER_REDIS_JOINED). Nonzero is the cause, an enum
 *  breaker_redis_degraded_cause: BREAKER_REDIS_MISCONFIGURED when the last
 *  round's failure was a configuration error, else BREAKER_REDIS_DEGRADED
 *  (also before the first round). Lock-free. */
BREAKER_API int breaker_redis_degraded(breaker_redis *fleet) BREAKER_NONNULL(1);

/*! breaker_redis_backend() :
 *  `fleet` as a backend for breaker_registry_config.backend: a registry
 *  created with it makes each name it is asked for a breaker attached
 *  through `fleet` (as breaker_redis_attach() does; the registry's
 *  configuration for the name is the local one and, for the first host, the
 *  fleet's), so the processes and hosts whose registries use one Redis share
 *  each name's fleet state, and the registry's breakers take fleet leases
 *  for their probes like any attached breaker. Eviction detaches: the fleet
 *  state stays in Redis, the local breaker is freed (its deltas since the
 *  last flush are not sent) and a later get attaches again. The backend
 *  lives as long as `fleet`: destroy the registry before
 *  breaker_redis_close(). An eviction waits for a flush round in progress
 *  (at most io_timeout_ns).
 *  @return the backend; never NULL. */
BREAKER_API breaker_backend *breaker_redis_backend(breaker_redis *fleet) BREAKER_NONNULL(1);

/* Counters of one fleet handle since open. */
typedef struct breaker_redis_stats breaker_redis_stats;
struct breaker_redis_stats {
    uint64_t flushes;          /* flush rounds Redis answered */
    uint64_t flush_errors;     /* flush rounds that failed */
    uint64_t degraded_entered; /* times the handle became degraded */
    uint64_t leases_granted;   /* inline lease requests granted */
    uint64_t leases_refused;   /* refused by the fleet (open, or probes out) */
    uint64_t lease_errors;     /* errors or past the budget */
    uint64_t lease_gated;      /* probes refused locally after a fleet refusal */
    uint64_t outside_trips;    /* local breakers tripped by the fleet */
    uint64_t fleet_closes;     /* local breakers closed because the fleet closed */
    uint64_t staleness_ns;     /* age of the last good flush (UINT64_MAX: none) */
    /* breaker_redis_degraded(): 0, or the cause (enum breaker_redis_degraded_cause) */
    int degraded;
    uint64_t lease_local;     /* probes admitted without a fleet lease answered in time
                                 because the store is too slow for the budget
                                 (after two requests in a row unanswered) */
    uint64_t probe_budget_ns; /* the inline lease budget now (follows round_trip_ns) */
    uint64_t round_trip_ns;   /* smoothed round trip of the flush rounds (0: none yet) */
    uint64_t state_rebuilds;  /* fleet states Redis held corrupt (a field out of range, a
                                 part missing): refused, rebuilt with a new generation from
                                 local evidence, the round reported as an error (degraded) */
    /* Redis Cluster (cluster_nodes): calls sent again to another node because
     * their node answered MOVED (the slot map updated) or ASK (a slot being
     * migrated): a round's, and a lease request's (followed once, within its
     * budget, to a node the handle has a probe connection to). */
    uint64_t redirects_moved;
    uint64_t redirects_ask;
    /* Sentinel (sentinel_nodes): times the handle moved to another master
     * (a failover announced, or found by asking the Sentinels again). */
    uint64_t master_switches;
    /* With a store (breaker_redis_config.store): */
    int host_flusher;          /* names this process flushes for its host now */
    uint64_t host_takeovers;   /* names whose lock in the store file this process
                                  took (free: no holder yet, or one gone) */
    uint64_t host_rebaselines; /* names whose baseline in the store file could not be
                                  trusted (a value out of range, not a holder's):
                                  restarted from the counters now */
    /* The fleet's control record applied to this process's local breakers:
     * shadow mode turned on or off; stored limits taken; and refused by the
     * local breaker
     * (breaker_reconfigure()'s rules: it keeps its own limits). */
    uint64_t shadow_applied;
    uint64_t reconfigs_applied;
    uint64_t reconfigs_refused;
};

/*! breaker_redis_stats_get() : fill `out`. Lock-free. */
BREAKER_API void breaker_redis_stats_get(breaker_redis *fleet, breaker_redis_stats *out)
    BREAKER_NONNULL(1, 2);

/*! breaker_redis_export_prometheus() :
 *  The handle's counters in the Prometheus text format, for a scrape next to
 *  breaker_registry_export_prometheus(): breaker_fleet_view_age_seconds (the
 *  age of the host's fleet view: how stale its decisions may be; +Inf
 *  before the first good flush), breaker_fleet_degraded and its cause
 *  (breaker_fleet_degraded_cause{cause="outage"|"configuration"}), and counters of
 *  flushes, flush errors, degraded entries, lease requests by result,
 *  fleet trips and closes applied locally, corrupt states rebuilt, and
 *  Cluster redirections followed (breaker_fleet_redirects_total{kind}). Writes a NUL-terminated
 * text into `buf` (`cap` bytes) and returns BREAKER_OK with its length (without the NUL) in `*len`;
 * or BREAKER_ENOSPC with the size needed (NUL included) in
 *  `*len` and `buf` an empty string (when cap > 0). `len` may be NULL. Never
 *  truncates; thread-safe; independent of the C locale. */
BREAKER_API int breaker_redis_export_prometheus(breaker_redis *fleet, char *buf, size_t cap,
                                                size_t *len) BREAKER_NONNULL(1);

/* ---- The fleet as Redis holds it -------------------------------------------------
 * What every host shares, read from Redis without writing anything: for an
 * operator's view (`breaker status --redis`) or a monitor. */

/* One name's fleet state (breaker_redis_status()). */
typedef struct breaker_redis_name_status breaker_redis_name_status;
struct breaker_redis_name_status {
    char name[BREAKER_NAME_MAX + 1];
    /* "" when the state was read; else why it could not be (a field out of
     * its range: the next flush rebuilds it), and only `name` is set. */
    char problem[200];
    /* The fleet's state: CLOSED, OPEN or HALF_OPEN, or FORCED_OPEN /
     * FORCED_CLOSED while the control record forces it (OPEN with the
     * longer of the two waits while it holds a timed open). */
    enum breaker_state state;
    uint64_t generation;
    uint64_t wait_left_ns;      /* OPEN: the fleet's open wait left (Redis's clock); else 0 */
    uint32_t failed_recoveries; /* in a row, as the open wait's backoff counts them */
    uint32_t leases_out;        /* probe leases whose deadline is still ahead */
    /* Hosts that flushed the name within the reading handle's key_ttl_ns,
     * and the age of the latest flush (UINT64_MAX: none). */
    uint32_t hosts;
    uint64_t last_flush_age_ns;
    /* The control record (breaker_redis_control_get()'s answer, as Redis
     * holds it): version, forced state and its time left, shadow mode,
     * the last reset, who and why; the stored limits over the defaults of
     * breaker_config_init() (the fields the fleet does not store are
     * those). */
    breaker_redis_control_state control;
};

/* Called once per name by breaker_redis_status(), on its caller's thread,
 * with no lock held; `st` lives for the call. Nonzero stops the walk. */
typedef int breaker_redis_status_fn(void *ctx, const breaker_redis_name_status *st);

/*! breaker_redis_status() :
 *  Read `name`'s fleet state from Redis (NULL: every name the fleet holds
 *  there, found by SCAN on each server, a Cluster's every master; each
 *  once, by name) and call `each` for it. Nothing is written: no name is
 *  attached, no host is recorded. Each round trip is bounded by
 *  io_timeout_ns; names found but gone before they are read are left out.
 *  An ACL user needs +scan beside the grant of BREAKER_REDIS_ACL_RULES
 *  (docs/redis-production.md). Not from the fleet's own callbacks.
 *  Thread-safe.
 *  @return BREAKER_OK (also when `each` stopped it); BREAKER_EINVAL (a bad
 *  `name`); BREAKER_ENOMEM; BREAKER_EIO with `msg` (Redis did not answer,
 *  or refused: `name` not in Redis is BREAKER_EIO, "no fleet state"). */
BREAKER_API BREAKER_NODISCARD int breaker_redis_status(breaker_redis *fleet, const char *name,
                                                       breaker_redis_status_fn *each, void *ctx,
                                                       char *msg, size_t msg_len)
    BREAKER_NONNULL(1, 3);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_REDIS_H */
