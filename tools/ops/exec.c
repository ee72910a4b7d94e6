/* SPDX-License-Identifier: MIT
 *
 * exec.c - `breaker exec NAME [options] -- COMMAND [ARGS...]`: a command run
 * through a breaker shared through a store file (include/breaker/store.h):
 * every `breaker exec` of a host, whatever process runs it (cron, scripts,
 * systemd units), sees the same breaker.
 *
 * Exit statuses: the command's own; 75 (EX_TEMPFAIL, or --refused-exit)
 * when the breaker refused it; 124 on --timeout; 127 when it could not be
 * started; exec's own failures cli/cli.h's, 64 and up, which a command's
 * usual statuses are not. With --redis, NAME is a breaker of the fleet
 * store instead (exec_fleet.c).
 */
#include "ops/commands.h"
#include "ops/exec_fleet.h"
#include "ops/ops.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILL_GRACE_NS TOOL_SEC

enum { OPT_STORE = 256, OPT_TIMEOUT, OPT_FAIL_ON, OPT_REFUSED_EXIT, OPT_SOURCE };

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
    "keeps its stored limits (a note says so if they differ from -c or -b).\n" TOOL_STORE_PATH_HELP
    "\n"
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
    "Redis cannot be reached, the call is admitted, with a note. A Redis that\n"
    "refuses the configuration (a wrong password, a missing ACL permission or\n"
    "command, a TLS certificate) is no outage: COMMAND is not run and the exit\n"
    "status is 78 (EX_CONFIG), unless --redis-run-anyway. AUTH uses the\n"
    "password of --redis-password-file, else $BREAKER_REDIS_PASSWORD.\n"
    "\n"
    "options:\n"
    "      --store PATH      the store file (see above; not with --redis)\n"
    "      --redis ADDR      NAME is the fleet's, on the Redis at ADDR: HOST[:PORT],\n"
    "                        [IPV6][:PORT] or unix:PATH\n"
    "      --redis-cluster SEEDS\n"
    "                        NAME is the fleet's, on the Redis Cluster that has\n"
    "                        these nodes among its own: HOST[:PORT] or\n"
    "                        [IPV6][:PORT], comma-separated (database 0 "
    "only)\n"
    "      --redis-sentinel SENTINELS\n"
    "                        NAME is the fleet's, on the master that the Redis\n"
    "                        Sentinels at SENTINELS (HOST[:PORT],...) watch as\n"
    "      --redis-master MASTER\n"
    "                        (both or neither), followed across a "
    "failover\n" EXEC_FLEET_OPTIONS_HELP "      --redis-run-anyway\n"
    "                        when the fleet store refuses the configuration (a\n"
    "                        wrong password, a missing permission or command,\n"
    "                        TLS), run COMMAND on a local breaker alone instead\n"
    "                        of exiting 78\n"
    "  -c, --config FILE     configure NAME from the [breaker NAME] section of FILE\n"
    "  -b, --breaker SPEC    configure NAME: 'key=value,key=value' (see breaker keys)\n"
    "      --timeout D       kill COMMAND's process group after D (SIGTERM, then\n"
    "                        SIGKILL 1s later) and count a failure; exit 124\n"
    "      --fail-on CODES   exit statuses that are failures, e.g. 1,3-5 (others\n"
    "                        are ignored; default: every non-zero status fails)\n"
    "      --refused-exit N  exit status when refused (default 75)\n"
    "      --source KEY      the caller this run is for (a tenant, a job, a user):\n"
    "                        failures name it, so that a breaker with\n"
    "                        min_failing_sources trips only on failures of that\n"
    "                        many distinct KEYs (by default 3, once any failure\n"
    "                        names one)\n"
    "  -h, --help            show this text\n"
    "\n"
    "examples:\n"
    "  breaker exec billing-sync -b 'trip=consecutive,failure_threshold=3' \\\n"
    "      -- /usr/local/bin/sync-billing\n"
    "  breaker exec api --timeout 30s --fail-on 7,22 -- curl -fsS https://api/x\n"
    "  breaker exec --redis redis.internal:6379 api -- curl -fsS https://api/x\n";

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
    char **command;  /* NULL-terminated, after "--" */
    bool done;       /* --help answered */
    uint64_t source; /* --source: its key (tool_source_key()), 0 = none */
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
        int rc = tool_load_ini(optarg, NULL, NULL, &a->breakers, msg, sizeof(msg));
        if (rc == 0) return 0;
        tool_error(stderr, "breaker exec: %s", msg);
        return tool_load_exit(rc);
    }
    size_t before = a->breakers.count;
    if (tool_breakers_add_spec(&a->breakers, optarg, name_hint, msg, sizeof(msg)) != 0) {
        tool_error(stderr, "breaker exec: -b %s", msg);
        return TOOL_EXIT_CONFIG;
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
    if (exec_fleet_is_option(c)) return exec_fleet_option("exec", c, optarg, &a->fleet);
    switch (c) {
    case 'c':
    case 'b':
        return exec_config_option(a, c, name_hint);
    case OPT_STORE:
        a->store = optarg;
        return 0;
    case OPT_TIMEOUT:
        return tool_duration_option("exec", "--timeout", optarg, 1, UINT64_MAX, "above 0",
                                    &a->timeout_ns);
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
    case OPT_SOURCE:
        if (optarg[0] == '\0')
            return tool_usage_error("exec", "--source: empty (leave it out for none)");
        a->source = tool_source_key(optarg);
        return 0;
    default:
        return tool_option_error("exec", c, argv, longopts);
    }
}

/* Whether `s` is an option of `longopts` (or -c, -b) whose value is the
 * next argument. */
static bool takes_value(const char *s, const struct option *longopts) {
    if (strcmp(s, "-c") == 0 || strcmp(s, "-b") == 0) return true;
    if (strncmp(s, "--", 2) != 0) return false;
    for (const struct option *o = longopts; o->name != NULL; o++)
        if (o->has_arg == required_argument && strcmp(s + 2, o->name) == 0) return true;
    return false;
}

/* The first argument not an option value: NAME, which -b needs before the
 * options are read ("exec NAME -b k=v" and "exec -b k=v NAME" both work). */
static const char *find_name(int argc, char **argv, const struct option *longopts) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] != '-') return s;
        if (takes_value(s, longopts)) i++;
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
        EXEC_FLEET_LONGOPTS,
        {"source", required_argument, NULL, OPT_SOURCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof(*a));
    a->refused_exit = TOOL_EXIT_REFUSED;
    /* Only what comes before "--" is ours: COMMAND's own options are not. */
    int dash = 1;
    while (dash < argc && strcmp(argv[dash], "--") != 0)
        dash++;
    const char *hint = find_name(dash, argv, longopts);
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
    int bad = exec_fleet_options_check("exec", &a->fleet);
    if (bad != 0) return bad;
    return tool_check_name("exec", a->name);
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
        return TOOL_EXIT_CONFIG;
    }
    int rc = tool_validate_breaker("exec", b);
    if (rc != 0) return rc;
    *out = &b->cfg;
    return 0;
}

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
    sa.sa_handler = tool_on_signal;
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
    _exit(TOOL_EXIT_NOT_RUN);
}

/* Wait for the child `pid`, forwarding stop requests and enforcing the
 * timeout: SIGTERM to the group, SIGKILL after KILL_GRACE_NS.
 * @return 0 with `r`, or -1 with errno. */
static int wait_child(pid_t pid, uint64_t timeout_ns, const sigset_t *set, struct run_result *r) {
    uint64_t deadline = timeout_ns != 0 ? tool_add_ns(tool_now_ns(), timeout_ns) : 0;
    bool termed = false;
    for (;;) {
        int wstatus;
        pid_t w = waitpid(pid, &wstatus, WNOHANG);
        if (w < 0 && errno != EINTR) return -1;
        if (w == pid) {
            r->signalled = WIFSIGNALED(wstatus);
            r->status = r->signalled ? 128 + WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
            if (r->timed_out) r->status = TOOL_EXIT_TIMED_OUT;
            return 0;
        }
        int sig = tool_wait_signal(set, deadline);
        if (sig < 0) return -1;
        if (sig == 0) { /* a deadline: first the timeout, then the grace */
            r->timed_out = true;
            /* ESRCH: the group is already gone, the next waitpid reaps it. */
            if (kill(-pid, termed ? SIGKILL : SIGTERM) != 0 && errno != ESRCH) return -1;
            deadline = termed ? 0 : tool_add_ns(tool_now_ns(), KILL_GRACE_NS);
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
        return TOOL_EXIT_OSERR;
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
        return TOOL_EXIT_OSERR;
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
        r->status = TOOL_EXIT_NOT_RUN;
        return 0;
    }
    if (wait_child(pid, timeout_ns, &sig->set, r) != 0) {
        tool_error(stderr, "breaker exec: waiting for %s: %s", command[0], strerror(errno));
        return TOOL_EXIT_OSERR;
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
    int st = breaker_acquire_from(b, &permit, a->source);
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
        return TOOL_EXIT_IOERR;
    }
    struct run_result r;
    int rc = run_command(a->command, a->timeout_ns, permit_kind(&permit), sig, &r);
    if (rc != 0) {
        /* Our failure, not the dependency's. */
        (void)breaker_complete(b, &permit, BREAKER_IGNORED);
        return rc;
    }
    if (r.timed_out) {
        char d[32];
        tool_error(stderr, "breaker exec: %s: timed out after %s, killed", a->command[0],
                   tool_format_duration(a->timeout_ns, d, sizeof(d)));
    }
    /* STALE (an operator reset meanwhile) is fine: the outcome is moot. */
    (void)breaker_complete_from(b, &permit, run_outcome(a, &r), a->source);
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
        return TOOL_EXIT_OSERR;
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
    if ((rc = tool_open_store("exec", a->store, true, &st, NULL, 0)) != 0) return rc;
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
        rc = TOOL_EXIT_IOERR;
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
