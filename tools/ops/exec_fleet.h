/* SPDX-License-Identifier: MIT */
/*
 * exec_fleet.h - `breaker exec --redis ADDR NAME -- COMMAND`: NAME as a
 * breaker of the fleet store (include/breaker/redis.h, docs/fleet.md) rather
 * than of this host's store file. For exec.c only. In a build without
 * the fleet store (hiredis not found: BREAKER_TOOL_HAVE_REDIS undefined) the
 * options still parse, and exec_fleet_attach() says the build has none.
 */
#ifndef BREAKER_TOOL_EXEC_FLEET_H
#define BREAKER_TOOL_EXEC_FLEET_H

#include <breaker.h>

#include <stdbool.h>
#include <stdint.h>

/* The forms --redis accepts, for messages. */
#define EXEC_FLEET_ADDR_FORMS "HOST[:PORT], [IPV6][:PORT] or unix:PATH"

/* --redis, --redis-db and --redis-password-file as given. */
struct exec_fleet_opts {
    const char *addr;          /* --redis ADDR or --redis-cluster SEEDS: NULL = not
                                  given (the store file) */
    bool cluster;              /* addr is --redis-cluster's seed list */
    const char *password_file; /* NULL: $BREAKER_REDIS_PASSWORD, if set */
    const char *user;          /* --redis-user: NULL = $BREAKER_REDIS_USER, if set */
    int db;                    /* --redis-db */
    bool db_given;
    uint64_t timeout_ns; /* --redis-timeout: 0 = EXEC_FLEET_TIMEOUT_NS */
};

/* How long breaker exec waits for Redis by default: to connect, for each
 * answer, and for a probe's lease. A one-shot process has no use for the
 * request path's 25 ms lease budget: its COMMAND is what takes time. */
#define EXEC_FLEET_TIMEOUT_NS (250 * UINT64_C(1000000))

/* Where --redis points. */
struct exec_fleet_addr {
    char host[256];        /* TCP: the host name or address, brackets removed */
    int port;              /* TCP: 1..65535 (6379 when not given) */
    const char *unix_path; /* unix:PATH: PATH (in the text parsed), else NULL */
};

/* Parse a --redis value. @return true with `out`, false if it is none of
 * EXEC_FLEET_ADDR_FORMS (a port must be 1..65535). */
bool exec_fleet_parse_addr(const char *text, struct exec_fleet_addr *out);

/* Check a --redis-cluster value: comma-separated HOST[:PORT] or
 * [IPV6][:PORT] seeds (no unix:PATH: a Cluster's nodes name each other by
 * address). @return true, or false with the first bad seed in `bad`. */
bool exec_fleet_check_seeds(const char *text, char *bad, size_t bad_len);

struct exec_fleet; /* a fleet handle with one name attached */

/* Open a fleet handle on o->addr and attach `name` with `cfg` (NULL: the
 * defaults; `configured`: it came from -c or -b, so stored limits that
 * differ are worth a note), then make one flush round, so that the local
 * breaker starts from the fleet's state rather than a fresh CLOSED one.
 * A breaker exec is a fresh local breaker: if the fleet is open, the local
 * breaker follows it (OPEN), but the local open wait that starts then stands
 * for no history of this process, and would refuse every breaker exec for
 * ever (nobody would probe); so that wait is skipped, and the first call is
 * a probe that asks the fleet for a lease: the fleet's own wait (on Redis's
 * clock) and its probe limit decide. Redis unreachable: a note on standard
 * error; the local breaker alone decides (it admits the call).
 * @return 0 with `*out` and `*b`, or an exit status after saying why. */
int exec_fleet_attach(const struct exec_fleet_opts *o, const char *name, const breaker_config *cfg,
                      bool configured, struct exec_fleet **out, breaker **b);

/* True when the admitted `permit` holds a fleet lease (a probe). */
bool exec_fleet_leased(const breaker_permit *permit);

/* Say on standard error why the fleet refused the call (`status`, a
 * BREAKER_REJECTED_*). */
void exec_fleet_say_refused(const struct exec_fleet *fl, const char *name, int status);

/* Close the handle: its last flush round sends this run's outcome (the
 * counters, a leased probe's result) to Redis, unless Redis is unreachable.
 * NULL is a no-op. */
void exec_fleet_close(struct exec_fleet *fl);

/* `breaker open|close|reset NAME --redis ADDR`: `cmd`'s order for the
 * whole fleet (breaker_redis_force(), _open_for(), _reset()), with `for_ns`
 * (0: no end), who (user@host) and `why` (NULL: none); prints what it did.
 * @return 0, or an exit status after saying why (64 a bad argument, 69 the
 * fleet unreachable or refusing). */
int exec_fleet_order(const struct exec_fleet_opts *o, const char *cmd, const char *name,
                     uint64_t for_ns, const char *why);

#endif /* BREAKER_TOOL_EXEC_FLEET_H */
