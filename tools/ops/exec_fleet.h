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

#include <getopt.h>
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
    bool run_anyway;     /* --redis-run-anyway (exec): run on a local breaker when
                            the fleet store refuses the configuration */
    /* --redis-tls and its files (breaker_redis_config.tls_*): NULL = not given */
    bool tls, tls_no_verify;
    const char *tls_ca, *tls_ca_dir, *tls_cert, *tls_key, *tls_server_name;
    /* --redis-sentinel SENTINELS (addr, sentinel set) and --redis-master MASTER */
    bool sentinel;
    const char *master;
};

/* The connection options every fleet command takes (breaker exec, open,
 * close, reset, shadow, config): --redis ADDR, --redis-cluster SEEDS,
 * --redis-db N, --redis-password-file FILE, --redis-user USER and
 * --redis-timeout D, as getopt_long entries whose codes never meet a
 * command's own (EXEC_FLEET_OPT_*). */
enum {
    EXEC_FLEET_OPT_REDIS = 0x1000,
    EXEC_FLEET_OPT_CLUSTER,
    EXEC_FLEET_OPT_DB,
    EXEC_FLEET_OPT_PASSWORD_FILE,
    EXEC_FLEET_OPT_USER,
    EXEC_FLEET_OPT_TIMEOUT,
    EXEC_FLEET_OPT_RUN_ANYWAY,
    EXEC_FLEET_OPT_TLS,
    EXEC_FLEET_OPT_TLS_CA,
    EXEC_FLEET_OPT_TLS_CA_DIR,
    EXEC_FLEET_OPT_TLS_CERT,
    EXEC_FLEET_OPT_TLS_KEY,
    EXEC_FLEET_OPT_TLS_SERVER_NAME,
    EXEC_FLEET_OPT_TLS_NO_VERIFY,
    EXEC_FLEET_OPT_SENTINEL,
    EXEC_FLEET_OPT_MASTER,
    EXEC_FLEET_OPT_END /* not an option: the end of the range */
};
/* clang-format off */
#define EXEC_FLEET_LONGOPTS                                                             \
    {"redis", required_argument, NULL, EXEC_FLEET_OPT_REDIS},                           \
    {"redis-cluster", required_argument, NULL, EXEC_FLEET_OPT_CLUSTER},                 \
    {"redis-db", required_argument, NULL, EXEC_FLEET_OPT_DB},                           \
    {"redis-password-file", required_argument, NULL, EXEC_FLEET_OPT_PASSWORD_FILE},     \
    {"redis-user", required_argument, NULL, EXEC_FLEET_OPT_USER},                       \
    {"redis-timeout", required_argument, NULL, EXEC_FLEET_OPT_TIMEOUT},                 \
    {"redis-run-anyway", no_argument, NULL, EXEC_FLEET_OPT_RUN_ANYWAY},                 \
    {"redis-tls", no_argument, NULL, EXEC_FLEET_OPT_TLS},                               \
    {"redis-tls-ca", required_argument, NULL, EXEC_FLEET_OPT_TLS_CA},                   \
    {"redis-tls-ca-dir", required_argument, NULL, EXEC_FLEET_OPT_TLS_CA_DIR},           \
    {"redis-tls-cert", required_argument, NULL, EXEC_FLEET_OPT_TLS_CERT},               \
    {"redis-tls-key", required_argument, NULL, EXEC_FLEET_OPT_TLS_KEY},                 \
    {"redis-tls-server-name", required_argument, NULL, EXEC_FLEET_OPT_TLS_SERVER_NAME}, \
    {"redis-tls-no-verify", no_argument, NULL, EXEC_FLEET_OPT_TLS_NO_VERIFY},           \
    {"redis-sentinel", required_argument, NULL, EXEC_FLEET_OPT_SENTINEL},               \
    {"redis-master", required_argument, NULL, EXEC_FLEET_OPT_MASTER}
/* clang-format on */
/* Their help lines (after "options:"), for every command's --help. */
#define EXEC_FLEET_OPTIONS_HELP                                                      \
    "      --redis-db N      with --redis: SELECT database N (default 0)\n"          \
    "      --redis-password-file FILE\n"                                             \
    "                        with --redis: AUTH with the first line of FILE\n"       \
    "      --redis-user USER with --redis: AUTH as the ACL user USER (with the\n"    \
    "                        password; default $BREAKER_REDIS_USER, else the\n"      \
    "                        default user)\n"                                        \
    "      --redis-timeout D\n"                                                      \
    "                        with --redis: wait at most D (default 250ms) for\n"     \
    "                        Redis to connect, to answer and to lease a probe\n"     \
    "      --redis-tls       speak TLS to Redis (and to the Sentinels), verifying\n" \
    "                        its certificate against the system's CAs, or:\n"        \
    "      --redis-tls-ca FILE, --redis-tls-ca-dir DIR\n"                            \
    "                        the CAs that verify the server's certificate\n"         \
    "      --redis-tls-cert FILE, --redis-tls-key FILE\n"                            \
    "                        a client certificate and its key, for a server\n"       \
    "                        that asks for one\n"                                    \
    "      --redis-tls-server-name NAME\n"                                           \
    "                        the name the certificate must carry (default: the\n"    \
    "                        address connected to)\n"                                \
    "      --redis-tls-no-verify\n"                                                  \
    "                        do not verify the certificate (a test bench only)\n"

/* Whether getopt_long's `opt` is one of EXEC_FLEET_LONGOPTS. */
static inline bool exec_fleet_is_option(int opt) {
    return opt >= EXEC_FLEET_OPT_REDIS && opt < EXEC_FLEET_OPT_END;
}

/* Option `opt` (an EXEC_FLEET_OPT_*) of `cmd` with value `arg`, into `o`.
 * @return 0, or an exit status after saying why (64: a bad value). */
int exec_fleet_option(const char *cmd, int opt, const char *arg, struct exec_fleet_opts *o);

/* After every option of `cmd`: the connection options that need --redis
 * (or --redis-cluster) and what a Cluster cannot take (--redis-db).
 * @return 0, or 64 after saying why. */
int exec_fleet_options_check(const char *cmd, const struct exec_fleet_opts *o);

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
 * error; the local breaker alone decides (it admits the call). Redis
 * refusing the configuration (breaker_redis_degraded() is
 * BREAKER_REDIS_MISCONFIGURED: a wrong password, a missing permission or
 * command, TLS) is no outage: it says so and returns 78 (TOOL_EXIT_CONFIG),
 * unless o->run_anyway (then a note, as for an unreachable Redis).
 * @return 0 with `*out` and `*b`, or an exit status after saying why. */
int exec_fleet_attach(const struct exec_fleet_opts *o, const char *name, const breaker_config *cfg,
                      bool configured, struct exec_fleet **out, breaker **b);

/* A fleet handle on o->addr with no name attached, after one round (the
 * connection, AUTH, TLS: a refused configuration is 78, an unreachable
 * fleet 69, said for `cmd`). @return 0 with `*out` (exec_fleet_close()
 * it), or an exit status after saying why. */
int exec_fleet_open(const struct exec_fleet_opts *o, const char *cmd, struct exec_fleet **out);

#ifdef BREAKER_TOOL_HAVE_REDIS
#include <breaker/redis.h>
/* The library's handle of `fl`. */
breaker_redis *exec_fleet_handle(const struct exec_fleet *fl);
#endif

/* `breaker status [NAME] --redis ADDR [--json|--prometheus]`: every fleet
 * name's state as Redis holds it (breaker_redis_status(); status_fleet.c),
 * as a table, JSON or the Prometheus text format. @return 0, or an exit
 * status after saying why (69 unreachable, 78 refused, 66 no such NAME). */
int exec_fleet_status(const struct exec_fleet_opts *o, const char *name, bool json,
                      bool prometheus);

/* True when the admitted `permit` holds a fleet lease (a probe). */
bool exec_fleet_leased(const breaker_permit *permit);

/* Say on standard error why the fleet refused the call (`status`, a
 * BREAKER_REJECTED_*). */
void exec_fleet_say_refused(const struct exec_fleet *fl, const char *name, int status);

/* Close the handle: its last flush round sends this run's outcome (the
 * counters, a leased probe's result) to Redis, unless Redis is unreachable.
 * NULL is a no-op. */
void exec_fleet_close(struct exec_fleet *fl);

/* `breaker open|close|reset NAME --redis ADDR`: `cmd` as the whole fleet's
 * control (breaker_redis_control_apply(): forced or reset), with `for_ns`
 * (0: no end), who (user@host) and `why` (NULL: none); prints what it did.
 * @return 0, or an exit status after saying why (64 a bad argument, 69 the
 * fleet unreachable or refusing). */
int exec_fleet_order(const struct exec_fleet_opts *o, const char *cmd, const char *name,
                     uint64_t for_ns, const char *why);

/* `breaker shadow NAME on|off --redis ADDR`: shadow mode for the whole
 * fleet (breaker_redis_control_apply(), BREAKER_REDIS_SET_SHADOW), with who (user@host) and `why`
 * (NULL: none); prints what it did. @return 0, or an exit status after
 * saying why (64 a bad argument, 69 the fleet unreachable or refusing). */
int exec_fleet_shadow(const struct exec_fleet_opts *o, const char *name, bool on, const char *why);

/* `breaker config NAME [key=value...] --redis ADDR`, its first half: open
 * the fleet on `o`, attach `name` and read its stored limits
 * (breaker_redis_control_get()) into `cfg` (this tool's defaults for what
 * the fleet does not store) and the control's version in `generation`. @return 0 with `*out`
 * (exec_fleet_close() it), or an exit status after saying why. */
int exec_fleet_limits_read(const struct exec_fleet_opts *o, const char *name,
                           struct exec_fleet **out, breaker_config *cfg, uint64_t *generation);

/* Its second half: store `cfg` as the fleet's limits of `name` if the
 * control's version is still `generation` (breaker_redis_control_apply(),
 * BREAKER_REDIS_SET_LIMITS), with who and `why`; prints the version before
 * and after. @return 0, or an
 * exit status after saying why: 75 (another change came first: read
 * again), 78 (invalid, or not changeable live), 69 (unreachable). */
int exec_fleet_limits_write(struct exec_fleet *fl, const char *name, const breaker_config *cfg,
                            uint64_t generation, const char *why);

#endif /* BREAKER_TOOL_EXEC_FLEET_H */
