/* SPDX-License-Identifier: MIT
 *
 * store_cmds.c - the commands on breakers shared through a store file
 * (include/breaker/store.h): every `breaker exec` of a host, whatever
 * process runs it (cron, scripts, systemd units), sees the same breaker.
 *
 *   breaker exec NAME [options] -- COMMAND [ARGS...]
 *   breaker status [NAME] [--json|--prometheus|--watch]      breaker ls
 *   breaker open|close|reset NAME
 *
 * Exit statuses of exec: the command's own; 75 (EX_TEMPFAIL, or
 * --refused-exit) when the breaker refused it; 124 on --timeout; 127 when it
 * could not be started; 1 a store or configuration error; 2 a usage error.
 * With --redis, NAME is a breaker of the fleet store instead (exec_fleet.c).
 */
#include "exec_fleet.h"
#include "tool.h"

#include <breaker/registry.h> /* breaker_name_validate() */
#include <breaker/store.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE     2
#define EXIT_REFUSED   75  /* EX_TEMPFAIL: try again later */
#define EXIT_TIMED_OUT 124 /* as coreutils timeout */
#define EXIT_NOT_RUN   127 /* the command could not be started */
#define KILL_GRACE_NS  TOOL_SEC
#define STORE_FILE     "breakers.store"

#define WATCH_INTERVAL_NS TOOL_SEC /* status --watch polls the store this often */

enum {
    OPT_STORE = 256,
    OPT_JSON,
    OPT_TIMEOUT,
    OPT_FAIL_ON,
    OPT_REFUSED_EXIT,
    OPT_PROMETHEUS,
    OPT_WATCH,
    OPT_INTERVAL,
    OPT_COUNT,
    OPT_REDIS,
    OPT_REDIS_DB,
    OPT_REDIS_PASSWORD_FILE,
    OPT_REDIS_TIMEOUT
};

#define STORE_PATH_HELP                                                                    \
    "The store is --store PATH, else $BREAKER_STORE, else\n"                               \
    "$XDG_RUNTIME_DIR/breaker/" STORE_FILE ", else /run/breaker/" STORE_FILE " for root\n" \
    "and /tmp/breaker-$UID/" STORE_FILE " for other users. A default directory\n"          \
    "must be this user's and not writable by others (in /tmp: mode 0700).\n"

const char tool_exec_help[] =
    "usage: breaker exec NAME [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND through the breaker NAME, shared by every process of this host\n"
    "that uses the same store (or, with --redis, by every host of a fleet): if\n"
    "the breaker refuses the call, COMMAND is not run, the reason and the time\n"
    "of the next allowed attempt go to standard error, and the exit status is\n"
    "75 (EX_TEMPFAIL). Otherwise COMMAND runs in its own process group and its\n"
    "outcome is recorded: exit 0 is a success; another exit status a failure\n"
    "(with --fail-on, only the listed ones, the others are ignored); death by a\n"
    "signal or --timeout a failure; a COMMAND that cannot be started (exit 127)\n"
    "is ignored. The exit status is COMMAND's own (128+N if killed by signal N,\n"
    "124 on --timeout). COMMAND finds how it was admitted in $BREAKER_PERMIT:\n"
    "'call', 'probe', or 'leased-probe' (a probe holding a fleet lease).\n"
    "\n"
    "The store file and the breaker are created if needed, the breaker with\n"
    "the configuration of -c or -b (else the defaults); a breaker that exists\n"
    "keeps its stored limits (a note says so if they differ from -c or -b).\n" STORE_PATH_HELP
    "If breaker exec itself is killed, the call's permit is reclaimed at its\n"
    "probe_timeout deadline.\n"
    "\n"
    "With --redis ADDR, NAME is a breaker of the fleet store on that Redis, not\n"
    "of a store file (docs/fleet.md): its trip, open wait and probes are the\n"
    "fleet's, so while it is open at most half_open_max_probes runs of COMMAND\n"
    "go ahead at once among all hosts, each holding a fleet lease (a refusal\n"
    "then names no time: the fleet's wait is kept in Redis); the run's outcome\n"
    "reaches Redis before breaker exec exits. The first limits stored in Redis\n"
    "for NAME win. Each breaker exec is a new local breaker without history: if\n"
    "Redis cannot be reached, the call is admitted, with a note. AUTH uses the\n"
    "password of --redis-password-file, else $BREAKER_REDIS_PASSWORD.\n"
    "\n"
    "options:\n"
    "      --store PATH      the store file (see above; not with --redis)\n"
    "      --redis ADDR      NAME is the fleet's, on the Redis at ADDR: HOST[:PORT],\n"
    "                        [IPV6][:PORT] or unix:PATH\n"
    "      --redis-db N      with --redis: SELECT database N (default 0)\n"
    "      --redis-password-file FILE\n"
    "                        with --redis: AUTH with the first line of FILE\n"
    "      --redis-timeout D\n"
    "                        with --redis: wait at most D (default 250ms) for\n"
    "                        Redis to connect, to answer and to lease a probe\n"
    "  -c, --config FILE     configure NAME from the [breaker NAME] section of FILE\n"
    "  -b, --breaker SPEC    configure NAME: 'key=value,key=value' (see breaker keys)\n"
    "      --timeout D       kill COMMAND's process group after D (SIGTERM, then\n"
    "                        SIGKILL 1s later) and count a failure; exit 124\n"
    "      --fail-on CODES   exit statuses that are failures, e.g. 1,3-5 (others\n"
    "                        are ignored; default: every non-zero status fails)\n"
    "      --refused-exit N  exit status when refused (default 75)\n"
    "  -h, --help            show this text\n"
    "\n"
    "examples:\n"
    "  breaker exec billing-sync -b 'trip=consecutive,failure_threshold=3' \\\n"
    "      -- /usr/local/bin/sync-billing\n"
    "  breaker exec api --timeout 30s --fail-on 7,22 -- curl -fsS https://api/x\n"
    "  breaker exec --redis redis.internal:6379 api -- curl -fsS https://api/x\n";

const char tool_status_help[] =
    "usage: breaker status [NAME] [options]\n"
    "\n"
    "Shows each breaker of the store (or NAME): state, generation, how long\n"
    "until a call is allowed when it is open, calls admitted, successes,\n"
    "failures, calls rejected and transitions. The store is never created.\n" STORE_PATH_HELP "\n"
    "With --watch it goes on to print a line each time a breaker's state or\n"
    "generation changes (polling the store every --interval), until SIGINT,\n"
    "SIGTERM or SIGHUP (exit 0) or --count lines:\n"
    "  TIME NAME FROM -> TO generation G [(N transitions)]\n"
    "TIME is UTC (2026-12-01T03:10:00.123Z); FROM is 'new' for a breaker created\n"
    "meanwhile; N is said when several transitions fell between two polls.\n"
    "\n"
    "options:\n"
    "      --store PATH    the store file\n"
    "      --json          print a JSON array of objects (docs/cli.md lists the keys)\n"
    "      --prometheus    print the Prometheus text format (the library's metric\n"
    "                      names; docs/cli.md lists the families)\n"
    "      --watch         keep printing changes (see above)\n"
    "      --interval D    --watch: poll every D (default 1s)\n"
    "      --count N       --watch: stop after N change lines\n"
    "  -h, --help          show this text\n";

const char tool_ls_help[] =
    "usage: breaker ls [options]\n"
    "\n"
    "Lists the names of the store's breakers, one per line, in creation order.\n" STORE_PATH_HELP
    "\n"
    "options:\n"
    "      --store PATH  the store file\n"
    "  -h, --help        show this text\n";

const char tool_force_help[] =
    "usage: breaker open|close|reset NAME [options]\n"
    "\n"
    "Operator control of a breaker of the store, seen at once by every process:\n"
    "  open   refuse every call (forced_open) until reset\n"
    "  close  admit every call, never trip (forced_closed) until reset\n"
    "  reset  back to normal operation: closed, with an empty window\n"
    "Prints the new state. The breaker must exist (see breaker ls).\n" STORE_PATH_HELP "\n"
    "options:\n"
    "      --store PATH  the store file\n"
    "  -h, --help        show this text\n";

/* ---- The store's path and directory ------------------------------------------*/

/* How far the directory of the default store path is trusted. */
enum dir_trust {
    DIR_ANY,     /* $BREAKER_STORE: the user's own choice, as --store is */
    DIR_OWNED,   /* $XDG_RUNTIME_DIR/breaker, /run/breaker: ours, written by no one else */
    DIR_PRIVATE, /* /tmp/breaker-$UID, in a directory anyone may write: ours, closed */
};

/* The default store path, per the help text. @return it (malloc'd), or NULL
 * with `msg`; `*trust` says what its directory must be. */
static char *default_store_path(enum dir_trust *trust, char *msg, size_t len) {
    *trust = DIR_OWNED;
    char *path = NULL;
    int n;
    const char *env = getenv("BREAKER_STORE");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (env != NULL && *env != '\0') {
        *trust = DIR_ANY;
        n = asprintf(&path, "%s", env);
    } else if (xdg != NULL && *xdg != '\0') {
        n = asprintf(&path, "%s/breaker/" STORE_FILE, xdg);
    } else if (getuid() == 0) {
        n = asprintf(&path, "/run/breaker/" STORE_FILE);
    } else {
        *trust = DIR_PRIVATE;
        n = asprintf(&path, "/tmp/breaker-%ju/" STORE_FILE, (uintmax_t)getuid());
    }
    if (n < 0) {
        snprintf(msg, len, "out of memory");
        return NULL;
    }
    return path;
}

/* Whoever can write the default directory can swap our store for theirs
 * (and in /tmp anyone could have made it first, to read it too): it must be
 * a real directory (not a symlink), ours, not writable by anyone else, and
 * for DIR_PRIVATE closed to everyone else. @return 0, or -1 with `msg`. */
static int check_dir(const char *dir, enum dir_trust trust, char *msg, size_t len) {
    struct stat st;
    if (lstat(dir, &st) != 0) {
        snprintf(msg, len, "%s: %s", dir, strerror(errno));
        return -1;
    }
    const char *why = NULL;
    char detail[96];
    unsigned mask = trust == DIR_PRIVATE ? 077 : 022;
    if (!S_ISDIR(st.st_mode)) {
        why = S_ISLNK(st.st_mode) ? "a symbolic link, not a directory" : "not a directory";
    } else if (st.st_uid != geteuid()) {
        snprintf(detail, sizeof(detail), "owned by uid %ju, not by this user (uid %ju)",
                 (uintmax_t)st.st_uid, (uintmax_t)geteuid());
        why = detail;
    } else if ((st.st_mode & mask) != 0) {
        snprintf(detail, sizeof(detail), "mode %04o: %s", (unsigned)(st.st_mode & 07777),
                 trust == DIR_PRIVATE ? "open to group or others (must be 0700)"
                                      : "writable by group or others");
        why = detail;
    }
    if (why == NULL) return 0;
    snprintf(msg, len, "store directory %s refused: %s (fix it, or use --store or BREAKER_STORE)",
             dir, why);
    return -1;
}

/* The default path's directory, created 0700 if `create` and missing, then
 * checked as `trust` says. @return 0, or -1 with `msg`. */
static int prepare_dir(const char *path, enum dir_trust trust, bool create, char *msg, size_t len) {
    char *dir = strdup(path);
    if (dir == NULL) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
            snprintf(msg, len, "cannot create %s: %s", dir, strerror(errno));
            rc = -1;
        }
        /* A missing directory without `create` is the open's to report. */
        struct stat st;
        if (rc == 0 && trust != DIR_ANY && (create || lstat(dir, &st) == 0))
            rc = check_dir(dir, trust, msg, len);
    }
    free(dir);
    return rc;
}

/* Open the store at --store PATH (`given`) or the default path; with
 * `create`, create its default directory and the file. @return 0, or an exit
 * status after saying why. */
static int open_store(const char *cmd, const char *given, bool create, breaker_store **out) {
    char msg[TOOL_MSG_MAX];
    enum dir_trust trust = DIR_ANY;
    char *path = given != NULL ? strdup(given) : default_store_path(&trust, msg, sizeof(msg));
    if (path == NULL) {
        tool_error(stderr, "breaker %s: out of memory", cmd);
        return 1;
    }
    int rc = 0;
    if (given == NULL && prepare_dir(path, trust, create, msg, sizeof(msg)) != 0) {
        tool_error(stderr, "breaker %s: %s", cmd, msg);
        rc = 1;
    }
    breaker_store_config cfg;
    breaker_store_config_init(&cfg);
    if (!create) cfg.flags &= ~(unsigned)BREAKER_STORE_CREATE;
    if (rc == 0) {
        int st = breaker_store_open(path, &cfg, out, msg, sizeof(msg));
        if (st == BREAKER_NOT_FOUND) {
            tool_error(stderr, "breaker %s: no store at %s (no `breaker exec` has used it yet)",
                       cmd, path);
            rc = 1;
        } else if (st != BREAKER_OK) {
            tool_error(stderr, "breaker %s: %s: %s", cmd, path, msg);
            rc = 1;
        }
    }
    free(path);
    return rc;
}

/* ---- Names in a store ----------------------------------------------------------*/

struct names {
    char **items;
    size_t count, cap;
};

static int collect_name(void *ctx, const char *name) {
    struct names *n = ctx;
    if (n->count == n->cap) {
        size_t cap = n->cap != 0 ? 2 * n->cap : 16;
        char **items = realloc(n->items, cap * sizeof(*items));
        if (items == NULL) return -1;
        n->items = items;
        n->cap = cap;
    }
    if ((n->items[n->count] = strdup(name)) == NULL) return -1;
    n->count++;
    return 0;
}

static void names_free(struct names *n) {
    for (size_t i = 0; i < n->count; i++)
        free(n->items[i]);
    free(n->items);
}

/* The store's names, copied out: attaching while foreach runs could wait on
 * the store's lock. @return 0, or 1 after saying so. */
static int list_names(const char *cmd, breaker_store *st, struct names *out) {
    memset(out, 0, sizeof(*out));
    if (breaker_store_foreach(st, collect_name, out) != 0) {
        tool_error(stderr, "breaker %s: out of memory", cmd);
        names_free(out);
        return 1;
    }
    return 0;
}

static bool names_has(const struct names *n, const char *name) {
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->items[i], name) == 0) return true;
    return false;
}

/* A NAME argument the library would refuse is a usage error. */
static int check_name(const char *cmd, const char *name) {
    char msg[TOOL_MSG_MAX];
    if (breaker_name_validate(name, msg, sizeof(msg)) != BREAKER_OK)
        return tool_usage_error(cmd, "bad breaker name '%s': %s", name, msg);
    return 0;
}

/* Attach an existing breaker with whatever limits it has (NULL: the stored
 * ones win, so BREAKER_CONFIG_DIFFERS is expected, not news). */
static int attach_existing(const char *cmd, breaker_store *st, const char *name, breaker **out) {
    char msg[TOOL_MSG_MAX];
    int rc = breaker_store_attach(st, name, NULL, out, msg, sizeof(msg));
    if (rc == BREAKER_OK || rc == BREAKER_CONFIG_DIFFERS) return 0;
    tool_error(stderr, "breaker %s: %s: %s", cmd, name, msg);
    return 1;
}

/* ---- exec: the command line --------------------------------------------------*/

struct exec_args {
    const char *name;
    const char *store;
    struct exec_fleet_opts fleet;  /* --redis and its options */
    struct tool_breakers breakers; /* from -c and -b */
    bool configured;               /* -c or -b given */
    uint64_t timeout_ns;           /* 0 = none */
    bool fail_on_given;
    bool fail_on[256]; /* exit statuses that are failures, with --fail-on */
    int refused_exit;
    char **command; /* NULL-terminated, after "--" */
    bool done;      /* --help answered */
};

/* "1,3-5": statuses 1..255, single or ranges. @return true with `set`. */
static bool parse_codes(const char *text, bool set[256]) {
    const char *p = text;
    do {
        char *end;
        errno = 0;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (end == p || *p == '-' || *p == '+' || errno != 0) return false;
        p = end;
        if (*p == '-') {
            const char *start = ++p;
            hi = strtoul(start, &end, 10);
            if (end == start || *start == '-' || *start == '+' || errno != 0) return false;
            p = end;
        }
        if (lo < 1 || hi > 255 || lo > hi) return false;
        for (unsigned long c = lo; c <= hi; c++)
            set[c] = true;
    } while (*p == ',' && *++p != '\0');
    return *p == '\0';
}

/* -c FILE: its [breaker NAME] section, if it has one, is checked once NAME
 * is known. -b SPEC: the keys apply to NAME; a spec naming another breaker
 * is an error rather than silently unused. */
static int exec_config_option(struct exec_args *a, int c, const char *name_hint) {
    char msg[TOOL_MSG_MAX];
    a->configured = true;
    if (c == 'c') {
        if (tool_load_ini(optarg, NULL, NULL, &a->breakers, msg, sizeof(msg)) == 0) return 0;
        tool_error(stderr, "breaker exec: %s", msg);
        return 1;
    }
    size_t before = a->breakers.count;
    if (tool_breakers_add_spec(&a->breakers, optarg, name_hint, msg, sizeof(msg)) != 0) {
        tool_error(stderr, "breaker exec: -b %s", msg);
        return EXIT_USAGE;
    }
    if (a->breakers.count > before && strcmp(a->breakers.items[before].name, name_hint) != 0)
        return tool_usage_error("exec", "-b %s: configures '%s', not the breaker '%s'", optarg,
                                a->breakers.items[before].name, name_hint);
    return 0;
}

/* The options before "--" (argv[0..argc)). @return 0 or an exit status. */
static int exec_option(struct exec_args *a, int c, char **argv, const struct option *longopts,
                       const char *name_hint) {
    uint64_t n;
    switch (c) {
    case 'c':
    case 'b':
        return exec_config_option(a, c, name_hint);
    case OPT_STORE:
        a->store = optarg;
        return 0;
    case OPT_REDIS: {
        struct exec_fleet_addr addr;
        if (!exec_fleet_parse_addr(optarg, &addr))
            return tool_usage_error("exec",
                                    "--redis: bad value '%s': expected " EXEC_FLEET_ADDR_FORMS
                                    ", with a PORT from 1 to 65535",
                                    optarg);
        a->fleet.addr = optarg;
        return 0;
    }
    case OPT_REDIS_DB:
        if (!tool_parse_uint(optarg, 0, INT32_MAX, &n))
            return tool_usage_error("exec",
                                    "--redis-db: bad value '%s': expected a whole number from 0 "
                                    "to 2147483647",
                                    optarg);
        a->fleet.db = (int)n;
        a->fleet.db_given = true;
        return 0;
    case OPT_REDIS_PASSWORD_FILE:
        a->fleet.password_file = optarg;
        return 0;
    case OPT_REDIS_TIMEOUT:
        if (!tool_parse_duration(optarg, TOOL_SEC, &a->fleet.timeout_ns) ||
            a->fleet.timeout_ns < TOOL_MS || a->fleet.timeout_ns > 60 * TOOL_SEC)
            return tool_usage_error("exec",
                                    "--redis-timeout: bad value '%s': expected a duration from "
                                    "1ms to 1m such as " TOOL_DURATION_FORMATS,
                                    optarg);
        return 0;
    case OPT_TIMEOUT:
        if (!tool_parse_duration(optarg, TOOL_SEC, &a->timeout_ns) || a->timeout_ns == 0)
            return tool_usage_error("exec",
                                    "--timeout: bad value '%s': expected a duration above 0 "
                                    "such as " TOOL_DURATION_FORMATS,
                                    optarg);
        return 0;
    case OPT_FAIL_ON:
        memset(a->fail_on, 0, sizeof(a->fail_on));
        if (!parse_codes(optarg, a->fail_on))
            return tool_usage_error("exec",
                                    "--fail-on: bad value '%s': expected exit statuses from 1 "
                                    "to 255 and ranges, such as 1,3-5",
                                    optarg);
        a->fail_on_given = true;
        return 0;
    case OPT_REFUSED_EXIT:
        if (!tool_parse_uint(optarg, 0, 255, &n))
            return tool_usage_error("exec",
                                    "--refused-exit: bad value '%s': expected a whole number "
                                    "from 0 to 255",
                                    optarg);
        a->refused_exit = (int)n;
        return 0;
    default:
        return tool_option_error("exec", c, argv, longopts);
    }
}

/* The first argument not an option value: NAME, which -b needs before the
 * options are read ("exec NAME -b k=v" and "exec -b k=v NAME" both work). */
static const char *find_name(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] != '-') return s;
        /* Options whose value is the next argument. */
        if (strcmp(s, "-c") == 0 || strcmp(s, "-b") == 0 || strcmp(s, "--config") == 0 ||
            strcmp(s, "--breaker") == 0 || strcmp(s, "--store") == 0 ||
            strcmp(s, "--timeout") == 0 || strcmp(s, "--fail-on") == 0 ||
            strcmp(s, "--refused-exit") == 0 || strcmp(s, "--redis") == 0 ||
            strcmp(s, "--redis-db") == 0 || strcmp(s, "--redis-password-file") == 0 ||
            strcmp(s, "--redis-timeout") == 0)
            i++;
    }
    return "";
}

static int exec_options(int argc, char **argv, struct exec_args *a) {
    static const struct option longopts[] = {
        {"store", required_argument, NULL, OPT_STORE},
        {"config", required_argument, NULL, 'c'},
        {"breaker", required_argument, NULL, 'b'},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"fail-on", required_argument, NULL, OPT_FAIL_ON},
        {"refused-exit", required_argument, NULL, OPT_REFUSED_EXIT},
        {"redis", required_argument, NULL, OPT_REDIS},
        {"redis-db", required_argument, NULL, OPT_REDIS_DB},
        {"redis-password-file", required_argument, NULL, OPT_REDIS_PASSWORD_FILE},
        {"redis-timeout", required_argument, NULL, OPT_REDIS_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    a->refused_exit = EXIT_REFUSED;
    /* Only what comes before "--" is ours: COMMAND's own options are not. */
    int dash = 1;
    while (dash < argc && strcmp(argv[dash], "--") != 0)
        dash++;
    const char *hint = find_name(dash, argv);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(dash, argv, ":c:b:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(tool_exec_help, stdout);
            a->done = true;
            return 0;
        }
        int rc = exec_option(a, c, argv, longopts, hint);
        if (rc != 0) return rc;
    }
    if (optind >= dash) return tool_usage_error("exec", "expected a breaker NAME");
    if (dash - optind > 1)
        return tool_usage_error("exec", "expected '--' before the command '%s'", argv[optind + 1]);
    a->name = argv[optind];
    if (dash == argc) return tool_usage_error("exec", "expected '--' and a command after NAME");
    if (dash + 1 == argc) return tool_usage_error("exec", "expected a command after '--'");
    a->command = argv + dash + 1;
    if (a->fleet.addr != NULL && a->store != NULL)
        return tool_usage_error("exec", "--store and --redis: choose one (a breaker of the fleet "
                                        "store lives in this process, not in a store file)");
    if (a->fleet.addr == NULL &&
        (a->fleet.db_given || a->fleet.password_file != NULL || a->fleet.timeout_ns != 0))
        return tool_usage_error("exec", "--%s needs --redis",
                                a->fleet.db_given                ? "redis-db"
                                : a->fleet.password_file != NULL ? "redis-password-file"
                                                                 : "redis-timeout");
    return check_name("exec", a->name);
}

/* The configuration to create NAME with: NULL for the defaults. @return 0 or
 * an exit status. */
static int exec_config(struct exec_args *a, const breaker_config **out) {
    *out = NULL;
    if (!a->configured) return 0;
    const struct tool_breaker *b = NULL;
    for (size_t i = 0; i < a->breakers.count; i++)
        if (strcmp(a->breakers.items[i].name, a->name) == 0) b = &a->breakers.items[i];
    if (b == NULL) {
        tool_error(stderr, "breaker exec: no [breaker %s] section in the -c files", a->name);
        return 1;
    }
    char msg[TOOL_MSG_MAX];
    if (breaker_config_validate(&b->cfg, msg, sizeof(msg)) != BREAKER_OK) {
        tool_humanize_ns(msg, sizeof(msg));
        tool_error(stderr, "breaker exec: breaker '%s': %s", a->name, msg);
        return 1;
    }
    *out = &b->cfg;
    return 0;
}

/* ---- exec: running the command ---------------------------------------------------*/

/* How the command ended. */
struct run_result {
    int status;       /* the exit status breaker exec gives */
    bool started;     /* exec succeeded */
    bool timed_out;   /* killed by --timeout */
    bool signalled;   /* died of a signal */
    bool interrupted; /* breaker exec was told to stop and passed it on */
};

/* Signals that ask breaker exec to stop: passed on to the command's process
 * group, which (its own group) the terminal or a supervisor would miss. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void on_signal(int sig) {
    (void)sig; /* only to make SIGCHLD and the others pending for sigtimedwait() */
}

/* The signals exec waits for, blocked: `set` (SIGCHLD and the forwarded
 * ones), and the mask COMMAND gets back (`old`, the caller's). */
struct exec_signals {
    sigset_t set, old;
    bool blocked;
};

/* Block SIGCHLD and the forwarded signals (taken by sigtimedwait() in the
 * wait loop) and give each a handler, since an ignored signal may be
 * discarded rather than left pending. With `pipe`, SIGPIPE is blocked too
 * (not waited for: a write to a connection Redis closed then fails with
 * EPIPE instead of killing breaker exec; COMMAND gets the caller's mask).
 * Before any thread starts (the fleet's flusher inherits the mask), so that
 * no signal goes to a thread that does not wait for it. @return 0 or -1 with
 * errno. */
static int block_signals(struct exec_signals *sig, bool pipe) {
    if (sig->blocked) return 0;
    sigemptyset(&sig->set);
    sigaddset(&sig->set, SIGCHLD);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&sig->set, forwarded[i]);
    sigset_t mask = sig->set;
    if (pipe) sigaddset(&mask, SIGPIPE);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigprocmask(SIG_BLOCK, &mask, &sig->old) != 0) return -1;
    sig->blocked = true;
    if (sigaction(SIGCHLD, &sa, NULL) != 0) return -1;
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        if (sigaction(forwarded[i], &sa, NULL) != 0) return -1;
    return 0;
}

/* A stop signal that came before COMMAND started (the signals are blocked
 * from the start with --redis): taken, so that COMMAND is not started.
 * @return it, or 0. */
static int take_early_stop(void) {
    sigset_t stops;
    sigemptyset(&stops);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&stops, forwarded[i]);
    struct timespec now = {0, 0};
    int sig = sigtimedwait(&stops, NULL, &now);
    return sig > 0 ? sig : 0;
}

/* COMMAND's environment: ours, with BREAKER_PERMIT=`permit` (call, probe,
 * leased-probe). Made before fork(): the child of a process with threads
 * may not allocate. @return it (free() the array only), or NULL. */
static char **command_env(const char *permit, char *entry, size_t entry_len) {
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **env = calloc(n + 2, sizeof(*env));
    if (env == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "BREAKER_PERMIT=", 15) != 0) env[k++] = environ[i];
    snprintf(entry, entry_len, "BREAKER_PERMIT=%s", permit);
    env[k] = entry;
    return env;
}

/* In the child: its own process group (so that a timeout kills all it
 * started), the caller's signal mask, then COMMAND. An exec failure's errno
 * goes back through `fd` (closed on exec, so EOF means it started). */
static void child(char **command, char **env, const sigset_t *old, int fd) {
    int err = 0;
    if (setpgid(0, 0) != 0 || sigprocmask(SIG_SETMASK, old, NULL) != 0) err = errno;
    if (err == 0) {
        execvpe(command[0], command, env);
        err = errno;
    }
    ssize_t w = write(fd, &err, sizeof(err));
    (void)w; /* nothing more to say if even this fails: 127 says it */
    _exit(EXIT_NOT_RUN);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TOOL_SEC + (uint64_t)ts.tv_nsec;
}

/* Wait for one of `set` until `deadline` (0: none). @return the signal, 0
 * at the deadline, -1 on error. */
static int wait_signal(const sigset_t *set, uint64_t deadline) {
    for (;;) {
        int sig;
        if (deadline == 0) {
            sig = sigwaitinfo(set, NULL);
        } else {
            uint64_t now = now_ns();
            if (now >= deadline) return 0;
            uint64_t left = deadline - now;
            struct timespec ts = {.tv_sec = (time_t)(left / TOOL_SEC),
                                  .tv_nsec = (long)(left % TOOL_SEC)};
            sig = sigtimedwait(set, NULL, &ts);
            if (sig < 0 && errno == EAGAIN) return 0;
        }
        if (sig >= 0) return sig;
        if (errno != EINTR) return -1;
    }
}

/* Wait for the child `pid`, forwarding stop requests and enforcing the
 * timeout: SIGTERM to the group, SIGKILL after KILL_GRACE_NS.
 * @return 0 with `r`, or -1 with errno. */
static int wait_child(pid_t pid, uint64_t timeout_ns, const sigset_t *set, struct run_result *r) {
    uint64_t deadline = timeout_ns != 0 ? now_ns() + timeout_ns : 0;
    bool termed = false;
    for (;;) {
        int wstatus;
        pid_t w = waitpid(pid, &wstatus, WNOHANG);
        if (w < 0 && errno != EINTR) return -1;
        if (w == pid) {
            r->signalled = WIFSIGNALED(wstatus);
            r->status = r->signalled ? 128 + WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
            if (r->timed_out) r->status = EXIT_TIMED_OUT;
            return 0;
        }
        int sig = wait_signal(set, deadline);
        if (sig < 0) return -1;
        if (sig == 0) { /* a deadline: first the timeout, then the grace */
            r->timed_out = true;
            /* ESRCH: the group is already gone, the next waitpid reaps it. */
            if (kill(-pid, termed ? SIGKILL : SIGTERM) != 0 && errno != ESRCH) return -1;
            deadline = termed ? 0 : now_ns() + KILL_GRACE_NS;
            termed = true;
        } else if (sig != SIGCHLD) {
            r->interrupted = true;
            if (kill(-pid, sig) != 0 && errno != ESRCH) return -1;
        }
    }
}

/* Start COMMAND with BREAKER_PERMIT=`permit` and wait for it. @return 0
 * with `r`, or 1 after saying why (a failed system call of breaker exec
 * itself). */
static int run_command(char **command, uint64_t timeout_ns, const char *permit,
                       struct exec_signals *sig, struct run_result *r) {
    memset(r, 0, sizeof(*r));
    int fds[2];
    if (block_signals(sig, false) != 0 || pipe2(fds, O_CLOEXEC) != 0) {
        tool_error(stderr, "breaker exec: %s", strerror(errno));
        return 1;
    }
    int early = take_early_stop();
    if (early != 0) {
        close(fds[0]);
        close(fds[1]);
        tool_error(stderr, "breaker exec: %s: not started: %s", command[0], strsignal(early));
        r->interrupted = true;
        r->status = 128 + early;
        return 0;
    }
    char entry[64];
    char **env = command_env(permit, entry, sizeof(entry));
    pid_t pid = env != NULL ? fork() : -1;
    if (pid < 0) {
        tool_error(stderr, "breaker exec: fork: %s",
                   env != NULL ? strerror(errno) : "out of memory");
        free(env);
        close(fds[0]);
        close(fds[1]);
        return 1;
    }
    if (pid == 0) child(command, env, &sig->old, fds[1]);
    free(env);
    close(fds[1]);
    /* Also from here, so that a kill of the group cannot come before the
     * child's own setpgid. It fails only when the child got there first
     * (EACCES: it has exec'd; ESRCH: it is gone), which is as good. */
    (void)setpgid(pid, pid);
    int err = 0;
    ssize_t n;
    do
        n = read(fds[0], &err, sizeof(err));
    while (n < 0 && errno == EINTR);
    close(fds[0]);
    r->started = n == 0;
    if (n > 0) {
        /* It never ran: reap it, report why. */
        tool_error(stderr, "breaker exec: %s: %s", command[0], strerror(err));
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        r->status = EXIT_NOT_RUN;
        return 0;
    }
    if (wait_child(pid, timeout_ns, &sig->set, r) != 0) {
        tool_error(stderr, "breaker exec: waiting for %s: %s", command[0], strerror(errno));
        return 1;
    }
    return 0;
}

/* What the run says about the dependency. */
static enum breaker_outcome run_outcome(const struct exec_args *a, const struct run_result *r) {
    if (!r->started) return BREAKER_IGNORED;      /* not the dependency's fault */
    if (r->interrupted) return BREAKER_CANCELLED; /* an operator stopped it */
    if (r->timed_out || r->signalled) return BREAKER_FAILURE;
    if (r->status == 0) return BREAKER_SUCCESS;
    if (a->fail_on_given) return a->fail_on[r->status] ? BREAKER_FAILURE : BREAKER_IGNORED;
    return BREAKER_FAILURE;
}

/* Say why the call was refused and when the next one may go. */
static void say_refused(const char *name, breaker *b, int status) {
    char when[64];
    uint64_t retry = breaker_retry_after_ns(b);
    if (retry == UINT64_MAX) {
        snprintf(when, sizeof(when), "after `breaker reset %s`", name);
    } else if (retry == 0) {
        snprintf(when, sizeof(when), "now");
    } else {
        char d[32];
        snprintf(when, sizeof(when), "in %s", tool_format_duration(retry, d, sizeof(d)));
    }
    tool_error(stderr, "breaker exec: %s: %s (state %s); next attempt allowed %s", name,
               breaker_strerror(status), breaker_state_name(breaker_get_state(b)), when);
}

/* What COMMAND finds in $BREAKER_PERMIT. */
static const char *permit_kind(const breaker_permit *permit) {
    if (!breaker_permit_is_probe(permit)) return "call";
    return exec_fleet_leased(permit) ? "leased-probe" : "probe";
}

/* Through the breaker (of the fleet store when `fl` is not NULL): acquire,
 * run, complete. @return the exit status. */
static int exec_through(const struct exec_args *a, breaker *b, const struct exec_fleet *fl,
                        struct exec_signals *sig) {
    breaker_permit permit;
    int st = breaker_acquire(b, &permit);
    if (st == BREAKER_REJECTED_OPEN || st == BREAKER_REJECTED_HALF_OPEN ||
        st == BREAKER_REJECTED_RAMP) {
        if (fl != NULL) {
            exec_fleet_say_refused(fl, a->name, st);
        } else {
            say_refused(a->name, b, st);
        }
        return a->refused_exit;
    }
    if (st != BREAKER_OK) {
        tool_error(stderr, "breaker exec: %s: %s", a->name, breaker_strerror(st));
        return 1;
    }
    struct run_result r;
    if (run_command(a->command, a->timeout_ns, permit_kind(&permit), sig, &r) != 0) {
        /* Our failure, not the dependency's. */
        (void)breaker_complete(b, &permit, BREAKER_IGNORED);
        return 1;
    }
    if (r.timed_out) {
        char d[32];
        tool_error(stderr, "breaker exec: %s: timed out after %s, killed", a->command[0],
                   tool_format_duration(a->timeout_ns, d, sizeof(d)));
    }
    /* STALE (an operator reset meanwhile) is fine: the outcome is moot. */
    (void)breaker_complete(b, &permit, run_outcome(a, &r));
    return r.status;
}

/* A probe outliving its probe_timeout is failed at the deadline: such a
 * command could never close the breaker. Say so up front. */
static void note_long_timeout(const struct exec_args *a, breaker *b) {
    breaker_config used;
    breaker_get_config(b, &used);
    if (a->timeout_ns <= used.probe_timeout_ns) return;
    char t[32], p[32];
    tool_error(stderr,
               "breaker exec: note: %s: --timeout %s is longer than the breaker's "
               "probe_timeout %s: a probe still running at %s is failed, and cannot "
               "close the breaker (raise probe_timeout)",
               a->name, tool_format_duration(a->timeout_ns, t, sizeof(t)),
               tool_format_duration(used.probe_timeout_ns, p, sizeof(p)), p);
}

/* --redis: NAME through the fleet store. Closing the handle sends the run's
 * outcome to Redis (its last flush round) before breaker exec exits. */
static int exec_run_fleet(const struct exec_args *a, const breaker_config *cfg) {
    struct exec_signals sig = {.blocked = false};
    if (block_signals(&sig, true) != 0) {
        tool_error(stderr, "breaker exec: %s", strerror(errno));
        return 1;
    }
    struct exec_fleet *fl;
    breaker *b;
    int rc = exec_fleet_attach(&a->fleet, a->name, cfg, a->configured, &fl, &b);
    if (rc != 0) return rc;
    note_long_timeout(a, b);
    rc = exec_through(a, b, fl, &sig);
    exec_fleet_close(fl);
    return rc;
}

static int exec_run(struct exec_args *a) {
    const breaker_config *cfg;
    int rc = exec_config(a, &cfg);
    if (rc != 0) return rc;
    if (a->fleet.addr != NULL) return exec_run_fleet(a, cfg);
    breaker_store *st = NULL;
    if ((rc = open_store("exec", a->store, true, &st)) != 0) return rc;
    breaker *b = NULL;
    char msg[TOOL_MSG_MAX];
    int at = breaker_store_attach(st, a->name, cfg, &b, msg, sizeof(msg));
    /* Without -c or -b any stored limits are expected: no note. */
    if (at == BREAKER_CONFIG_DIFFERS && cfg != NULL)
        tool_error(stderr, "breaker exec: note: %s: %s", a->name, breaker_strerror(at));
    if (at == BREAKER_OK || at == BREAKER_CONFIG_DIFFERS) {
        note_long_timeout(a, b);
        struct exec_signals sig = {.blocked = false};
        rc = exec_through(a, b, NULL, &sig);
        breaker_destroy(b);
    } else {
        tool_humanize_ns(msg, sizeof(msg));
        tool_error(stderr, "breaker exec: %s: %s", a->name, msg);
        rc = 1;
    }
    breaker_store_close(st);
    return rc;
}

int tool_cmd_exec(int argc, char **argv) {
    struct exec_args a;
    int rc = exec_options(argc, argv, &a);
    if (rc == 0 && !a.done) rc = exec_run(&a);
    tool_breakers_free(&a.breakers);
    return rc;
}

/* ---- status, ls, open, close, reset -----------------------------------------------*/

/* The options of the store commands after exec: --store, -h, and for status
 * the output forms; then `max_args` NAMEs at most, `min_args` at least. */
struct simple_args {
    const char *store;
    const char *name; /* NULL: none given */
    bool done;
    /* status only */
    bool json, prometheus, watch;
    uint64_t interval_ns; /* --watch: 0 = WATCH_INTERVAL_NS */
    uint64_t count;       /* --watch: stop after this many lines, 0 = never */
};

/* The NAME arguments after the options. @return 0 or an exit status. */
static int take_name(const char *cmd, int min_args, int max_args, int argc, char **argv,
                     struct simple_args *a) {
    int n = argc - optind;
    if (n < min_args) return tool_usage_error(cmd, "expected a breaker NAME");
    if (n > max_args)
        return tool_usage_error(cmd, "unexpected argument '%s'", argv[optind + max_args]);
    if (n > 0) {
        a->name = argv[optind];
        return check_name(cmd, a->name);
    }
    return 0;
}

static int simple_options(const char *cmd, const char *help, int min_args, int max_args, int argc,
                          char **argv, struct simple_args *a) {
    static const struct option longopts[] = {{"store", required_argument, NULL, OPT_STORE},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(help, stdout);
            a->done = true;
            return 0;
        }
        if (c != OPT_STORE) return tool_option_error(cmd, c, argv, longopts);
        a->store = optarg;
    }
    return take_name(cmd, min_args, max_args, argc, argv, a);
}

/* One option of status. @return 0 or an exit status. */
static int status_option(struct simple_args *a, int c, char **argv, const struct option *longopts) {
    switch (c) {
    case OPT_STORE:
        a->store = optarg;
        return 0;
    case OPT_JSON:
        a->json = true;
        return 0;
    case OPT_PROMETHEUS:
        a->prometheus = true;
        return 0;
    case OPT_WATCH:
        a->watch = true;
        return 0;
    case OPT_INTERVAL:
        if (!tool_parse_duration(optarg, TOOL_SEC, &a->interval_ns) || a->interval_ns < TOOL_MS ||
            a->interval_ns > 24 * 3600 * TOOL_SEC)
            return tool_usage_error("status",
                                    "--interval: bad value '%s': expected a duration from 1ms "
                                    "to 1d such as " TOOL_DURATION_FORMATS,
                                    optarg);
        return 0;
    case OPT_COUNT:
        if (!tool_parse_uint(optarg, 1, UINT32_MAX, &a->count))
            return tool_usage_error("status",
                                    "--count: bad value '%s': expected a whole number from 1 "
                                    "to 4294967295",
                                    optarg);
        return 0;
    default:
        return tool_option_error("status", c, argv, longopts);
    }
}

static int status_options(int argc, char **argv, struct simple_args *a) {
    static const struct option longopts[] = {{"store", required_argument, NULL, OPT_STORE},
                                             {"json", no_argument, NULL, OPT_JSON},
                                             {"prometheus", no_argument, NULL, OPT_PROMETHEUS},
                                             {"watch", no_argument, NULL, OPT_WATCH},
                                             {"interval", required_argument, NULL, OPT_INTERVAL},
                                             {"count", required_argument, NULL, OPT_COUNT},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(tool_status_help, stdout);
            a->done = true;
            return 0;
        }
        int rc = status_option(a, c, argv, longopts);
        if (rc != 0) return rc;
    }
    if (a->json && a->prometheus)
        return tool_usage_error("status", "--json and --prometheus: choose one");
    if (a->watch && (a->json || a->prometheus))
        return tool_usage_error("status", "--watch prints text: not with --%s",
                                a->json ? "json" : "prometheus");
    if (!a->watch && (a->interval_ns != 0 || a->count != 0))
        return tool_usage_error("status", "--%s needs --watch",
                                a->interval_ns != 0 ? "interval" : "count");
    return take_name("status", 0, 1, argc, argv, a);
}

typedef struct tool_store_row status_row;

static uint64_t rejected(const breaker_stats *s) {
    return s->rejected_open + s->rejected_half_open + s->rejected_forced + s->rejected_ramp;
}

static void print_json_row(const status_row *r, bool last) {
    printf("  {\"name\": ");
    tool_json_string(stdout, r->name);
    printf(", \"state\": \"%s\", \"generation\": %" PRIu64 ", \"retry_after_ns\": ",
           breaker_state_name(r->s.state), r->s.generation);
    if (r->retry_ns == UINT64_MAX) {
        printf("null");
    } else {
        printf("%" PRIu64, r->retry_ns);
    }
    printf(", \"admitted\": %" PRIu64 ", \"successes\": %" PRIu64 ", \"failures\": %" PRIu64
           ", \"ignored\": %" PRIu64 ", \"rejected\": %" PRIu64 ", \"transitions\": %" PRIu64
           "}%s\n",
           r->s.admitted, r->s.successes, r->s.failures, r->s.ignored, rejected(&r->s),
           r->s.transitions, last ? "" : ",");
}

static void print_text_row(const status_row *r, int width) {
    char retry[32] = "-";
    if (r->s.state == BREAKER_FORCED_OPEN) {
        snprintf(retry, sizeof(retry), "until reset");
    } else if (r->s.state != BREAKER_CLOSED && r->s.state != BREAKER_FORCED_CLOSED &&
               r->retry_ns > 0) {
        tool_format_duration(r->retry_ns, retry, sizeof(retry));
    }
    printf("%-*s  %-13s %10" PRIu64 "  %-11s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
           " %11" PRIu64 "\n",
           width, r->name, breaker_state_name(r->s.state), r->s.generation, retry, r->s.admitted,
           r->s.successes, r->s.failures, rejected(&r->s), r->s.transitions);
}

/* Read everything status shows of `b` at one moment. */
static void row_read(breaker *b, const char *name, status_row *r) {
    memset(r, 0, sizeof(*r));
    r->name = name;
    (void)breaker_stats_get(b, &r->s); /* applies a hung probe's timeout first */
    r->now_ns = breaker_now_ns(b);
    r->retry_ns = breaker_retry_after_ns(b);
    breaker_get_config(b, &r->cfg);
    r->timed = breaker_latency_get(b, &r->latency) == BREAKER_OK;
}

/* Read one breaker's row. @return 0 or an exit status. */
static int read_row(breaker_store *st, const char *name, status_row *r) {
    breaker *b;
    if (attach_existing("status", st, name, &b) != 0) return 1;
    row_read(b, name, r);
    breaker_destroy(b);
    return 0;
}

/* The rows as text (a table) or JSON. */
static void print_rows(const status_row *rows, size_t count, bool json) {
    if (json) {
        printf("[\n");
        for (size_t i = 0; i < count; i++)
            print_json_row(&rows[i], i + 1 == count);
        printf("]\n");
        return;
    }
    int width = 4;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(rows[i].name);
        if (len > (size_t)width) width = len > 64 ? 64 : (int)len;
    }
    printf("%-*s  %-13s %10s  %-11s %9s %9s %9s %9s %11s\n", width, "NAME", "STATE", "GENERATION",
           "RETRY-AFTER", "ADMITTED", "SUCCESSES", "FAILURES", "REJECTED", "TRANSITIONS");
    for (size_t i = 0; i < count; i++)
        print_text_row(&rows[i], width);
}

/* Standard output must have taken it all (a metrics file on a full disk
 * must not look written). @return 0, or 1 after saying so. */
static int check_stdout(void) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    tool_error(stderr, "breaker status: writing the output: %s", strerror(errno));
    return 1;
}

static int print_status(const struct simple_args *a, breaker_store *st, const struct names *n) {
    status_row *rows = calloc(n->count + 1, sizeof(*rows));
    if (rows == NULL) {
        tool_error(stderr, "breaker status: out of memory");
        return 1;
    }
    size_t count = 0;
    int rc = 0;
    for (size_t i = 0; i < n->count && rc == 0; i++) {
        if (a->name != NULL && strcmp(n->items[i], a->name) != 0) continue;
        rc = read_row(st, n->items[i], &rows[count++]);
    }
    if (rc == 0 && a->prometheus) {
        if (tool_store_prometheus(stdout, rows, count) != 0) {
            tool_error(stderr, "breaker status: out of memory");
            rc = 1;
        }
    } else if (rc == 0) {
        print_rows(rows, count, a->json);
    }
    free(rows);
    return rc == 0 ? check_stdout() : rc;
}

/* ---- status --watch ----------------------------------------------------------------*/

/* A watched breaker and what was last said of it. */
struct watched {
    char *name;
    breaker *b;
    enum breaker_state state;
    uint64_t generation;
};

struct watch {
    const struct simple_args *a;
    breaker_store *st;
    struct watched *items;
    size_t count, cap;
    uint64_t lines; /* change lines printed */
};

/* --count lines are out. */
static bool watch_done(const struct watch *w) {
    return w->a->count != 0 && w->lines >= w->a->count;
}

static void watch_free(struct watch *w) {
    for (size_t i = 0; i < w->count; i++) {
        breaker_destroy(w->items[i].b);
        free(w->items[i].name);
    }
    free(w->items);
}

static int watch_out_of_memory(void) {
    tool_error(stderr, "breaker status: out of memory");
    return 1;
}

/* Attach `name` and remember its state and generation, read into `*row`
 * (whose name is the watch's own copy). @return 0 or an exit status. */
static int watch_add(struct watch *w, const char *name, status_row *row) {
    if (w->count == w->cap) {
        size_t cap = w->cap != 0 ? 2 * w->cap : 16;
        struct watched *items = realloc(w->items, cap * sizeof(*items));
        if (items == NULL) return watch_out_of_memory();
        w->items = items;
        w->cap = cap;
    }
    struct watched *it = &w->items[w->count];
    if ((it->name = strdup(name)) == NULL) return watch_out_of_memory();
    if (attach_existing("status", w->st, name, &it->b) != 0) {
        free(it->name);
        return 1;
    }
    row_read(it->b, it->name, row);
    it->state = row->s.state;
    it->generation = row->s.generation;
    w->count++;
    return 0;
}

/* "2026-12-01T03:10:00.123Z", the wall clock in UTC. */
static void utc_now(char *buf, size_t len) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

/* One change line (the format of the help text). */
static void watch_line(const char *name, const char *from, enum breaker_state to, uint64_t gen,
                       uint64_t steps) {
    char when[40];
    utc_now(when, sizeof(when));
    printf("%s %s %s -> %s generation %" PRIu64, when, name, from, breaker_state_name(to), gen);
    if (steps > 1) printf(" (%" PRIu64 " transitions)", steps);
    printf("\n");
    fflush(stdout);
}

/* Compare a watched breaker with what was last said of it. */
static void watch_poll_one(struct watch *w, struct watched *it) {
    breaker_stats s;
    (void)breaker_stats_get(it->b, &s); /* state and generation from one word */
    if (s.state == it->state && s.generation == it->generation) return;
    uint64_t steps = s.generation > it->generation ? s.generation - it->generation : 0;
    watch_line(it->name, breaker_state_name(it->state), s.state, s.generation, steps);
    it->state = s.state;
    it->generation = s.generation;
    w->lines++;
}

/* Breakers created since the last poll (without NAME): the store lists
 * names in creation order, so the new ones follow the known ones.
 * @return 0 or an exit status. */
static int watch_new_names(struct watch *w) {
    struct names n;
    if (list_names("status", w->st, &n) != 0) return 1;
    int rc = 0;
    for (size_t i = w->count; i < n.count && rc == 0; i++) {
        if (watch_done(w)) break;
        status_row row;
        if ((rc = watch_add(w, n.items[i], &row)) != 0) break;
        watch_line(row.name, "new", row.s.state, row.s.generation, 0);
        w->lines++;
    }
    names_free(&n);
    return rc;
}

/* One look at the store. @return 0 or an exit status. */
static int watch_poll(struct watch *w) {
    for (size_t i = 0; i < w->count && !watch_done(w); i++)
        watch_poll_one(w, &w->items[i]);
    if (w->a->name == NULL && !watch_done(w)) {
        int rc = watch_new_names(w);
        if (rc != 0) return rc;
    }
    return check_stdout();
}

/* SIGINT, SIGTERM and SIGHUP, blocked, into `set`: the watch takes them
 * between polls with sigtimedwait(), so that its output is never cut in
 * the middle of a line. Each gets a handler too, as an ignored signal (a
 * background job's SIGINT) could be discarded rather than left pending.
 * @return 0, or 1 after saying why. */
static int block_stop_signals(sigset_t *set) {
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigemptyset(set);
    for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
        sigaddset(set, stops[i]);
        if (sigaction(stops[i], &sa, NULL) != 0) goto fail;
    }
    if (sigprocmask(SIG_BLOCK, set, NULL) == 0) return 0;
fail:
    tool_error(stderr, "breaker status: %s", strerror(errno));
    return 1;
}

/* The table, then a line per change until a stop signal or --count.
 * @return the exit status. */
static int watch_run(const struct simple_args *a, breaker_store *st, const struct names *n) {
    sigset_t set;
    if (block_stop_signals(&set) != 0) return 1;
    struct watch w = {.a = a, .st = st};
    status_row *rows = calloc(n->count + 1, sizeof(*rows));
    int rc = rows == NULL ? watch_out_of_memory() : 0;
    size_t count = 0;
    for (size_t i = 0; i < n->count && rc == 0; i++)
        if (a->name == NULL || strcmp(n->items[i], a->name) == 0)
            rc = watch_add(&w, n->items[i], &rows[count++]);
    if (rc == 0) {
        print_rows(rows, count, false);
        rc = check_stdout();
    }
    free(rows);
    uint64_t interval = a->interval_ns != 0 ? a->interval_ns : WATCH_INTERVAL_NS;
    while (rc == 0 && !watch_done(&w)) {
        int sig = wait_signal(&set, now_ns() + interval);
        if (sig > 0) break; /* asked to stop: a clean exit */
        if (sig < 0) {
            tool_error(stderr, "breaker status: %s", strerror(errno));
            rc = 1;
        } else {
            rc = watch_poll(&w);
        }
    }
    watch_free(&w);
    return rc;
}

/* Open the store without creating it and list its names; with a NAME, it
 * must be one of them. @return 0 or an exit status (the store closed). */
static int open_existing(const char *cmd, const struct simple_args *a, breaker_store **st,
                         struct names *n) {
    int rc = open_store(cmd, a->store, false, st);
    if (rc != 0) return rc;
    if ((rc = list_names(cmd, *st, n)) == 0 && a->name != NULL && !names_has(n, a->name)) {
        tool_error(stderr, "breaker %s: no breaker '%s' in the store", cmd, a->name);
        names_free(n);
        rc = 1;
    }
    if (rc != 0) breaker_store_close(*st);
    return rc;
}

int tool_cmd_status(int argc, char **argv) {
    struct simple_args a;
    int rc = status_options(argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    breaker_store *st;
    struct names n;
    if ((rc = open_existing("status", &a, &st, &n)) != 0) return rc;
    rc = a.watch ? watch_run(&a, st, &n) : print_status(&a, st, &n);
    names_free(&n);
    breaker_store_close(st);
    return rc;
}

int tool_cmd_ls(int argc, char **argv) {
    struct simple_args a;
    int rc = simple_options("ls", tool_ls_help, 0, 0, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    breaker_store *st;
    struct names n;
    if ((rc = open_existing("ls", &a, &st, &n)) != 0) return rc;
    for (size_t i = 0; i < n.count; i++)
        tool_error(stdout, "%s", n.items[i]);
    names_free(&n);
    breaker_store_close(st);
    return 0;
}

/* `breaker open|close|reset NAME`: argv[0] says which. */
int tool_cmd_force(int argc, char **argv) {
    const char *cmd = argv[0];
    struct simple_args a;
    int rc = simple_options(cmd, tool_force_help, 1, 1, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    breaker_store *st;
    struct names n;
    if ((rc = open_existing(cmd, &a, &st, &n)) != 0) return rc;
    names_free(&n);
    breaker *b;
    if ((rc = attach_existing(cmd, st, a.name, &b)) == 0) {
        int r = strcmp(cmd, "open") == 0    ? breaker_force_open(b)
                : strcmp(cmd, "close") == 0 ? breaker_force_closed(b)
                                            : breaker_reset(b);
        if (r == BREAKER_OK) {
            printf("%s: %s (generation %" PRIu64 ")\n", a.name,
                   breaker_state_name(breaker_get_state(b)), breaker_generation(b));
        } else {
            tool_error(stderr, "breaker %s: %s: %s", cmd, a.name, breaker_strerror(r));
            rc = 1;
        }
        breaker_destroy(b);
    }
    breaker_store_close(st);
    return rc;
}
