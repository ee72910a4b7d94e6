/* SPDX-License-Identifier: MIT */
/*
 * fleet.c - the fleet store's handle (include/breaker/redis.h,
 * docs/fleet.md): open and close (the flusher thread's start and last
 * round), attach and detach of names (the stored limits adopted at
 * attach), the backend a registry makes its breakers through, and the
 * handle's statistics and their Prometheus export. client.h says how the
 * client's other files divide the rest: the decisions (protocol.c), the
 * commands (calls.c), the flush rounds (flush.c), the probe gate's leases
 * (lease.c) and one flusher per host (host.c), and which thread touches
 * what; the I/O is the transport's (hiredis/, or the one given to
 * breaker_redis_open_transport()).
 */
#define _POSIX_C_SOURCE 200809L /* pipe */

#include "store/redis/client.h"
#include "store/redis/scripts.h"

#include "common/message.h"
#include "common/splitmix.h"
#include "common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_FLUSH_NS        (250 * MS)
#define DEFAULT_PROBE_BUDGET_NS (25 * MS)
#define DEFAULT_TTL_NS          (3600ull * 1000 * MS)
#define DEFAULT_MAX_NAMES       256u

static const breaker_backend_ops backend_ops;

void breaker_redis_config_init(breaker_redis_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->port = 6379;
    cfg->flush_interval_ns = DEFAULT_FLUSH_NS;
    cfg->probe_budget_ns = DEFAULT_PROBE_BUDGET_NS;
    cfg->key_ttl_ns = DEFAULT_TTL_NS;
    cfg->max_names = DEFAULT_MAX_NAMES;
}

/* ---- Open and close -------------------------------------------------------------*/

int breaker__redis_check_config(const breaker_redis_config *cfg, char *msg, size_t msg_len) {
    if (cfg->unix_path == NULL && (cfg->port < 0 || cfg->port > 65535))
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "port: must be 0..65535 (got %d)",
                             cfg->port);
    if (cfg->db < 0)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "db: must be >= 0 (got %d)", cfg->db);
    if (cfg->username != NULL && cfg->password == NULL)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "username: an ACL user needs a password (AUTH username password)");
    if (cfg->username != NULL && cfg->username[0] == '\0')
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "username: empty (NULL for the default user)");
    if (cfg->fail_mode != BREAKER_REDIS_FAIL_LOCAL && cfg->fail_mode != BREAKER_REDIS_FAIL_CLOSED)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "fail_mode: must be BREAKER_REDIS_FAIL_LOCAL or _CLOSED (got %d)",
                             (int)cfg->fail_mode);
    if (cfg->key_ttl_ns != 0 && cfg->key_ttl_ns < 1000 * MS)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "key_ttl_ns: must be 0 or >= 1 s");
    if (cfg->flush_interval_ns != 0 && cfg->flush_interval_ns < MS)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "flush_interval_ns: must be 0 or >= 1 ms");
    if (cfg->full_flush_rounds > 1000)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "full_flush_rounds: must be 0..1000 (got %u)",
                             (unsigned)cfg->full_flush_rounds);
    uint64_t budget = cfg->probe_budget_ns ? cfg->probe_budget_ns : DEFAULT_PROBE_BUDGET_NS;
    if (cfg->probe_budget_max_ns != 0 && cfg->probe_budget_max_ns < budget)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "probe_budget_max_ns: must be 0 or >= probe_budget_ns (%llu ns, got "
                             "%llu ns)",
                             (unsigned long long)budget,
                             (unsigned long long)cfg->probe_budget_max_ns);
    return BREAKER_OK;
}

void breaker__redis_apply_defaults(breaker_redis_config *c) {
    if (c->port == 0) c->port = 6379;
    if (c->flush_interval_ns == 0) c->flush_interval_ns = DEFAULT_FLUSH_NS;
    if (c->probe_budget_ns == 0) c->probe_budget_ns = DEFAULT_PROBE_BUDGET_NS;
    if (c->io_timeout_ns == 0) c->io_timeout_ns = c->flush_interval_ns / 2;
    if (c->key_ttl_ns == 0) c->key_ttl_ns = DEFAULT_TTL_NS;
    if (c->stale_after_ns == 0) c->stale_after_ns = 4 * c->flush_interval_ns;
    if (c->full_flush_rounds == 0) c->full_flush_rounds = BREAKER__FLEET_FULL_ROUNDS;
    c->full_flush_rounds =
        breaker__fleet_ttl_rounds(c->full_flush_rounds, c->flush_interval_ns, c->key_ttl_ns);
    if (c->probe_budget_max_ns == 0) {
        uint64_t cap = c->probe_budget_ns > UINT64_MAX / 4 ? UINT64_MAX : 4 * c->probe_budget_ns;
        if (cap > c->io_timeout_ns) cap = c->io_timeout_ns;
        c->probe_budget_max_ns = cap < c->probe_budget_ns ? c->probe_budget_ns : cap;
    }
}

int breaker_redis_open_transport(const breaker_redis_config *cfg,
                                 const breaker_redis_transport_ops *ops, void *t, unsigned flags,
                                 breaker_redis **out, char *msg, size_t msg_len) {
    *out = NULL;
    int rc = breaker__redis_check_config(cfg, msg, msg_len);
    if (rc != BREAKER_OK || flags > BREAKER_REDIS_NO_FLUSHER) {
        if (ops->destroy != NULL) ops->destroy(t);
        return rc != BREAKER_OK
                   ? rc
                   : breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                   "flags: BREAKER_REDIS_NO_FLUSHER or 0 (got %u)", flags);
    }
    breaker_redis *f = calloc(1, sizeof *f);
    if (f == NULL) {
        if (ops->destroy != NULL) ops->destroy(t);
        return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
    }
    f->io = ops;
    f->io_ctx = t;
    f->cfg = *cfg;
    /* The transport keeps what it needs of the connection fields; none
     * outlives this call here. */
    f->cfg.host = f->cfg.unix_path = f->cfg.password = f->cfg.username = NULL;
    f->cfg.cluster_nodes = NULL;
    f->cfg.tls_ca_file = f->cfg.tls_ca_dir = f->cfg.tls_cert_file = f->cfg.tls_key_file = NULL;
    f->cfg.tls_server_name = NULL;
    f->cfg.sentinel_nodes = f->cfg.sentinel_master = NULL;
    f->cfg.sentinel_username = f->cfg.sentinel_password = NULL;
    breaker__redis_apply_defaults(&f->cfg);
    f->backend.ops = &backend_ops;
    f->backend.ctx = f;
    f->max_names = f->cfg.max_names ? f->cfg.max_names : DEFAULT_MAX_NAMES;
    breaker__fleet_ttl_text(f->cfg.key_ttl_ns, f->ttl);
    f->entries = calloc(f->max_names, sizeof *f->entries);
    f->actions = calloc(f->max_names, sizeof *f->actions);
    f->wake[0] = f->wake[1] = -1;
    if (f->entries == NULL || f->actions == NULL) {
        breaker_redis_close(f);
        return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
    }
    for (uint32_t i = 0; i < f->max_names; i++)
        breaker__fleet_controls_none(&f->actions[i].controls);
    uint64_t seed = breaker__redis_now(f) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)f;
    f->token_key = breaker__splitmix64_next(&seed);
    breaker__fleet_host_id(f->token_key, f->host_id);
    if (cfg->store != NULL &&
        (rc = breaker__redis_host_open(f, cfg->store, msg, msg_len)) != BREAKER_OK) {
        breaker_redis_close(f);
        return rc;
    }
    f->jitter_state = breaker__splitmix64_next(&seed);
    atomic_init(&f->degraded, 1);                             /* until the first good flush */
    atomic_init(&f->lease_budget_ns, f->cfg.probe_budget_ns); /* until a round is measured */
    f->announced = -1;
    pthread_mutex_init(&f->attach_mu, NULL);
    pthread_mutex_init(&f->apply_mu, NULL);
    pthread_mutex_init(&f->round_mu, NULL);
    pthread_mutex_init(&f->limits_mu, NULL);
    pthread_cond_init(&f->applied_cv, NULL);
    f->threaded = (flags & BREAKER_REDIS_NO_FLUSHER) == 0;
    /* Non-blocking (a full pipe holds a wake-up already), and not left to
     * a program a fork of the process runs. */
    if (pipe(f->wake) != 0 || fcntl(f->wake[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(f->wake[1], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(f->wake[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(f->wake[1], F_SETFD, FD_CLOEXEC) != 0 ||
        (f->threaded && pthread_create(&f->thread, NULL, breaker__redis_flusher_main, f) != 0)) {
        int err = errno;
        f->threaded = false;
        breaker_redis_close(f);
        return breaker__fail(BREAKER_EIO, msg, msg_len, "starting the flusher: %s", strerror(err));
    }
    *out = f;
    return BREAKER_OK;
}

void breaker_redis_close(breaker_redis *f) {
    if (f == NULL) return;
    if (f->wake[1] >= 0) {
        atomic_store_explicit(&f->stop, 1, memory_order_relaxed);
        breaker__redis_wake_flusher(f);
        if (f->threaded) pthread_join(f->thread, NULL);
        /* A last round, so a short-lived process's evidence and probe
         * results reach the fleet (not while degraded: Redis did not answer
         * the last round, and exiting should not wait for it again). */
        if (!breaker_redis_degraded(f)) (void)breaker_redis_flush(f);
        close(f->wake[0]);
        close(f->wake[1]);
        pthread_mutex_destroy(&f->attach_mu);
        pthread_mutex_destroy(&f->apply_mu);
        pthread_mutex_destroy(&f->round_mu);
        pthread_mutex_destroy(&f->limits_mu);
        pthread_cond_destroy(&f->applied_cv);
    } else {
        if (f->wake[0] >= 0) close(f->wake[0]);
    }
    breaker__redis_host_close(f); /* the host's other processes take over at their next round */
    uint32_t n = atomic_load_explicit(&f->count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        breaker_destroy(breaker__redis_entry_b(f->entries[i])); /* NULL when retired */
        free(f->entries[i]);
    }
    if (f->io->destroy != NULL) f->io->destroy(f->io_ctx);
    free(f->entries);
    free(f->actions);
    free(f->round_calls);
    free(f->round_cmds);
    free(f->round_replies);
    free(f->credit_argv);
    free(f);
}

/* Room in the round arrays for `names` names (their flushes and lease
 * results). Takes round_mu: a round in progress finishes first. */
static int grow_round(breaker_redis *f, uint32_t names) {
    /* Per name: its flush or read, the read of its state when that moved
     * (the round's second exchange: flush.c), its lease results. */
    size_t need = (size_t)names * (2 + LEASE_SLOTS);
    int ok = 1;
    pthread_mutex_lock(&f->round_mu);
    if (need > f->round_cap) {
        struct pending *p = realloc(f->round_calls, need * sizeof *p);
        if (p != NULL) f->round_calls = p;
        breaker_redis_command *c = realloc(f->round_cmds, need * sizeof *c);
        if (c != NULL) f->round_cmds = c;
        breaker_redis_reply **r = realloc(f->round_replies, need * sizeof *r);
        if (r != NULL) f->round_replies = r;
        /* The credits' arguments: 7 per name (flush.c, build_cmds()). */
        const char **a = realloc(f->credit_argv, (size_t)names * 7 * sizeof *a);
        if (a != NULL) f->credit_argv = a;
        if (p != NULL && c != NULL && r != NULL && a != NULL) {
            memset(p + f->round_cap, 0, (need - f->round_cap) * sizeof *p);
            memset(c + f->round_cap, 0, (need - f->round_cap) * sizeof *c);
            memset(r + f->round_cap, 0, (need - f->round_cap) * sizeof *r);
            f->round_cap = need;
        } else {
            ok = 0;
        }
    }
    pthread_mutex_unlock(&f->round_mu);
    return ok;
}

/* ---- Attach ----------------------------------------------------------------------*/

/* The local breaker for the name of `e` (a new entry: its name and keys
 * set), made once, from `cfg` (NULL: the defaults) with `owner` and the
 * fleet's probe gate: with the limits Redis holds for the name when it
 * holds other ones (the first attacher's: they win, as in a store file;
 * `*differs`). Its limits in `lim` (and as text in e->limits); the fleet's
 * state it is made in in `*armed` when `*answered`; the control record in
 * `*rec` when `*recorded`. @return BREAKER_OK, or an error with `msg`. */
static int make_local(breaker_redis *f, struct entry *e, const breaker_config *cfg,
                      const breaker_owner *owner, breaker **out, struct breaker__fleet_limits *lim,
                      bool *differs, struct breaker__fleet_answer *armed, bool *answered,
                      struct breaker__fleet_record *rec, bool *recorded, char *msg,
                      size_t msg_len) {
    *differs = false;
    /* The fleet's scope rides on the handle: its probes ask for leases. */
    const breaker_probe_gate gate = {.admit = breaker__redis_gate_admit,
                                     .settle = breaker__redis_gate_settle,
                                     .ctx = f,
                                     .flags = BREAKER_GATE_DECIDES_RECOVERY};
    breaker_config mine;
    if (cfg != NULL)
        breaker_config_effective(cfg, &mine);
    else
        breaker_config_init(&mine);
    breaker__fleet_limits_of(&mine, lim);
    breaker__fleet_limits_format(lim, e->limits, sizeof e->limits);
    /* Stored limits that are not limits (protocol.c says which field) are
     * ignored, as none: this host's own decide locally. */
    *recorded = breaker__redis_read_limits(f, e, rec, armed, answered);
    breaker_config use = mine;
    bool other = false;
    if (*recorded && breaker__fleet_limits_adopt(&rec->limits, &use, &other, NULL, 0) && other) {
        if (breaker_config_validate(&use, NULL, 0) == BREAKER_OK)
            *differs = true;
        else
            use = mine; /* stored limits this breaker cannot take: its own */
    }
    breaker *b = NULL;
    int rc;
    if (f->store != NULL) {
        /* The host's breaker: this process's handle on the name in the store
         * file, made with the fleet's limits when this process creates it;
         * one another process created keeps its own (they win). */
        rc = breaker__store_attach_bound(f->store, e->name, &use, owner, &gate, &b, msg, msg_len);
        if (rc == BREAKER_CONFIG_DIFFERS) *differs = true;
        if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS) return rc;
    } else {
        rc = breaker_create_bound(&use, owner, &gate, &b);
        if (rc != BREAKER_OK)
            return breaker__fail(rc, msg, msg_len, "creating the local breaker: %s",
                                 breaker_strerror(rc));
    }
    if (*differs) {
        breaker_get_config(b, &use);
        breaker__fleet_limits_of(&use, lim);
        breaker__fleet_limits_format(lim, e->limits, sizeof e->limits);
    }
    *out = b;
    return BREAKER_OK;
}

/* A new entry for `name`, its keys formatted (once: for the attach's read
 * and the rounds after). @return it, or NULL (out of memory). */
static struct entry *entry_new(const char *name) {
    struct entry *e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    snprintf(e->name, sizeof e->name, "%s", name);
    for (int i = 0; i < FLEET_KEY_COUNT; i++)
        breaker__fleet_key(name, i, e->key[i], sizeof e->key[i]);
    return e;
}

/* A name attached now starts as the handle stands (its first round then
 * says how its own node does). */
static void join_degraded(breaker_redis *f, struct entry *e) {
    atomic_store_explicit(&e->degraded, atomic_load_explicit(&f->degraded, memory_order_relaxed),
                          memory_order_relaxed);
    /* acquire/release: as the handle's view age (breaker__redis_view_too_old()). */
    atomic_store_explicit(&e->last_ok_ns,
                          atomic_load_explicit(&f->last_ok_ns, memory_order_acquire),
                          memory_order_release);
    e->failed_last = false;
}

/* A retired entry of the name, given the new local breaker `b` made in
 * the fleet's state `armed` (NULL: not known): its keys are right and its
 * lease slots may still hold results to send. Re-armed under round_mu, as
 * the flusher reads these fields. */
static void rearm(breaker_redis *f, struct entry *e, breaker *b,
                  const struct breaker__fleet_limits *lim,
                  const struct breaker__fleet_answer *armed,
                  const struct breaker__fleet_record *rec) {
    pthread_mutex_lock(&f->round_mu);
    e->lim = *lim;
    pthread_mutex_lock(&f->limits_mu); /* a probe of the old breaker may copy it */
    breaker__fleet_limits_format(lim, e->limits, sizeof e->limits);
    pthread_mutex_unlock(&f->limits_mu);
    breaker__redis_host_attached(f, e, b); /* the baseline: b's counters */
    breaker__fleet_follow_rearm(&e->follow, breaker__redis_now(f));
    breaker__fleet_follow_armed(&e->follow, armed);
    if (rec != NULL) breaker__fleet_record_keep(&e->follow, rec, breaker__redis_now(f));
    atomic_store_explicit(&e->gate_until_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&e->followed_gen, 0, memory_order_relaxed);
    join_degraded(f, e);
    atomic_store_explicit(&e->b, b, memory_order_relaxed); /* under round_mu */
    pthread_mutex_unlock(&f->round_mu);
}

/* Under attach_mu: the new entry `e` (entry_new()) for `b` (made in the
 * fleet's state `armed`, NULL: not known; with the control record `rec`,
 * NULL: none read), published to the flusher and to lookups.
 * @return BREAKER_OK, BREAKER_REGISTRY_FULL or BREAKER_ENOMEM (`e` is then
 * the caller's still). */
static int add_entry(breaker_redis *f, struct entry *e, breaker *b,
                     const struct breaker__fleet_limits *lim,
                     const struct breaker__fleet_answer *armed,
                     const struct breaker__fleet_record *rec) {
    uint32_t n = atomic_load_explicit(&f->count, memory_order_relaxed); /* under attach_mu */
    if (n >= f->max_names) return BREAKER_REGISTRY_FULL;
    if (!grow_round(f, n + 1)) return BREAKER_ENOMEM;
    atomic_init(&e->b, b);
    join_degraded(f, e);
    /* The baseline is b's counters; its evidence is of the generation it
     * was made in. */
    breaker__redis_host_attached(f, e, b);
    e->follow.attached_ns = breaker__redis_now(f);
    breaker__fleet_follow_armed(&e->follow, armed);
    if (rec != NULL) breaker__fleet_record_keep(&e->follow, rec, breaker__redis_now(f));
    e->lim = *lim;
    f->entries[n] = e;
    /* release: publishes the entry to the flusher and to lookups. */
    atomic_store_explicit(&f->count, n + 1, memory_order_release);
    return BREAKER_OK;
}

/* Under attach_mu: the retired entry of `name` to reuse (NULL: none), or
 * BREAKER_EINVAL in `*rc` when a live one is there and not `shared`. */
static struct entry *find_name(breaker_redis *f, const char *name, int shared, int *rc) {
    uint32_t n = atomic_load_explicit(&f->count, memory_order_relaxed); /* under attach_mu */
    struct entry *reuse = NULL;
    *rc = BREAKER_OK;
    for (uint32_t i = 0; i < n; i++) {
        struct entry *o = f->entries[i];
        if (strcmp(o->name, name) != 0) continue;
        if (breaker__redis_entry_b(o) == NULL) {
            if (reuse == NULL) reuse = o;
        } else if (!shared) {
            *rc = BREAKER_EINVAL;
        }
    }
    return *rc == BREAKER_OK ? reuse : NULL;
}

/* FAIL_CLOSED: a breaker attached while the fleet view is too old. When a
 * round has already failed (Redis gone) and the attach is the caller's own
 * (breaker_redis_attach(): no lock of anyone's held), it starts refused, as
 * the flusher's next round would leave it; its event runs here, on the
 * attaching thread. A registry's open runs under the registry's lock, where
 * an event (whose listener may call the registry) must not run, and before
 * the first round nobody knows yet whether Redis answers: then the flusher
 * is woken, and its round either finds Redis (the view is fresh, nothing to
 * undo) or trips every closed breaker, this one included (trip_stale()).
 * Calls admitted meanwhile: those of one round, at most io_timeout_ns. */
static void fail_closed_at_attach(breaker_redis *f, struct entry *e, breaker *b, bool owned) {
    if (f->cfg.fail_mode != BREAKER_REDIS_FAIL_CLOSED || !breaker__redis_view_too_old(f)) return;
    pthread_mutex_lock(&f->round_mu);
    bool failed_round = f->announced > 0; /* a cause: a round failed */
    pthread_mutex_unlock(&f->round_mu);
    if (owned || !failed_round) {
        breaker__redis_wake_flusher(f);
        return;
    }
    if (breaker_trip_outside(b, breaker_generation(b), NULL) != BREAKER_OK) return;
    pthread_mutex_lock(&f->round_mu);
    if (breaker__redis_entry_b(e) == b) breaker__fleet_note_stale_trip(&e->follow);
    pthread_mutex_unlock(&f->round_mu);
}

/* Attach `name` to `f` with a local breaker made from `cfg` (NULL: the
 * defaults) and `owner` (NULL: none). `shared`: another live entry of the
 * name is allowed (a registry may open a name again while a handle it
 * evicted is still in use: each handle flushes its own deltas); a retired
 * entry of the name is reused when there is one. */
static int attach_entry(breaker_redis *f, const char *name, const breaker_config *cfg,
                        const breaker_owner *owner, int shared, breaker **out, char *msg,
                        size_t msg_len) {
    *out = NULL;
    int rc = breaker_name_validate(name, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    if (cfg != NULL && (rc = breaker_config_validate(cfg, msg, msg_len)) != BREAKER_OK) return rc;
    struct entry *fresh = entry_new(name);
    if (fresh == NULL) return breaker__fail(BREAKER_ENOMEM, msg, msg_len, "out of memory");
    breaker *b = NULL;
    struct breaker__fleet_limits lim;
    bool differs = false, answered = false, recorded = false;
    struct breaker__fleet_answer armed;
    struct breaker__fleet_record rec;
    rc = make_local(f, fresh, cfg, owner, &b, &lim, &differs, &armed, &answered, &rec, &recorded,
                    msg, msg_len);
    if (rc != BREAKER_OK) {
        free(fresh);
        return rc;
    }
    const struct breaker__fleet_answer *made_in = answered ? &armed : NULL;
    const struct breaker__fleet_record *in_force = recorded ? &rec : NULL;
    pthread_mutex_lock(&f->attach_mu);
    struct entry *e = find_name(f, name, shared, &rc);
    if (e != NULL) {
        rearm(f, e, b, &lim, made_in, in_force); /* its keys are the name's */
    } else if (rc == BREAKER_OK) {
        rc = add_entry(f, fresh, b, &lim, made_in, in_force);
        if (rc == BREAKER_OK) {
            e = fresh;
            fresh = NULL;
        }
    }
    pthread_mutex_unlock(&f->attach_mu);
    free(fresh); /* not needed: a retired entry was re-armed, or none added */
    if (rc != BREAKER_OK) {
        breaker_destroy(b);
        return breaker__fail(rc, msg, msg_len,
                             rc == BREAKER_EINVAL          ? "%s: attached already"
                             : rc == BREAKER_REGISTRY_FULL ? "%s: max_names reached"
                                                           : "%s: out of memory",
                             name);
    }
    *out = b;
    fail_closed_at_attach(f, e, b, owner != NULL);
    if (differs)
        return breaker__fail(BREAKER_CONFIG_DIFFERS, msg, msg_len,
                             "%s: stored in Redis with other limits; they win "
                             "(breaker_get_config() shows them)",
                             name);
    return BREAKER_OK;
}

int breaker_redis_attach(breaker_redis *f, const char *name, const breaker_config *cfg,
                         breaker **out, char *msg, size_t msg_len) {
    return attach_entry(f, name, cfg, NULL, 0, out, msg, msg_len);
}

/* ---- The backend a registry uses (breaker/backend.h) --------------------------------*/

static int registry_open(void *ctx, const char *name, const breaker_config *cfg,
                         const breaker_owner *owner, breaker **out) {
    int rc = attach_entry(ctx, name, cfg, owner, 1, out, NULL, 0);
    return rc == BREAKER_CONFIG_DIFFERS ? BREAKER_OK : rc; /* attached, to the stored limits */
}

/* Detach: retire the entry (the flusher stops reading the breaker; the
 * name's state in Redis stays, for the other hosts and the next open) and
 * free the local breaker. Its deltas since the last round are not sent. */
static void registry_close(void *ctx, breaker *b) {
    breaker_redis *f = ctx;
    struct entry *e = breaker__redis_find_entry(f, b);
    if (e != NULL) {
        pthread_mutex_lock(&f->round_mu); /* the round is not reading b */
        /* A transition of b being delivered on another thread: wait for it
         * (its events reach the owner, which frees its record once we
         * return). On this thread (b's own listener detaches it): b is
         * still on the stack below us, so the apply phase destroys it. */
        while (f->applying == b && !pthread_equal(f->applier, pthread_self()))
            pthread_cond_wait(&f->applied_cv, &f->round_mu);
        atomic_store_explicit(&e->b, NULL, memory_order_relaxed); /* under round_mu */
        if (f->applying == b) {
            f->doomed = b;
            b = NULL;
        }
        pthread_mutex_unlock(&f->round_mu);
        breaker__redis_host_release(f, e); /* another process flushes the name from now */
    }
    breaker_destroy(b); /* NULL: left to the apply phase */
}

int breaker_redis_detach(breaker_redis *f, breaker *b) {
    struct entry *e = breaker__redis_find_entry(f, b);
    if (e == NULL || atomic_load_explicit(&e->b, memory_order_relaxed) == NULL)
        return BREAKER_EINVAL;
    registry_close(f, b);
    return BREAKER_OK;
}

/* ---- The fleet's controls ---------------------------------------------------------*/

_Static_assert(BREAKER_REDIS_WHO_MAX == BREAKER__FLEET_WHO_MAX, "the scripts' bound");
_Static_assert(BREAKER_REDIS_WHY_MAX == BREAKER__FLEET_WHY_MAX, "the scripts' bound");

/* The live entry of `name`, or NULL with `msg` (BREAKER_EINVAL). */
static struct entry *attached(breaker_redis *f, const char *name, char *msg, size_t msg_len) {
    uint32_t n = atomic_load_explicit(&f->count, memory_order_acquire); /* pairs with attach */
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(f->entries[i]->name, name) == 0 && breaker__redis_entry_b(f->entries[i]))
            return f->entries[i];
    (void)breaker__fail(BREAKER_EINVAL, msg, msg_len,
                        "%s: not attached to this fleet handle (breaker_redis_attach() it)", name);
    return NULL;
}

void breaker_redis_control_init(breaker_redis_control *c) {
    memset(c, 0, sizeof *c);
    c->forced = BREAKER_CLOSED;
}

/* `c` checked, as the control script's arguments in `args` (texts kept in
 * `buf`). @return the count, or -1 with `msg` (BREAKER_EINVAL). */
#define CONTROL_ARGS 40
static int control_args(const breaker_redis_control *c, const char *args[CONTROL_ARGS],
                        char buf[][32], char *msg, size_t msg_len) {
    const unsigned known = BREAKER_REDIS_SET_FORCED | BREAKER_REDIS_SET_SHADOW |
                           BREAKER_REDIS_SET_LIMITS | BREAKER_REDIS_RESET;
    if (c->set == 0 || (c->set & ~known) != 0) {
        (void)breaker__fail(BREAKER_EINVAL, msg, msg_len,
                            "set: BREAKER_REDIS_SET_FORCED, _SET_SHADOW, _SET_LIMITS or "
                            "BREAKER_REDIS_RESET, or-ed (got %#x)",
                            c->set);
        return -1;
    }
    int rc = breaker__text_check("who", c->who, BREAKER_REDIS_WHO_MAX, msg, msg_len);
    if (rc == BREAKER_OK)
        rc = breaker__text_check("why", c->why, BREAKER_REDIS_WHY_MAX, msg, msg_len);
    if (rc != BREAKER_OK) return -1;
    int n = 0, k = 0;
    snprintf(buf[k], 32, "%llu", (unsigned long long)c->expect_version);
    args[n++] = c->expect_version != 0 ? buf[k++] : "";
    args[n++] = c->who != NULL ? c->who : "";
    args[n++] = c->why != NULL ? c->why : "";
    if (c->set & BREAKER_REDIS_RESET) {
        args[n++] = "reset";
        args[n++] = "1";
    }
    if (c->set & BREAKER_REDIS_SET_FORCED) {
        if (c->forced != BREAKER_FORCED_OPEN && c->forced != BREAKER_FORCED_CLOSED) {
            (void)breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                "forced: BREAKER_FORCED_OPEN or BREAKER_FORCED_CLOSED (got %d)",
                                (int)c->forced);
            return -1;
        }
        if (c->for_ns != 0 &&
            (c->for_ns < MS || c->for_ns / 1000 > BREAKER__FLEET_MAX_DURATION_US)) {
            (void)breaker__fail(BREAKER_EINVAL, msg, msg_len,
                                "for_ns: 0 (no end) or 1 ms .. 365 days (got %llu ns)",
                                (unsigned long long)c->for_ns);
            return -1;
        }
        args[n++] = "forced";
        args[n++] = c->forced == BREAKER_FORCED_OPEN ? "open" : "closed";
        args[n++] = "for";
        snprintf(buf[k], 32, "%llu", (unsigned long long)(c->for_ns / 1000));
        args[n++] = buf[k++];
    }
    if (c->set & BREAKER_REDIS_SET_SHADOW) {
        args[n++] = "shadow";
        args[n++] = c->shadow ? "1" : "0";
    }
    if (c->set & BREAKER_REDIS_SET_LIMITS) {
        if (breaker_config_validate(&c->limits, msg, msg_len) != BREAKER_OK) return -1;
        struct breaker__fleet_limits l;
        breaker__fleet_limits_of(&c->limits, &l);
        char text[BREAKER__FLEET_LIMITS_LEN];
        breaker__fleet_limits_format(&l, text, sizeof text);
        /* "name=value ..." as name, value pairs. */
        char *save = NULL;
        for (char *tok = strtok_r(text, " ", &save); tok != NULL;
             tok = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(tok, '=');
            if (eq == NULL || k + 2 > CONTROL_ARGS) break;
            *eq = '\0';
            snprintf(buf[k], 32, "%s", tok);
            args[n++] = buf[k++];
            snprintf(buf[k], 32, "%s", eq + 1);
            args[n++] = buf[k++];
        }
    }
    return n;
}

/* The control script's answer `r` (freed): @return BREAKER_OK; BREAKER_STALE
 * (CONFLICT: the record moved since it was read); BREAKER_EINVAL (the
 * script refused the arguments: ERR breaker, REFUSED); BREAKER_EIO; each
 * with `msg`; `rec` set on BREAKER_OK when not NULL. */
static int control_answer(const struct entry *e, breaker_redis_reply *r,
                          struct breaker__fleet_record *rec, char *msg, size_t msg_len) {
    int rc = BREAKER_OK;
    if (r == NULL) return BREAKER_EIO; /* msg says why */
    if (r->type == BREAKER_REDIS_REPLY_ERROR) {
        const char *t = r->str;
        bool conflict = strncmp(t, "CONFLICT ", 9) == 0, refused = strncmp(t, "REFUSED ", 8) == 0;
        bool args = strncmp(t, "ERR breaker: ", 13) == 0;
        rc = conflict ? BREAKER_STALE : refused || args ? BREAKER_EINVAL : BREAKER_EIO;
        (void)breaker__fail(rc, msg, msg_len, "%s: %s%s", e->name,
                            rc == BREAKER_EIO ? "Redis refused the control: " : "",
                            conflict  ? t + 9
                            : refused ? t + 8
                            : args    ? t + 13
                                      : t);
    } else {
        struct breaker__fleet_answer a;
        struct breaker__fleet_record got;
        char why[200];
        if (!breaker__redis_read_record(r, &a, &got, why, sizeof why))
            rc = breaker__fail(BREAKER_EIO, msg, msg_len, "%s: %s: %s", e->key[FLEET_KEY_STATE],
                               why, "a corrupt state: the next round rebuilds it");
        else if (rec != NULL)
            *rec = got;
    }
    breaker_redis_reply_free(r);
    return rc;
}

int breaker_redis_control_apply(breaker_redis *f, const char *name, const breaker_redis_control *c,
                                char *msg, size_t msg_len) {
    const char *args[CONTROL_ARGS];
    char buf[CONTROL_ARGS][32];
    int n = control_args(c, args, buf, msg, msg_len);
    if (n < 0) return BREAKER_EINVAL;
    struct entry *e = attached(f, name, msg, msg_len);
    if (e == NULL) return BREAKER_EINVAL;
    /* What the error says did not reach Redis, as the operator put it. */
    const char *what = c->set == BREAKER_REDIS_SET_SHADOW   ? "shadow mode"
                       : c->set == BREAKER_REDIS_SET_LIMITS ? "limits change"
                       : (c->set & (BREAKER_REDIS_SET_SHADOW | BREAKER_REDIS_SET_LIMITS)) == 0
                           ? "order"
                           : "control";
    breaker_redis_reply *r =
        breaker__redis_control_call(f, e, breaker__redis_lua_control, n, args, what, msg, msg_len);
    int rc = control_answer(e, r, NULL, msg, msg_len);
    if (rc == BREAKER_OK) breaker__redis_wake_flusher(f); /* this host's own, at once */
    return rc;
}

void breaker__redis_control_state_of(const struct breaker__fleet_record *rec,
                                     const breaker_config *base, breaker_redis_control_state *out) {
    out->version = rec->version;
    out->forced = rec->forced == FLEET_FORCED_OPEN
                      ? (rec->left_us ? BREAKER_OPEN : BREAKER_FORCED_OPEN)
                  : rec->forced == FLEET_FORCED_CLOSED ? BREAKER_FORCED_CLOSED
                                                       : BREAKER_CLOSED;
    out->left_ns = rec->left_us * 1000;
    out->shadow = rec->shadow;
    out->reset_generation = rec->reset_gen;
    out->limits = *base;
    breaker__fleet_limits_apply(&rec->limits, &out->limits);
    memcpy(out->who, rec->who, sizeof out->who);
    memcpy(out->why, rec->why, sizeof out->why);
    out->age_ns = rec->age_us * 1000;
}

int breaker_redis_control_get(breaker_redis *f, const char *name, breaker_redis_control_state *out,
                              char *msg, size_t msg_len) {
    memset(out, 0, sizeof *out);
    struct entry *e = attached(f, name, msg, msg_len);
    if (e == NULL) return BREAKER_EINVAL;
    static const char *const none[] = {"", "", ""};
    breaker_redis_reply *r = breaker__redis_control_call(f, e, breaker__redis_lua_control, 3, none,
                                                         "read", msg, msg_len);
    struct breaker__fleet_record rec;
    int rc = control_answer(e, r, &rec, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    /* The name's breaker now, read under round_mu: a detach (another
     * thread, a registry's eviction) retires the entry under it before it
     * frees the breaker, so the one found here lives until we unlock. A
     * name detached meanwhile (and attached again or not) is looked up
     * anew; its limits are the base of the fields the record does not
     * store. */
    breaker_config base;
    pthread_mutex_lock(&f->round_mu);
    breaker *b = breaker__redis_entry_b(e);
    if (b == NULL && (e = attached(f, name, NULL, 0)) != NULL) b = breaker__redis_entry_b(e);
    if (b != NULL) breaker_get_config(b, &base);
    pthread_mutex_unlock(&f->round_mu);
    if (b == NULL) return breaker__fail(BREAKER_EINVAL, msg, msg_len, "%s: detached", name);
    breaker__redis_control_state_of(&rec, &base, out);
    return BREAKER_OK;
}

static const breaker_backend_ops backend_ops = {
    .name = "redis",
    .open = registry_open,
    .close = registry_close,
    .fini = NULL, /* the fleet handle is the caller's */
};

breaker_backend *breaker_redis_backend(breaker_redis *f) { return &f->backend; }

int breaker_redis_degraded(breaker_redis *f) {
    return atomic_load_explicit(&f->degraded, memory_order_relaxed);
}

void breaker_redis_stats_get(breaker_redis *f, breaker_redis_stats *out) {
    memset(out, 0, sizeof *out);
#define GET(x) out->x = atomic_load_explicit(&f->n.x, memory_order_relaxed)
    GET(flushes);
    GET(flush_errors);
    GET(degraded_entered);
    GET(leases_granted);
    GET(leases_refused);
    GET(lease_errors);
    GET(lease_gated);
    GET(outside_trips);
    GET(fleet_closes);
    GET(lease_local);
    GET(state_rebuilds);
    GET(host_takeovers);
    GET(host_rebaselines);
    GET(shadow_applied);
    GET(reconfigs_applied);
    GET(reconfigs_refused);
#undef GET
    out->host_flusher = atomic_load_explicit(&f->host_flusher, memory_order_relaxed);
    out->probe_budget_ns = atomic_load_explicit(&f->lease_budget_ns, memory_order_relaxed);
    out->round_trip_ns = atomic_load_explicit(&f->srtt_ns, memory_order_relaxed);
    uint64_t ok = atomic_load_explicit(&f->last_ok_ns, memory_order_acquire);
    out->staleness_ns = ok == 0 ? UINT64_MAX : breaker__redis_now(f) - ok;
    out->degraded = breaker_redis_degraded(f);
    if (f->io->stats != NULL) f->io->stats(f->io_ctx, out);
}

/* ---- Prometheus -------------------------------------------------------------*/

/* A literal, so that the compiler checks the arguments against it. */
#define FLEET_PROMETHEUS_FORMAT                                                                   \
    "# HELP breaker_fleet_view_age_seconds Age of this host's view of the fleet (the last "       \
    "good flush); its decisions may be this stale.\n"                                             \
    "# TYPE breaker_fleet_view_age_seconds gauge\n"                                               \
    "breaker_fleet_view_age_seconds %s\n"                                                         \
    "# HELP breaker_fleet_degraded 1 while the host has fallen back to its local breakers.\n"     \
    "# TYPE breaker_fleet_degraded gauge\n"                                                       \
    "breaker_fleet_degraded %d\n"                                                                 \
    "# HELP breaker_fleet_degraded_cause Why the host is degraded: 1 on its cause "               \
    "(configuration: "                                                                            \
    "an error no wait heals, such as a refused password or permission, a missing command or a "   \
    "TLS certificate; outage: the rest), 0 on the other; both 0 while it is joined.\n"            \
    "# TYPE breaker_fleet_degraded_cause gauge\n"                                                 \
    "breaker_fleet_degraded_cause{cause=\"outage\"} %d\n"                                         \
    "breaker_fleet_degraded_cause{cause=\"configuration\"} %d\n"                                  \
    "# HELP breaker_fleet_degraded_entered_total Times the host became degraded.\n"               \
    "# TYPE breaker_fleet_degraded_entered_total counter\n"                                       \
    "breaker_fleet_degraded_entered_total %llu\n"                                                 \
    "# HELP breaker_fleet_flushes_total Flush rounds Redis answered.\n"                           \
    "# TYPE breaker_fleet_flushes_total counter\n"                                                \
    "breaker_fleet_flushes_total %llu\n"                                                          \
    "# HELP breaker_fleet_flush_errors_total Flush rounds that failed.\n"                         \
    "# TYPE breaker_fleet_flush_errors_total counter\n"                                           \
    "breaker_fleet_flush_errors_total %llu\n"                                                     \
    "# HELP breaker_fleet_leases_total Inline probe lease requests, by result (gated: refused "   \
    "locally after a fleet refusal).\n"                                                           \
    "# TYPE breaker_fleet_leases_total counter\n"                                                 \
    "breaker_fleet_leases_total{result=\"granted\"} %llu\n"                                       \
    "breaker_fleet_leases_total{result=\"refused\"} %llu\n"                                       \
    "breaker_fleet_leases_total{result=\"error\"} %llu\n"                                         \
    "breaker_fleet_leases_total{result=\"gated\"} %llu\n"                                         \
    "# HELP breaker_fleet_local_probes_total Probes admitted without a lease because lease "      \
    "requests went unanswered in time (each also counts as a lease error).\n"                     \
    "# TYPE breaker_fleet_local_probes_total counter\n"                                           \
    "breaker_fleet_local_probes_total %llu\n"                                                     \
    "# HELP breaker_fleet_probe_budget_seconds The inline lease request's budget now (it "        \
    "follows the flush rounds' round trip).\n"                                                    \
    "# TYPE breaker_fleet_probe_budget_seconds gauge\n"                                           \
    "breaker_fleet_probe_budget_seconds %s\n"                                                     \
    "# HELP breaker_fleet_trips_applied_total Local breakers tripped because the fleet "          \
    "tripped.\n"                                                                                  \
    "# TYPE breaker_fleet_trips_applied_total counter\n"                                          \
    "breaker_fleet_trips_applied_total %llu\n"                                                    \
    "# HELP breaker_fleet_closes_applied_total Local breakers closed because the fleet "          \
    "closed.\n"                                                                                   \
    "# TYPE breaker_fleet_closes_applied_total counter\n"                                         \
    "breaker_fleet_closes_applied_total %llu\n"                                                   \
    "# HELP breaker_fleet_state_rebuilds_total Fleet states found corrupt in Redis (a field out " \
    "of its range, a missing key) and rebuilt with a new generation instead of followed.\n"       \
    "# TYPE breaker_fleet_state_rebuilds_total counter\n"                                         \
    "breaker_fleet_state_rebuilds_total %llu\n"                                                   \
    "# HELP breaker_fleet_redirects_total Calls a Redis Cluster node redirected to another, "     \
    "followed in the same round (MOVED: the slot map updated; ASK: a slot being migrated).\n"     \
    "# TYPE breaker_fleet_redirects_total counter\n"                                              \
    "breaker_fleet_redirects_total{kind=\"moved\"} %llu\n"                                        \
    "breaker_fleet_redirects_total{kind=\"ask\"} %llu\n"                                          \
    "# HELP breaker_fleet_shadow_applied_total Local breakers whose shadow mode the fleet's "     \
    "control record turned on or off.\n"                                                          \
    "# TYPE breaker_fleet_shadow_applied_total counter\n"                                         \
    "breaker_fleet_shadow_applied_total %llu\n"                                                   \
    "# HELP breaker_fleet_reconfigs_total The fleet's new stored limits, by what the local "      \
    "breaker did with them (refused: it keeps its own).\n"                                        \
    "# TYPE breaker_fleet_reconfigs_total counter\n"                                              \
    "breaker_fleet_reconfigs_total{result=\"applied\"} %llu\n"                                    \
    "breaker_fleet_reconfigs_total{result=\"refused\"} %llu\n"

int breaker_redis_export_prometheus(breaker_redis *f, char *buf, size_t cap, size_t *len) {
    breaker_redis_stats st;
    breaker_redis_stats_get(f, &st);
    char age[32];
    if (st.staleness_ns == UINT64_MAX)
        snprintf(age, sizeof(age), "+Inf");
    else /* seconds with nanosecond digits, no locale-dependent formatting */
        snprintf(age, sizeof(age), "%llu.%09llu",
                 (unsigned long long)(st.staleness_ns / 1000000000u),
                 (unsigned long long)(st.staleness_ns % 1000000000u));
    char budget[32];
    snprintf(budget, sizeof(budget), "%llu.%09llu",
             (unsigned long long)(st.probe_budget_ns / 1000000000u),
             (unsigned long long)(st.probe_budget_ns % 1000000000u));
    /* cap 0: buf may be NULL, which snprintf() allows with a size of 0. */
    int n = snprintf(
        cap > 0 ? buf : NULL, cap, FLEET_PROMETHEUS_FORMAT, age, st.degraded != 0,
        st.degraded == BREAKER_REDIS_DEGRADED, st.degraded == BREAKER_REDIS_MISCONFIGURED,
        (unsigned long long)st.degraded_entered, (unsigned long long)st.flushes,
        (unsigned long long)st.flush_errors, (unsigned long long)st.leases_granted,
        (unsigned long long)st.leases_refused, (unsigned long long)st.lease_errors,
        (unsigned long long)st.lease_gated, (unsigned long long)st.lease_local, budget,
        (unsigned long long)st.outside_trips, (unsigned long long)st.fleet_closes,
        (unsigned long long)st.state_rebuilds, (unsigned long long)st.redirects_moved,
        (unsigned long long)st.redirects_ask, (unsigned long long)st.shadow_applied,
        (unsigned long long)st.reconfigs_applied, (unsigned long long)st.reconfigs_refused);
    if (n < 0) return BREAKER_EINVAL;
    if ((size_t)n >= cap) {
        if (cap > 0) buf[0] = '\0';
        if (len != NULL) *len = (size_t)n + 1;
        return BREAKER_ENOSPC;
    }
    if (len != NULL) *len = (size_t)n;
    return BREAKER_OK;
}
