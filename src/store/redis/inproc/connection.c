/* SPDX-License-Identifier: MIT */
/*
 * connection.c - the in-process Redis's commands that touch no key, with
 * Redis 7.0's replies and errors: PING, ECHO, SELECT, AUTH and QUIT (on
 * the one logical connection, inproc.h), TIME (the injected clock's
 * reading when the command started) and CLUSTER (a Redis without cluster
 * support).
 */
#include "store/redis/inproc/engine.h"

#include <limits.h>
#include <stdio.h>

breaker_redis_reply *breaker__inproc_ping(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)s;
    if (argc > 2) return breaker__inproc_arity_error("ping");
    return argc == 2 ? breaker__inproc_bulk(argv[1].str, argv[1].len)
                     : breaker__inproc_status("PONG");
}

breaker_redis_reply *breaker__inproc_echo(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)s;
    (void)argc;
    return breaker__inproc_bulk(argv[1].str, argv[1].len);
}

/* The database of this one logical connection (inproc.h). */
breaker_redis_reply *breaker__inproc_select(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    (void)argc;
    long long id;
    if (!breaker__inproc_parse_ll(argv[1].str, argv[1].len, &id) || id < INT_MIN || id > INT_MAX)
        return breaker__inproc_not_integer();
    if (id < 0 || id >= INPROC_DATABASES)
        return breaker__inproc_error("ERR DB index is out of range");
    s->selected = (int)id;
    return breaker__inproc_ok();
}

/* Any password is accepted: the server has no users (inproc.h). */
breaker_redis_reply *breaker__inproc_accept(struct breaker__redis_inproc *s, int argc,
                                            const struct breaker__inproc_arg *argv) {
    (void)s;
    (void)argc;
    (void)argv;
    return breaker__inproc_ok();
}

breaker_redis_reply *breaker__inproc_time(struct breaker__redis_inproc *s, int argc,
                                          const struct breaker__inproc_arg *argv) {
    (void)argc;
    (void)argv;
    char sec[24], usec[24];
    int ns = snprintf(sec, sizeof sec, "%llu", (unsigned long long)(s->now_ns / 1000000000u));
    int nu =
        snprintf(usec, sizeof usec, "%llu", (unsigned long long)(s->now_ns / 1000u % 1000000u));
    breaker_redis_reply *r = breaker_redis_reply_array(2);
    if (r == NULL) return NULL;
    r->element[0] = breaker__inproc_bulk(sec, (size_t)ns);
    r->element[1] = breaker__inproc_bulk(usec, (size_t)nu);
    if (r->element[0] == NULL || r->element[1] == NULL) {
        breaker_redis_reply_free(r);
        return NULL;
    }
    return r;
}

/* CLUSTER: a Redis without cluster support (the fleet client asks CLUSTER
 * SLOTS to tell one Redis from a Cluster). Each subcommand of 7.0 with its
 * arity, so that a wrong call gets Redis's error first. */
breaker_redis_reply *breaker__inproc_cluster(struct breaker__redis_inproc *s, int argc,
                                             const struct breaker__inproc_arg *argv) {
    (void)s;
    static const struct {
        const char *name;
        int arity;
    } sub[] = {{"addslots", -3},
               {"addslotsrange", -4},
               {"bumpepoch", 2},
               {"count-failure-reports", 3},
               {"countkeysinslot", 3},
               {"delslots", -3},
               {"delslotsrange", -4},
               {"failover", -2},
               {"flushslots", 2},
               {"forget", 3},
               {"getkeysinslot", 4},
               {"help", 2},
               {"info", 2},
               {"keyslot", 3},
               {"links", 2},
               {"meet", -4},
               {"myid", 2},
               {"nodes", 2},
               {"replicas", 3},
               {"replicate", 3},
               {"reset", -2},
               {"saveconfig", 2},
               {"set-config-epoch", 3},
               {"setslot", -4},
               {"shards", 2},
               {"slaves", 3},
               {"slots", 2}};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        if (!breaker__inproc_is(&argv[1], sub[i].name)) continue;
        int a = sub[i].arity;
        if ((a > 0 && argc != a) || (a < 0 && argc < -a))
            return breaker__inproc_error("ERR wrong number of arguments for 'cluster|%s' command",
                                         sub[i].name);
        return breaker__inproc_error("ERR This instance has cluster support disabled");
    }
    return breaker__inproc_error("ERR unknown subcommand '%.128s'. Try CLUSTER HELP.", argv[1].str);
}
