/* SPDX-License-Identifier: MIT
 *
 * exec_fleet.c - `breaker exec --redis ADDR`: the breaker NAME of the fleet
 * store (exec_fleet.h). exec.c runs the command; this file makes the
 * breaker it runs through, and says why the fleet refused.
 */

#include "ops/exec_fleet.h"

#include "cli/cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool exec_fleet_parse_addr(const char *text, struct exec_fleet_addr *out) {
    memset(out, 0, sizeof(*out));
    out->port = 6379;
    if (strncmp(text, "unix:", 5) == 0) {
        out->unix_path = text + 5;
        return text[5] != '\0';
    }
    const char *host = text, *end, *port = NULL;
    if (text[0] == '[') { /* [IPV6] or [IPV6]:PORT */
        host = text + 1;
        end = strchr(host, ']');
        if (end == NULL || (end[1] != '\0' && end[1] != ':')) return false;
        if (end[1] == ':') port = end + 2;
    } else {
        end = strchr(text, ':');
        if (end != NULL && strchr(end + 1, ':') != NULL) return false; /* IPv6: brackets */
        if (end != NULL) {
            port = end + 1;
        } else {
            end = text + strlen(text);
        }
    }
    size_t len = (size_t)(end - host);
    if (len == 0 || len >= sizeof(out->host)) return false;
    for (size_t i = 0; i < len; i++)
        if (!isgraph((unsigned char)host[i]) || host[i] == '/' || host[i] == '[' || host[i] == ']')
            return false;
    memcpy(out->host, host, len);
    out->host[len] = '\0';
    uint64_t p;
    if (port != NULL) {
        if (!tool_parse_uint(port, 1, 65535, &p)) return false;
        out->port = (int)p;
    }
    return true;
}

bool exec_fleet_check_seeds(const char *text, char *bad, size_t bad_len) {
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char seed[300];
        struct exec_fleet_addr addr;
        bool ok = len < sizeof(seed);
        if (ok) {
            memcpy(seed, p, len);
            seed[len] = '\0';
            ok = exec_fleet_parse_addr(seed, &addr) && addr.unix_path == NULL;
        }
        if (!ok) {
            snprintf(bad, bad_len, "%.*s", (int)(len < 200 ? len : 200), p);
            return false;
        }
        if (comma == NULL) return true;
        p = comma + 1;
    }
}

int exec_fleet_option(const char *cmd, int opt, const char *arg, struct exec_fleet_opts *o) {
    uint64_t n;
    char bad[256];
    struct exec_fleet_addr addr;
    switch (opt) {
    case EXEC_FLEET_OPT_REDIS:
        if (!exec_fleet_parse_addr(arg, &addr))
            return tool_usage_error(cmd,
                                    "--redis: bad value '%s': expected " EXEC_FLEET_ADDR_FORMS
                                    ", with a PORT from 1 to 65535",
                                    arg);
        if (o->addr != NULL)
            return tool_usage_error(cmd, "--redis, --redis-cluster and --redis-sentinel: "
                                         "choose one");
        o->addr = arg;
        return 0;
    case EXEC_FLEET_OPT_CLUSTER:
    case EXEC_FLEET_OPT_SENTINEL:
        if (!exec_fleet_check_seeds(arg, bad, sizeof bad))
            return tool_usage_error(cmd,
                                    "--redis-%s: bad address '%s' in '%s': expected "
                                    "HOST[:PORT] or [IPV6][:PORT], comma-separated, with a PORT "
                                    "from 1 to 65535",
                                    opt == EXEC_FLEET_OPT_CLUSTER ? "cluster" : "sentinel", bad,
                                    arg);
        if (o->addr != NULL)
            return tool_usage_error(cmd, "--redis, --redis-cluster and --redis-sentinel: "
                                         "choose one");
        o->addr = arg;
        o->cluster = opt == EXEC_FLEET_OPT_CLUSTER;
        o->sentinel = opt == EXEC_FLEET_OPT_SENTINEL;
        return 0;
    case EXEC_FLEET_OPT_DB:
        if (!tool_parse_uint(arg, 0, INT32_MAX, &n))
            return tool_usage_error(cmd,
                                    "--redis-db: bad value '%s': expected a whole number from 0 "
                                    "to 2147483647",
                                    arg);
        o->db = (int)n;
        o->db_given = true;
        return 0;
    case EXEC_FLEET_OPT_PASSWORD_FILE:
        o->password_file = arg;
        return 0;
    case EXEC_FLEET_OPT_USER:
        if (arg[0] == '\0')
            return tool_usage_error(cmd, "--redis-user: empty (leave it out for the default user)");
        o->user = arg;
        return 0;
    case EXEC_FLEET_OPT_TIMEOUT:
        return tool_duration_option(cmd, "--redis-timeout", arg, TOOL_MS, 60 * TOOL_SEC,
                                    "from 1ms to 1m", &o->timeout_ns);
    case EXEC_FLEET_OPT_TLS:
        o->tls = true;
        return 0;
    case EXEC_FLEET_OPT_TLS_NO_VERIFY:
        o->tls_no_verify = true;
        return 0;
    case EXEC_FLEET_OPT_TLS_CA:
    case EXEC_FLEET_OPT_TLS_CA_DIR:
    case EXEC_FLEET_OPT_TLS_CERT:
    case EXEC_FLEET_OPT_TLS_KEY:
    case EXEC_FLEET_OPT_TLS_SERVER_NAME:
        if (arg[0] == '\0') return tool_usage_error(cmd, "--redis-tls-...: empty value");
        *(opt == EXEC_FLEET_OPT_TLS_CA       ? &o->tls_ca
          : opt == EXEC_FLEET_OPT_TLS_CA_DIR ? &o->tls_ca_dir
          : opt == EXEC_FLEET_OPT_TLS_CERT   ? &o->tls_cert
          : opt == EXEC_FLEET_OPT_TLS_KEY    ? &o->tls_key
                                             : &o->tls_server_name) = arg;
        return 0;
    case EXEC_FLEET_OPT_MASTER:
        if (arg[0] == '\0') return tool_usage_error(cmd, "--redis-master: empty");
        o->master = arg;
        return 0;
    case EXEC_FLEET_OPT_RUN_ANYWAY:
        if (strcmp(cmd, "exec") != 0)
            return tool_usage_error(cmd, "--redis-run-anyway: only breaker exec runs a command");
        o->run_anyway = true;
        return 0;
    default:
        return tool_usage_error(cmd, "unknown fleet option");
    }
}

int exec_fleet_options_check(const char *cmd, const struct exec_fleet_opts *o) {
    if (o->cluster && o->db_given)
        return tool_usage_error(cmd, "--redis-db and --redis-cluster: a Redis Cluster has "
                                     "database 0 only");
    if (o->sentinel != (o->master != NULL))
        return tool_usage_error(cmd, o->sentinel ? "--redis-sentinel needs --redis-master MASTER"
                                                 : "--redis-master needs --redis-sentinel");
    bool tls_file = o->tls_ca != NULL || o->tls_ca_dir != NULL || o->tls_cert != NULL ||
                    o->tls_key != NULL || o->tls_server_name != NULL || o->tls_no_verify;
    if (tls_file && !o->tls) return tool_usage_error(cmd, "--redis-tls-*: only with --redis-tls");
    if ((o->tls_cert != NULL) != (o->tls_key != NULL))
        return tool_usage_error(cmd, "--redis-tls-cert and --redis-tls-key: give both");
    if (o->addr == NULL && (o->db_given || o->password_file != NULL || o->user != NULL ||
                            o->timeout_ns != 0 || o->run_anyway || o->tls))
        return tool_usage_error(cmd, "--%s needs --redis",
                                o->db_given                ? "redis-db"
                                : o->password_file != NULL ? "redis-password-file"
                                : o->user != NULL          ? "redis-user"
                                : o->run_anyway            ? "redis-run-anyway"
                                : o->tls                   ? "redis-tls"
                                                           : "redis-timeout");
    return 0;
}

#ifdef BREAKER_TOOL_HAVE_REDIS

#include <breaker/redis.h>
/* breaker_permit_gate_token(): whether a probe holds a fleet lease. */
#define BREAKER_BACKEND_EXPERIMENTAL
#include <breaker/backend.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct exec_fleet {
    breaker_redis *fleet;
    const char *addr;   /* --redis as given, for messages */
    pthread_mutex_t mu; /* why */
    char why[256];      /* what the last failed flush round said */
};

/* on_degraded: on whichever thread made the round (ours or the flusher). */
static void note_degraded(void *ctx, int degraded, const char *why) {
    struct exec_fleet *fl = ctx;
    if (!degraded) return;
    pthread_mutex_lock(&fl->mu);
    snprintf(fl->why, sizeof(fl->why), "%s", why);
    pthread_mutex_unlock(&fl->mu);
}

/* The password: the first line of `file`, else $BREAKER_REDIS_PASSWORD,
 * else none (*out NULL). @return 0, or 1 after saying why. */
static int read_password(const char *file, char **out) {
    *out = NULL;
    if (file == NULL) {
        const char *env = getenv("BREAKER_REDIS_PASSWORD");
        if (env == NULL || *env == '\0') return 0;
        if ((*out = strdup(env)) != NULL) return 0;
        return tool_out_of_memory("exec");
    }
    FILE *f = fopen(file, "r");
    if (f == NULL) {
        tool_error(stderr, "breaker exec: --redis-password-file %s: %s", file, strerror(errno));
        return TOOL_EXIT_NOINPUT;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    if (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
    if (n <= 0) {
        free(line);
        tool_error(stderr, "breaker exec: --redis-password-file %s: no password on its first line",
                   file);
        return TOOL_EXIT_CONFIG;
    }
    *out = line;
    return 0;
}

static void free_password(char *password) {
    if (password == NULL) return;
    explicit_bzero(password, strlen(password));
    free(password);
}

/* The handle, on o->addr, for command `cmd` (its messages name it).
 * @return 0, or an exit status after saying why. */
static int open_fleet(const struct exec_fleet_opts *o, const char *cmd, struct exec_fleet *fl) {
    struct exec_fleet_addr addr;
    if (!o->cluster && !o->sentinel &&
        !exec_fleet_parse_addr(o->addr, &addr)) /* exec_options() checked it */
        return tool_usage_error(cmd, "--redis: bad value '%s'", o->addr);
    char *password;
    int bad = read_password(o->password_file, &password);
    if (bad != 0) return bad;
    breaker_redis_config rc;
    breaker_redis_config_init(&rc);
    if (o->cluster) {
        rc.cluster_nodes = o->addr; /* the library routes by slot from here */
    } else if (o->sentinel) {
        rc.sentinel_nodes = o->addr; /* the library asks them for the master */
        rc.sentinel_master = o->master;
    } else if (addr.unix_path != NULL) {
        rc.unix_path = addr.unix_path;
    } else {
        rc.host = addr.host;
        rc.port = addr.port;
    }
    rc.password = password;
    /* The ACL user: --redis-user, else $BREAKER_REDIS_USER (an empty one is
     * none); it needs a password, and the library says so if there is none. */
    const char *user = o->user != NULL ? o->user : getenv("BREAKER_REDIS_USER");
    rc.username = user != NULL && user[0] != '\0' ? user : NULL;
    rc.db = o->db;
    rc.tls = o->tls;
    rc.tls_ca_file = o->tls_ca;
    rc.tls_ca_dir = o->tls_ca_dir;
    rc.tls_cert_file = o->tls_cert;
    rc.tls_key_file = o->tls_key;
    rc.tls_server_name = o->tls_server_name;
    rc.tls_no_verify = o->tls_no_verify;
    rc.max_names = 1;
    uint64_t timeout = o->timeout_ns != 0 ? o->timeout_ns : EXEC_FLEET_TIMEOUT_NS;
    rc.io_timeout_ns = timeout;
    rc.probe_budget_ns = timeout;
    rc.on_degraded = note_degraded;
    rc.degraded_ctx = fl;
    char msg[TOOL_MSG_MAX];
    int st = breaker_redis_open(&rc, &fl->fleet, msg, sizeof(msg));
    free_password(password); /* the handle keeps its own copy */
    if (st == BREAKER_OK) return 0;
    tool_error(stderr, "breaker %s: --redis%s %s: %s", cmd,
               o->cluster    ? "-cluster"
               : o->sentinel ? "-sentinel"
                             : "",
               o->addr, msg);
    /* A configuration the library refuses (a user without a password) is
     * the caller's to fix, not an unreachable fleet. */
    return st == BREAKER_EINVAL ? TOOL_EXIT_CONFIG : TOOL_EXIT_UNAVAILABLE;
}

/* Attach `name`, to the stored limits if the fleet has some. @return 0 or an
 * exit status. */
static int attach(struct exec_fleet *fl, const char *cmd, const char *name,
                  const breaker_config *cfg, bool configured, breaker **b) {
    breaker_config c;
    if (cfg != NULL) {
        c = *cfg;
    } else {
        breaker_config_init(&c);
    }
    char msg[TOOL_MSG_MAX];
    int st = breaker_redis_attach(fl->fleet, name, &c, b, msg, sizeof(msg));
    /* Without -c or -b any stored limits are expected: no note. */
    if (st == BREAKER_CONFIG_DIFFERS && configured)
        tool_error(stderr, "breaker %s: note: %s: %s", cmd, name, breaker_strerror(st));
    if (st == BREAKER_OK || st == BREAKER_CONFIG_DIFFERS) return 0;
    tool_humanize_ns(msg, sizeof(msg));
    tool_error(stderr, "breaker %s: %s: %s", cmd, name, msg);
    return TOOL_EXIT_UNAVAILABLE;
}

/* The handle on o->addr with `name` attached, for command `cmd`.
 * @return 0 with `*out` and `*b`, or an exit status after saying why. */
static int open_attached(const struct exec_fleet_opts *o, const char *cmd, const char *name,
                         const breaker_config *cfg, bool configured, struct exec_fleet **out,
                         breaker **b) {
    *out = NULL;
    struct exec_fleet *fl = calloc(1, sizeof(*fl));
    if (fl == NULL) return tool_out_of_memory(cmd);
    fl->addr = o->addr;
    pthread_mutex_init(&fl->mu, NULL);
    int rc = open_fleet(o, cmd, fl);
    if (rc == 0) rc = attach(fl, cmd, name, cfg, configured, b);
    if (rc != 0) {
        exec_fleet_close(fl);
        return rc;
    }
    *out = fl;
    return 0;
}

int exec_fleet_open(const struct exec_fleet_opts *o, const char *cmd, struct exec_fleet **out) {
    *out = NULL;
    struct exec_fleet *fl = calloc(1, sizeof(*fl));
    if (fl == NULL) return tool_out_of_memory(cmd);
    fl->addr = o->addr;
    pthread_mutex_init(&fl->mu, NULL);
    int rc = open_fleet(o, cmd, fl);
    /* One round with no name: the connection, AUTH and TLS, said as a
     * configuration error (78) or an unreachable fleet (69). */
    if (rc == 0 && breaker_redis_flush(fl->fleet) != BREAKER_OK) {
        bool refused = breaker_redis_degraded(fl->fleet) == BREAKER_REDIS_MISCONFIGURED;
        pthread_mutex_lock(&fl->mu);
        tool_error(stderr, "breaker %s: the fleet store at %s %s: %s", cmd, o->addr,
                   refused ? "refuses this configuration" : "is unreachable",
                   fl->why[0] != '\0' ? fl->why : "no answer");
        pthread_mutex_unlock(&fl->mu);
        rc = refused ? TOOL_EXIT_CONFIG : TOOL_EXIT_UNAVAILABLE;
    }
    if (rc != 0) {
        exec_fleet_close(fl);
        return rc;
    }
    *out = fl;
    return 0;
}

breaker_redis *exec_fleet_handle(const struct exec_fleet *fl) { return fl->fleet; }

int exec_fleet_attach(const struct exec_fleet_opts *o, const char *name, const breaker_config *cfg,
                      bool configured, struct exec_fleet **out, breaker **b) {
    struct exec_fleet *fl = NULL;
    *out = NULL;
    int rc = open_attached(o, "exec", name, cfg, configured, &fl, b);
    if (rc != 0) return rc;
    /* The fleet's state now, not a fresh CLOSED breaker's. */
    if (breaker_redis_flush(fl->fleet) != BREAKER_OK) {
        bool refused = breaker_redis_degraded(fl->fleet) == BREAKER_REDIS_MISCONFIGURED;
        pthread_mutex_lock(&fl->mu);
        const char *why = fl->why[0] != '\0' ? fl->why : "no answer";
        if (refused && !o->run_anyway)
            tool_error(stderr,
                       "breaker exec: %s: the fleet store at %s refuses this configuration (%s): "
                       "COMMAND not run (--redis-run-anyway runs it on a local breaker alone)",
                       name, o->addr, why);
        else
            tool_error(stderr,
                       "breaker exec: note: %s: the fleet store at %s %s (%s): this run has only "
                       "a local breaker, with no history, which admits it",
                       name, o->addr, refused ? "refuses this configuration" : "is unreachable",
                       why);
        pthread_mutex_unlock(&fl->mu);
        if (refused && !o->run_anyway) {
            exec_fleet_close(fl);
            *b = NULL;
            return TOOL_EXIT_CONFIG;
        }
    }
    /* OPEN here is the fleet's open, followed with what is left of the
     * fleet's wait (a fleet whose wait is over, or that is probing, leaves
     * 1 ns: the lease decides). A wait that short is waited out, so that
     * the call is the probe the fleet leases or refuses; a longer one is
     * the fleet's, and the call is refused. */
    uint64_t left = breaker_get_state(*b) == BREAKER_OPEN ? breaker_retry_after_ns(*b) : 0;
    if (left > 0 && left <= TOOL_SEC / 1000) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left};
        nanosleep(&ts, NULL);
    }
    *out = fl;
    return 0;
}

bool exec_fleet_leased(const breaker_permit *permit) {
    return breaker_permit_gate_token(permit) != 0;
}

void exec_fleet_say_refused(const struct exec_fleet *fl, const char *name, int status) {
    /* The fleet's wait and its leases are in Redis: this host cannot say
     * when the next probe is due. A probe refused without asking Redis (the
     * flush round just said the fleet's wait is running) is HALF_OPEN too. */
    const char *why = status == BREAKER_REJECTED_OPEN ? "the fleet's breaker is open"
                      : status == BREAKER_REJECTED_HALF_OPEN
                          ? "the fleet's breaker is open, or probing with every probe slot taken"
                          : breaker_strerror(status);
    tool_error(stderr, "breaker exec: %s: call refused: %s (fleet store at %s); try again later",
               name, why, fl->addr);
}

void exec_fleet_close(struct exec_fleet *fl) {
    if (fl == NULL) return;
    breaker_redis_close(fl->fleet); /* NULL is a no-op */
    pthread_mutex_destroy(&fl->mu);
    free(fl);
}

/* A control's handle `*fl`, after one round: a configuration the fleet
 * store refuses is said as such (78, the handle closed), not as an
 * unreachable fleet, which the control's own call reports. @return 0 or
 * TOOL_EXIT_CONFIG. */
static int refused_configuration(const struct exec_fleet_opts *o, const char *cmd, const char *name,
                                 struct exec_fleet **fl) {
    if (breaker_redis_flush((*fl)->fleet) == BREAKER_OK ||
        breaker_redis_degraded((*fl)->fleet) != BREAKER_REDIS_MISCONFIGURED)
        return 0;
    pthread_mutex_lock(&(*fl)->mu);
    tool_error(stderr, "breaker %s: %s: the fleet store at %s refuses this configuration: %s", cmd,
               name, o->addr, (*fl)->why);
    pthread_mutex_unlock(&(*fl)->mu);
    exec_fleet_close(*fl);
    *fl = NULL;
    return TOOL_EXIT_CONFIG;
}

/* An operator's control of `name` on the fleet of `o`: the handle with the
 * name attached (its state read by one round), and who gives it. @return 0
 * with `*fl`, or an exit status after saying why. */
static int control_begin(const struct exec_fleet_opts *o, const char *cmd, const char *name,
                         struct exec_fleet **fl, char who[BREAKER_REDIS_WHO_MAX + 1]) {
    breaker *b = NULL;
    /* Not exec's attach: an unreachable Redis is the control's own error,
     * which names it, not a note about a local breaker admitting a call. */
    int rc = open_attached(o, cmd, name, NULL, false, fl, &b);
    if (rc == 0) rc = refused_configuration(o, cmd, name, fl);
    if (rc == 0) tool_operator_who(who, BREAKER_REDIS_WHO_MAX + 1);
    return rc;
}

/* One change of the fleet's control record (breaker_redis_control_apply()). */
static int fleet_control(struct exec_fleet *fl, const char *name, unsigned set,
                         enum breaker_state forced, uint64_t for_ns, int shadow,
                         const breaker_config *limits, uint64_t expect_version, const char *who,
                         const char *why, char *msg, size_t msg_len) {
    breaker_redis_control c;
    breaker_redis_control_init(&c);
    c.set = set;
    c.forced = forced;
    c.for_ns = for_ns;
    c.shadow = shadow;
    if (limits != NULL) c.limits = *limits;
    c.expect_version = expect_version;
    c.who = who;
    c.why = why;
    return breaker_redis_control_apply(fl->fleet, name, &c, msg, msg_len);
}

int exec_fleet_order(const struct exec_fleet_opts *o, const char *cmd, const char *name,
                     uint64_t for_ns, const char *why) {
    struct exec_fleet *fl = NULL;
    char who[BREAKER_REDIS_WHO_MAX + 1];
    int rc = control_begin(o, cmd, name, &fl, who);
    if (rc != 0) return rc;
    char msg[TOOL_MSG_MAX];
    bool open = strcmp(cmd, "open") == 0, close = strcmp(cmd, "close") == 0;
    int st = fleet_control(fl, name, open || close ? BREAKER_REDIS_SET_FORCED : BREAKER_REDIS_RESET,
                           open ? BREAKER_FORCED_OPEN : BREAKER_FORCED_CLOSED, for_ns, 0, NULL, 0,
                           who, why, msg, sizeof msg);
    if (st == BREAKER_OK) {
        char d[32] = "";
        if (for_ns != 0) tool_format_duration(for_ns, d, sizeof d);
        printf("%s: %s for the whole fleet (%s)%s%s, by %s%s%s\n", name,
               open && for_ns ? "open"
               : open         ? "forced_open"
               : close        ? "forced_closed"
                              : "reset",
               o->addr, for_ns ? " for " : "", d, who, why != NULL && why[0] ? ": " : "",
               why != NULL ? why : "");
        rc = 0;
    } else {
        tool_error(stderr, "breaker %s: %s", cmd, msg);
        rc = st == BREAKER_EINVAL ? TOOL_EXIT_USAGE : TOOL_EXIT_UNAVAILABLE;
    }
    exec_fleet_close(fl); /* its last round applies the order here too */
    return rc;
}

/* The exit status of a fleet control's library status `st` (its message
 * said already). */
static int control_exit(int st) {
    return st == BREAKER_OK       ? 0
           : st == BREAKER_STALE  ? TOOL_EXIT_REFUSED
           : st == BREAKER_EINVAL ? TOOL_EXIT_CONFIG
                                  : TOOL_EXIT_UNAVAILABLE;
}

int exec_fleet_shadow(const struct exec_fleet_opts *o, const char *name, bool on, const char *why) {
    struct exec_fleet *fl = NULL;
    char who[BREAKER_REDIS_WHO_MAX + 1];
    int rc = control_begin(o, "shadow", name, &fl, who);
    if (rc != 0) return rc;
    char msg[TOOL_MSG_MAX];
    int st = fleet_control(fl, name, BREAKER_REDIS_SET_SHADOW, BREAKER_CLOSED, 0, on, NULL, 0, who,
                           why, msg, sizeof msg);
    if (st == BREAKER_OK) {
        printf("%s: shadow %s for the whole fleet (%s), by %s%s%s\n", name, on ? "on" : "off",
               o->addr, who, why != NULL && why[0] ? ": " : "", why != NULL ? why : "");
        rc = 0;
    } else {
        tool_error(stderr, "breaker shadow: %s", msg);
        rc = st == BREAKER_EINVAL ? TOOL_EXIT_USAGE : TOOL_EXIT_UNAVAILABLE;
    }
    exec_fleet_close(fl); /* its last round applies it here too */
    return rc;
}

int exec_fleet_limits_read(const struct exec_fleet_opts *o, const char *name,
                           struct exec_fleet **out, breaker_config *cfg, uint64_t *generation) {
    breaker *b = NULL;
    int rc = open_attached(o, "config", name, NULL, false, out, &b);
    if (rc == 0) rc = refused_configuration(o, "config", name, out);
    if (rc != 0) return rc;
    breaker_redis_control_state lim;
    char msg[TOOL_MSG_MAX];
    int st = breaker_redis_control_get((*out)->fleet, name, &lim, msg, sizeof msg);
    if (st != BREAKER_OK) {
        tool_humanize_ns(msg, sizeof msg);
        tool_error(stderr, "breaker config: %s", msg);
        exec_fleet_close(*out);
        *out = NULL;
        return TOOL_EXIT_UNAVAILABLE;
    }
    *cfg = lim.limits;
    *generation = lim.version;
    return 0;
}

int exec_fleet_limits_write(struct exec_fleet *fl, const char *name, const breaker_config *cfg,
                            uint64_t generation, const char *why) {
    char who[BREAKER_REDIS_WHO_MAX + 1];
    tool_operator_who(who, sizeof who);
    char msg[TOOL_MSG_MAX];
    int st = fleet_control(fl, name, BREAKER_REDIS_SET_LIMITS, BREAKER_CLOSED, 0, 0, cfg,
                           generation, who, why, msg, sizeof msg);
    if (st != BREAKER_OK) {
        tool_humanize_ns(msg, sizeof msg);
        tool_error(stderr, "breaker config: %s%s", msg,
                   st == BREAKER_STALE ? " (run breaker config again)" : "");
        return control_exit(st);
    }
    printf("%s: the fleet's limits (%s), control version %" PRIu64 " -> %" PRIu64 ", by %s%s%s\n",
           name, fl->addr, generation, generation + 1, who, why != NULL && why[0] ? ": " : "",
           why != NULL ? why : "");
    return 0;
}

#else /* !BREAKER_TOOL_HAVE_REDIS */

int exec_fleet_shadow(const struct exec_fleet_opts *o, const char *name, bool on, const char *why) {
    return exec_fleet_order(o, "shadow", name, on, why);
}

int exec_fleet_limits_read(const struct exec_fleet_opts *o, const char *name,
                           struct exec_fleet **out, breaker_config *cfg, uint64_t *generation) {
    (void)cfg;
    (void)generation;
    *out = NULL;
    return exec_fleet_order(o, "config", name, 0, NULL);
}

int exec_fleet_limits_write(struct exec_fleet *fl, const char *name, const breaker_config *cfg,
                            uint64_t generation, const char *why) {
    (void)fl;
    (void)name;
    (void)cfg;
    (void)generation;
    (void)why;
    return TOOL_EXIT_UNAVAILABLE;
}

int exec_fleet_order(const struct exec_fleet_opts *o, const char *cmd, const char *name,
                     uint64_t for_ns, const char *why) {
    (void)o;
    (void)name;
    (void)for_ns;
    (void)why;
    tool_error(stderr,
               "breaker %s: --redis: this breaker was built without the fleet store "
               "(hiredis was not found at build time)",
               cmd);
    return TOOL_EXIT_UNAVAILABLE;
}

int exec_fleet_attach(const struct exec_fleet_opts *o, const char *name, const breaker_config *cfg,
                      bool configured, struct exec_fleet **out, breaker **b) {
    (void)o;
    (void)name;
    (void)cfg;
    (void)configured;
    (void)b;
    *out = NULL;
    tool_error(stderr, "breaker exec: --redis: this breaker was built without the fleet store "
                       "(hiredis was not found at build time)");
    return TOOL_EXIT_UNAVAILABLE;
}

bool exec_fleet_leased(const breaker_permit *permit) {
    (void)permit;
    return false;
}

void exec_fleet_say_refused(const struct exec_fleet *fl, const char *name, int status) {
    (void)fl;
    (void)name;
    (void)status;
}

void exec_fleet_close(struct exec_fleet *fl) { (void)fl; }

int exec_fleet_status(const struct exec_fleet_opts *o, const char *name, bool json,
                      bool prometheus) {
    (void)name;
    (void)json;
    (void)prometheus;
    return exec_fleet_order(o, "status", NULL, 0, NULL);
}

#endif /* BREAKER_TOOL_HAVE_REDIS */
