/* SPDX-License-Identifier: MIT */
/*
 * calls.c - the commands the fleet client sends (client.h) and how their
 * replies are read: a script of the protocol on a name's keys, the version
 * read of a healthy name's state; the attach's read of the stored limits; one
 * command outside the rounds (an operator's control). They go out through
 * the transport (breaker/redis_transport.h); what the answers mean is
 * protocol.c's.
 */
#include "store/redis/client.h"
#include "store/redis/scripts.h"

#include "common/message.h"

#include <stdio.h>
#include <string.h>

static const char *script_text(int script) {
    return script == FLEET_SCRIPT_FLUSH     ? breaker__redis_lua_flush
           : script == FLEET_SCRIPT_ACQUIRE ? breaker__redis_lua_acquire
           : script == FLEET_SCRIPT_RELEASE ? breaker__redis_lua_release
           : script == FLEET_SCRIPT_CREDIT  ? breaker__redis_lua_credit
                                            : breaker__redis_lua_control;
}

/* ---- Commands --------------------------------------------------------------------- */

/* `script` on `e`'s keys: numkeys, the keys, the TTL, the limits text
 * `limits` (NULL: e->limits, the command sent under round_mu), then `argc`
 * arguments. */
static void script_on(const breaker_redis *f, const struct entry *e, const char *script,
                      const char *limits, int argc, const char *const *args, struct cmd_args *a,
                      breaker_redis_command *cmd) {
    int n = 0;
    a->argv[n++] = BREAKER__FLEET_KEY_COUNT_TEXT;
    for (int i = 0; i < FLEET_KEY_COUNT; i++)
        a->argv[n++] = e->key[i];
    a->argv[n++] = f->ttl;
    a->argv[n++] = limits != NULL ? limits : e->limits;
    for (int i = 0; i < argc && n < BREAKER__REDIS_CMD_ARGS; i++)
        a->argv[n++] = args[i];
    a->argc = n;
    *cmd = (breaker_redis_command){.key = e->key[FLEET_KEY_STATE],
                                   .script = script,
                                   .argc = n,
                                   .argv = a->argv,
                                   .idempotent = 1};
}

void breaker__redis_script_cmd(const breaker_redis *f, const struct entry *e,
                               const struct breaker__fleet_call *call, const char *limits,
                               struct cmd_args *a, breaker_redis_command *cmd) {
    const char *args[BREAKER__FLEET_CALL_ARGS];
    for (int i = 0; i < call->argc; i++)
        args[i] = call->argv[i];
    script_on(f, e, script_text(call->script), limits, call->argc, args, a, cmd);
}

void breaker__redis_limits_copy(breaker_redis *f, const struct entry *e, char *out) {
    pthread_mutex_lock(&f->limits_mu);
    memcpy(out, e->limits, BREAKER__FLEET_LIMITS_LEN);
    pthread_mutex_unlock(&f->limits_mu);
}

void breaker__redis_pending_cmd(const breaker_redis *f, struct pending *p,
                                breaker_redis_command *cmd) {
    struct cmd_args *a = &p->args;
    if (p->kind == PENDING_SCRIPT) {
        breaker__redis_script_cmd(f, p->e, &p->call, NULL, a, cmd);
        return;
    }
    if (p->kind == PENDING_CREDIT) {
        struct pending *one = p;
        a->argc = (int)breaker__redis_credit_cmd(f, &one, 1, a->argv, cmd);
        return;
    }
    a->argv[0] = "HMGET";
    a->argv[1] = p->e->key[FLEET_KEY_STATE];
    for (int i = 0; i < BREAKER__FLEET_VERSION_FIELDS; i++)
        a->argv[2 + i] = breaker__fleet_version_fields[i];
    a->argc = 2 + BREAKER__FLEET_VERSION_FIELDS;
    *cmd = (breaker_redis_command){
        .key = p->e->key[FLEET_KEY_STATE], .argc = a->argc, .argv = a->argv, .idempotent = 1};
}

size_t breaker__redis_credit_cmd(const breaker_redis *f, struct pending *const *p, size_t n,
                                 const char **argv, breaker_redis_command *cmd) {
    /* numkeys, each name's state and window keys, the TTL, then each
     * name's three arguments (lua/credit.lua). */
    char *numkeys = p[0]->call.argv[BREAKER__FLEET_CALL_ARGS - 1];
    snprintf(numkeys, sizeof p[0]->call.argv[0], "%zu", 2 * n);
    size_t argc = 0;
    argv[argc++] = numkeys;
    for (size_t i = 0; i < n; i++) {
        argv[argc++] = p[i]->e->key[FLEET_KEY_STATE];
        argv[argc++] = p[i]->e->key[FLEET_KEY_WINDOW];
    }
    argv[argc++] = f->ttl;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < p[i]->call.argc; k++)
            argv[argc++] = p[i]->call.argv[k];
    /* Counted without the host's sequence: never sent twice. */
    *cmd = (breaker_redis_command){.key = p[0]->e->key[FLEET_KEY_STATE],
                                   .script = breaker__redis_lua_credit,
                                   .argc = (int)argc,
                                   .argv = argv,
                                   .idempotent = 0};
    return argc;
}

/* ---- Answers ---------------------------------------------------------------------- */

int breaker__redis_read_answer(const breaker_redis_reply *r, struct breaker__fleet_answer *out) {
    if (r == NULL || r->type != BREAKER_REDIS_REPLY_ARRAY ||
        (r->elements != ANS_COUNT && r->elements != ANS_WITH_RECORD))
        return 0;
    int64_t v[ANS_COUNT];
    for (size_t i = 0; i < ANS_COUNT; i++) {
        if (r->element[i]->type != BREAKER_REDIS_REPLY_INTEGER) return 0;
        v[i] = r->element[i]->integer;
    }
    return breaker__fleet_answer_read(v, out);
}

int breaker__redis_read_record(const breaker_redis_reply *r, struct breaker__fleet_answer *a,
                               struct breaker__fleet_record *rec, char *why, size_t why_len) {
    if (!breaker__redis_read_answer(r, a) || r->elements != ANS_WITH_RECORD) {
        snprintf(why, why_len, "%s",
                 r != NULL && r->type == BREAKER_REDIS_REPLY_ERROR ? r->str
                                                                   : "not a control record");
        return 0;
    }
    breaker_redis_reply *const *e = r->element;
    int64_t num[5];
    static const int at[5] = {ANS_REC_FORCED, ANS_REC_LEFT_US, ANS_REC_SHADOW, ANS_REC_RESET,
                              ANS_REC_RESET_AGE_US};
    for (int i = 0; i < 5; i++) {
        if (e[at[i]]->type != BREAKER_REDIS_REPLY_INTEGER) {
            snprintf(why, why_len, "the control record: field %d not a number", at[i]);
            return 0;
        }
        num[i] = e[at[i]]->integer;
    }
    const char *limits[BREAKER__FLEET_LIMIT_COUNT];
    for (int i = 0; i < BREAKER__FLEET_LIMIT_COUNT; i++) {
        const breaker_redis_reply *x = e[ANS_REC_LIMITS + i];
        limits[i] = x->type == BREAKER_REDIS_REPLY_STRING ? x->str : NULL;
    }
    const breaker_redis_reply *who = e[ANS_REC_WHO], *why_r = e[ANS_REC_WHY],
                              *age = e[ANS_REC_AGE_US];
    if (who->type != BREAKER_REDIS_REPLY_STRING || why_r->type != BREAKER_REDIS_REPLY_STRING ||
        age->type != BREAKER_REDIS_REPLY_INTEGER) {
        snprintf(why, why_len, "the control record: who, why or age of the wrong type");
        return 0;
    }
    if (!breaker__fleet_record_read(a->cv, num, who->str, who->len, why_r->str, why_r->len,
                                    age->integer, limits, rec, why, why_len))
        return 0;
    rec->born = a->born;
    return 1;
}

void breaker__redis_note_round_trip(breaker_redis *f, uint64_t rtt) {
    uint64_t srtt = atomic_load_explicit(&f->srtt_ns, memory_order_relaxed);
    srtt = breaker__redis_srtt_next(srtt, rtt);
    atomic_store_explicit(&f->srtt_ns, srtt, memory_order_relaxed);
    atomic_store_explicit(
        &f->lease_budget_ns,
        breaker__redis_budget(srtt, f->cfg.probe_budget_ns, f->cfg.probe_budget_max_ns),
        memory_order_relaxed);
}

/* ---- Outside the rounds ----------------------------------------------------------- */

/* A read of the control record (the control script with no change). */
static void record_read_cmd(const breaker_redis *f, const struct entry *e, struct cmd_args *a,
                            breaker_redis_command *cmd) {
    static const char *const none[] = {"", "", ""};
    script_on(f, e, breaker__redis_lua_control, NULL, 3, none, a, cmd);
}

void breaker__redis_record_cmd(const breaker_redis *f, struct pending *p,
                               breaker_redis_command *cmd) {
    record_read_cmd(f, p->e, &p->args, cmd);
}

/* The flush script with no deltas stores `e->limits` when the name has none
 * yet (so the first to attach wins, not the first to flush), then the
 * control script reads the record, whose limits are the stored ones (and
 * whose forced state a breaker made now converges to from its first round).
 * Skipped when the name's server is known to be down (the last round
 * failed to reach it); bounded by the transport's timeout. */
int breaker__redis_read_limits(breaker_redis *f, const struct entry *e,
                               struct breaker__fleet_record *stored,
                               struct breaker__fleet_answer *armed, bool *answered) {
    char why[256];
    *answered = false;
    struct breaker__fleet_call call;
    struct breaker__fleet_deltas none = {0};
    breaker__fleet_call_flush(&call, 0, &none);
    struct cmd_args a[2];
    breaker_redis_command cmd[2];
    breaker__redis_script_cmd(f, e, &call, NULL, &a[0], &cmd[0]);
    record_read_cmd(f, e, &a[1], &cmd[1]);
    breaker_redis_reply *r[2] = {NULL, NULL};
    pthread_mutex_lock(&f->round_mu);
    int ok = f->io->reachable(f->io_ctx, e->key[FLEET_KEY_STATE]) &&
             f->io->exchange(f->io_ctx, cmd, 2, r, why, sizeof why) == 1;
    pthread_mutex_unlock(&f->round_mu);
    /* The state the new breaker is made in (an error reply is none). */
    *answered = ok && breaker__redis_read_answer(r[0], armed);
    struct breaker__fleet_answer ra;
    ok = ok && breaker__redis_read_record(r[1], &ra, stored, why, sizeof why);
    for (int i = 0; i < 2; i++)
        breaker_redis_reply_free(r[i]);
    return ok;
}

breaker_redis_reply *breaker__redis_command_once(breaker_redis *f, const struct entry *e, int argc,
                                                 const char **argv, int idempotent,
                                                 const char *what, char *why, size_t why_len) {
    breaker_redis_command cmd = {
        .key = e->key[FLEET_KEY_STATE], .argc = argc, .argv = argv, .idempotent = idempotent};
    breaker_redis_reply *r = NULL;
    char inner[256];
    pthread_mutex_lock(&f->round_mu);
    int got = f->io->exchange(f->io_ctx, &cmd, 1, &r, inner, sizeof inner);
    pthread_mutex_unlock(&f->round_mu);
    if (got != 1) snprintf(why, why_len, "%s: %s", what, inner[0] ? inner : "no connection");
    return r;
}

breaker_redis_reply *breaker__redis_control_call(breaker_redis *f, const struct entry *e,
                                                 const char *script, int argc,
                                                 const char *const *args, const char *what,
                                                 char *msg, size_t msg_len) {
    struct cmd_args a;
    breaker_redis_command cmd;
    script_on(f, e, script, NULL, argc, args, &a, &cmd);
    cmd.idempotent = 0; /* a control applied twice would be two changes */
    char why[256] = "";
    breaker_redis_reply *r = NULL;
    pthread_mutex_lock(&f->round_mu);
    int got = f->io->exchange(f->io_ctx, &cmd, 1, &r, why, sizeof why);
    pthread_mutex_unlock(&f->round_mu);
    if (got != 1)
        (void)breaker__fail(BREAKER_EIO, msg, msg_len, "%s: the %s did not reach Redis: %s",
                            e->name, what, why[0] ? why : "no connection");
    return r;
}
