/* SPDX-License-Identifier: MIT */
/*
 * test_cli_exec_redis.c - `breaker exec --redis` (tools/ops/exec_fleet.c)
 * against a real redis-server (redis_server.c), with real processes: the
 * built `breaker` binary, run by fork/exec, runs this program again as its
 * COMMAND (`--command`), which plays the dependency.
 *
 *   test_cli_exec_redis BREAKER_BINARY
 *
 * What is asserted is what the library and the tool promise, never a
 * timing: a COMMAND records its own run (the time it spent "calling the
 * dependency", how breaker exec admitted it, $BREAKER_PERMIT, and the
 * fleet's leases in Redis at that moment); every run whose breaker exec
 * found Redis unreachable (its note) or took a probe without a lease (the
 * local breaker alone) is the documented degraded case and is left out of
 * the fleet's claims, and counted. Every wait is bounded; the server is
 * stopped on every path (teardown, and redis_server.c's atexit handler).
 */
#define _GNU_SOURCE /* setenv, mkdtemp, prctl */

#include "redis_server.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define NLOOPS   10
#define MAX_RUNS 40000 /* launches recorded; the scenario stops short of it */
#define WORK_MS  40    /* a COMMAND's call to the dependency */
#define DEADLINE 60000 /* ms: the bound of every wait of the scenario */
#define NAME     "exec.fleet"
/* half_open_max_probes 1; a probe_timeout far beyond a run, so that a
 * lease never expires under a running COMMAND; fixed open waits. */
#define FLEET_CFG                                                                       \
    "min_calls=5,failure_rate=0.5,window=10m,open=300ms,open_backoff=1,open_max=300ms," \
    "open_jitter=0,half_open_max_probes=1,half_open_successes=2,probe_timeout=20s"

static const char *bk;                   /* the breaker binary */
static char self_path[PATH_MAX];         /* this program, as COMMAND */
static char addr[sizeof("unix:") + 300]; /* --redis unix:SOCK */

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_ms(int ms) { (void)poll(NULL, 0, ms); }

/* ---- Redis, read directly ------------------------------------------------------*/

static redisContext *rconnect(const struct test_redis *r, int db) {
    struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
    redisContext *c = redisConnectUnixWithTimeout(r->sock, tv);
    if (c == NULL || c->err) {
        if (c != NULL) redisFree(c);
        return NULL;
    }
    redisReply *rep = NULL;
    if (r->password != NULL) rep = redisCommand(c, "AUTH %s", r->password);
    if (rep != NULL) freeReplyObject(rep);
    rep = redisCommand(c, "SELECT %d", db);
    if (rep != NULL) freeReplyObject(rep);
    return c;
}

/* The calls and failures of `name`'s fleet window in database `db`. */
static void window(const struct test_redis *r, int db, const char *name, long long *calls,
                   long long *failures) {
    *calls = *failures = -1;
    redisContext *c = rconnect(r, db);
    if (c == NULL) return;
    redisReply *rep = redisCommand(c, "HGETALL breaker:v2:{%s}:w", name);
    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY) {
        *calls = *failures = 0;
        for (size_t i = 0; i + 1 < rep->elements; i += 2) {
            long long v = strtoll(rep->element[i + 1]->str, NULL, 10);
            if (rep->element[i]->str[0] == 'c') *calls += v;
            if (rep->element[i]->str[0] == 'f') *failures += v;
        }
    }
    if (rep != NULL) freeReplyObject(rep);
    redisFree(c);
}

static long long fleet_field(const struct test_redis *r, const char *field) {
    return test_redis_int(r, "HGET breaker:v2:{" NAME "}:s %s", field);
}

static long long fleet_field_of(const struct test_redis *r, const char *name, const char *field) {
    return test_redis_int(r, "HGET breaker:v2:{%s}:s %s", name, field);
}

/* ---- Running breaker exec --------------------------------------------------------*/

/* Where run_tool() sends standard output (NULL: /dev/null). */
static const char *stdout_path;

/* Run `breaker exec ARGS...` (NULL-terminated), standard output to
 * /dev/null (or stdout_path), standard error to `err_path`. @return its exit status, or
 * 128+N when killed by signal N, or -1. */
static int run_tool(const char *err_path, const char *sub, const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = bk;
    argv[n++] = sub;
    for (int i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int out = open(stdout_path != NULL ? stdout_path : "/dev/null",
                       O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
        union {
            const char **c;
            char *const *m;
        } args_m = {.c = argv};
        execv(bk, args_m.m);
        _exit(126);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_breaker(const char *err_path, const char *const *args) {
    return run_tool(err_path, "exec", args);
}

/* Whether the file holds `text`. */
static int file_has(const char *path, const char *text) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

/* ---- The scenario's shared record ------------------------------------------------*/

/* Phases, as a loop saw them when it launched a breaker exec. */
enum {
    P_CLOSED,     /* before the test saw the fleet open */
    P_OPEN,       /* the test saw the fleet open; the dependency is down */
    P_RECOVERING, /* the dependency is healthy; the fleet not yet seen closed */
    P_RECOVERED,  /* the test saw the fleet closed again */
    NPHASES
};
static const char *const phase_names[NPHASES] = {"closed", "open", "recovering", "recovered"};

enum { K_NONE, K_CALL, K_PROBE, K_LEASED };

/* One launch: by its loop (phase, status, degraded) and by its COMMAND, if
 * it ran (the rest). Indexed by the launch number the loop passes down in
 * $T_LAUNCH. */
struct launch {
    _Atomic int done; /* the loop filled status and degraded */
    int phase, status, degraded, loop;
    _Atomic int ran;  /* the COMMAND filled what follows */
    int kind;         /* K_*, from $BREAKER_PERMIT */
    long long leases; /* ZCARD of the name's lease set as it began */
    uint64_t start_ns, end_ns;
};

struct shared {
    _Atomic int phase, healthy, stop;
    _Atomic int launches;
    struct launch l[MAX_RUNS];
};

static struct shared *sh;
static char dir[64];
static pid_t loops[NLOOPS];

static struct shared *map_shared(const char *path, int create) {
    int fd = open(path, O_RDWR | (create ? O_CREAT : 0), 0600);
    if (fd < 0) return NULL;
    if (create && ftruncate(fd, sizeof(struct shared)) != 0) {
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* --command: the dependency. Down (exit 1) until the test says healthy. */
static int command_main(void) {
    const char *path = getenv("T_SHARED"), *sock = getenv("T_SOCK"), *id = getenv("T_LAUNCH");
    struct shared *s = path != NULL ? map_shared(path, 0) : NULL;
    if (s == NULL || sock == NULL || id == NULL) return 100;
    long idx = strtol(id, NULL, 10);
    if (idx < 0 || idx >= MAX_RUNS) return 100;
    struct launch *l = &s->l[idx];
    const char *permit = getenv("BREAKER_PERMIT");
    l->kind = permit == NULL                        ? K_NONE
              : strcmp(permit, "call") == 0         ? K_CALL
              : strcmp(permit, "leased-probe") == 0 ? K_LEASED
              : strcmp(permit, "probe") == 0        ? K_PROBE
                                                    : K_NONE;
    l->leases = -1;
    if (l->kind == K_LEASED) {
        struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
        redisContext *c = redisConnectUnixWithTimeout(sock, tv);
        redisReply *rep =
            c != NULL && !c->err ? redisCommand(c, "ZCARD breaker:v2:{%s}:l", NAME) : NULL;
        if (rep != NULL && rep->type == REDIS_REPLY_INTEGER) l->leases = rep->integer;
        if (rep != NULL) freeReplyObject(rep);
        if (c != NULL) redisFree(c);
    }
    l->start_ns = mono_ns();
    nap_ms(WORK_MS);
    int healthy = atomic_load(&s->healthy);
    l->end_ns = mono_ns();
    atomic_store(&l->ran, 1);
    munmap(s, sizeof *s);
    return healthy ? 0 : 1;
}

/* One of NLOOPS processes: breaker exec after breaker exec, until stopped. */
static void loop_main(int loop) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char err_path[128];
    snprintf(err_path, sizeof err_path, "%s/loop%d.err", dir, loop);
    const char *args[] = {"--redis", addr, "--redis-timeout", "5s",        "-b", FLEET_CFG,
                          NAME,      "--", self_path,         "--command", NULL};
    while (!atomic_load(&sh->stop)) {
        int idx = atomic_fetch_add(&sh->launches, 1);
        if (idx >= MAX_RUNS) break;
        struct launch *l = &sh->l[idx];
        l->phase = atomic_load(&sh->phase);
        l->loop = loop;
        char id[16];
        snprintf(id, sizeof id, "%d", idx);
        setenv("T_LAUNCH", id, 1);
        l->status = run_breaker(err_path, args);
        l->degraded = file_has(err_path, "is unreachable");
        atomic_store(&l->done, 1);
        nap_ms(5);
    }
    _exit(0);
}

/* Stop the loops (bounded: SIGKILL after 20 s) and reap them. */
static void stop_loops(void) {
    if (sh == NULL) return;
    atomic_store(&sh->stop, 1);
    uint64_t until = mono_ns() + 20000 * (uint64_t)1000000;
    for (int i = 0; i < NLOOPS; i++) {
        if (loops[i] <= 0) continue;
        while (waitpid(loops[i], NULL, WNOHANG) == 0) {
            if (mono_ns() > until) {
                kill(loops[i], SIGKILL);
                waitpid(loops[i], NULL, 0);
                break;
            }
            nap_ms(10);
        }
        loops[i] = 0;
    }
}

/* ---- Setup ---------------------------------------------------------------------*/

static int start_server(void **state, const char *password) {
    struct test_redis *r = calloc(1, sizeof *r);
    if (r == NULL) return -1;
    r->password = password;
    if (test_redis_start(r) != 0) {
        free(r);
        return -1;
    }
    snprintf(addr, sizeof addr, "unix:%s", r->sock);
    snprintf(dir, sizeof dir, "/tmp/breaker-exec-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        test_redis_stop(r);
        free(r);
        return -1;
    }
    *state = r;
    return 0;
}

static int setup(void **state) { return start_server(state, NULL); }
static int setup_password(void **state) { return start_server(state, "exec-s3cret"); }

static int teardown(void **state) {
    stop_loops();
    if (sh != NULL) munmap(sh, sizeof *sh);
    sh = NULL;
    struct test_redis *r = *state;
    test_redis_stop(r);
    free(r);
    /* The loops' files, the password files, the shared record. */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return 0;
}

/* ---- Tests ---------------------------------------------------------------------*/

/* A short-lived breaker exec sends its evidence before it exits: the name's
 * window in Redis counts each run as soon as breaker exec has returned. */
static void each_exec_sends_its_evidence_before_it_exits(void **state) {
    struct test_redis *r = *state;
    char err[128];
    snprintf(err, sizeof err, "%s/err", dir);
    static const struct {
        const char *cmd;
        int status;
        long long calls, failures;
    } runs[] = {
        {"true", 0, 1, 0},
        {"false", 1, 2, 1},
        {"exit 4", 4, 2, 1}, /* --fail-on 1: ignored, not counted */
        {"true", 0, 3, 1},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const char *args[] = {"--redis", addr, "--fail-on", "1",         "ev",
                              "--",      "sh", "-c",        runs[i].cmd, NULL};
        assert_int_equal(run_breaker(err, args), runs[i].status);
        long long calls, failures;
        window(r, 0, "ev", &calls, &failures);
        printf("after `%s`: the fleet window holds %lld calls, %lld failures\n", runs[i].cmd, calls,
               failures);
        assert_int_equal(calls, runs[i].calls);
        assert_int_equal(failures, runs[i].failures);
    }
}

/* Redis unreachable: the fleet is degraded, and a breaker exec is its new
 * local breaker alone, which admits the call; a note says so. */
static void with_redis_unreachable_the_call_runs_with_a_note(void **state) {
    (void)state;
    char err[128], marker[128], none[160];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(marker, sizeof marker, "%s/ran", dir);
    snprintf(none, sizeof none, "unix:%s/no-such.sock", dir);
    char touch[160];
    snprintf(touch, sizeof touch, "touch '%s'", marker);
    const char *args[] = {"--redis", none, "down", "--", "sh", "-c", touch, NULL};
    assert_int_equal(run_breaker(err, args), 0);
    assert_int_equal(access(marker, F_OK), 0);
    assert_true(file_has(err, "is unreachable"));
    const char *fails[] = {"--redis", "127.0.0.1:1", "down", "--", "false", NULL};
    assert_int_equal(run_breaker(err, fails), 1);
    assert_true(file_has(err, "Connection refused"));
}

/* Redis unreachable for an operator's control (open, close, reset, shadow,
 * config --redis): exit 69, the error names the command and what did not
 * reach Redis; no note of exec's about a local breaker admitting a call
 * (there is no call), and nothing names exec. */
static void with_redis_unreachable_a_control_says_so_in_its_own_name(void **state) {
    (void)state;
    char err[128];
    snprintf(err, sizeof err, "%s/err", dir);
    static const struct {
        const char *cmd, *args[6], *says;
    } cases[] = {
        {"shadow",
         {"down", "on", "--redis", "127.0.0.1:1", NULL},
         "breaker shadow: down: the "
         "shadow mode did not reach "
         "Redis"},
        {"config",
         {"down", "--redis", "127.0.0.1:1", NULL},
         "breaker config: down: the read "
         "did not reach Redis"},
        {"config",
         {"down", "min_calls=5", "--redis", "127.0.0.1:1", NULL},
         "breaker config: "
         "down: the read did "
         "not reach Redis"},
        {"open",
         {"down", "--redis", "127.0.0.1:1", NULL},
         "breaker open: down: the order did "
         "not reach Redis"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run_tool(err, cases[i].cmd, cases[i].args);
        int says = file_has(err, cases[i].says), exec = file_has(err, "breaker exec");
        int note = file_has(err, "admits it");
        printf("breaker %s ... --redis 127.0.0.1:1: exit %d, says it %d, names exec %d, exec's "
               "note %d\n",
               cases[i].cmd, rc, says, exec, note);
        assert_int_equal(rc, 69);
        assert_true(says);
        assert_false(exec);
        assert_false(note);
    }
}

/* AUTH from --redis-password-file or $BREAKER_REDIS_PASSWORD, and
 * --redis-db: the evidence lands in that database; without the password the
 * fleet store refuses the configuration (Redis's reason; exit 78, the
 * command not run). */
static void password_and_database_options_reach_the_server(void **state) {
    struct test_redis *r = *state;
    char err[128], pw[128];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(pw, sizeof pw, "%s/password", dir);
    FILE *f = fopen(pw, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", r->password);
    fclose(f);
    long long calls, failures;
    const char *none[] = {"--redis", addr, "pw", "--", "true", NULL};
    unsetenv("BREAKER_REDIS_PASSWORD");
    assert_int_equal(run_breaker(err, none), 78);
    assert_true(file_has(err, "refuses this configuration"));
    assert_true(file_has(err, "NOAUTH"));
    window(r, 0, "pw", &calls, &failures);
    assert_int_equal(calls, 0);
    const char *file[] = {"--redis", addr, "--redis-password-file", pw, "pw", "--", "true", NULL};
    assert_int_equal(run_breaker(err, file), 0);
    assert_false(file_has(err, "unreachable"));
    window(r, 0, "pw", &calls, &failures);
    assert_int_equal(calls, 1);
    setenv("BREAKER_REDIS_PASSWORD", r->password, 1);
    const char *db[] = {"--redis", addr, "--redis-db", "5", "pw", "--", "true", NULL};
    assert_int_equal(run_breaker(err, db), 0);
    unsetenv("BREAKER_REDIS_PASSWORD");
    window(r, 5, "pw", &calls, &failures);
    assert_int_equal(calls, 1);
    window(r, 0, "pw", &calls, &failures);
    assert_int_equal(calls, 1);
    /* An ACL user: --redis-user (or $BREAKER_REDIS_USER) with the password. */
    (void)test_redis_int(r, "ACL SETUSER execuser on >%s ~breaker:* +@all", r->password);
    const char *user[] = {
        "--redis", addr, "--redis-password-file", pw, "--redis-user", "execuser", "pw", "--",
        "true",    NULL};
    assert_int_equal(run_breaker(err, user), 0);
    assert_false(file_has(err, "unreachable"));
    window(r, 0, "pw", &calls, &failures);
    assert_int_equal(calls, 2);
    const char *wrong[] = {
        "--redis", addr, "--redis-password-file", pw, "--redis-user", "nobody", "pw", "--",
        "true",    NULL};
    assert_int_equal(run_breaker(err, wrong), 78); /* refused: not run */
    assert_true(file_has(err, "WRONGPASS"));
    setenv("BREAKER_REDIS_USER", "execuser", 1);
    const char *nopass[] = {"--redis", addr, "pw", "--", "true", NULL};
    assert_int_equal(run_breaker(err, nopass), 78); /* a user needs a password */
    assert_true(file_has(err, "username: an ACL user needs a password"));
    unsetenv("BREAKER_REDIS_USER");
}

/* Wait (bounded) until the fleet's state is `st` (0 closed) or, with
 * `not`, is anything else. @return 1, or 0 at the deadline. */
static int wait_state(const struct test_redis *r, long long st, int not, int ms) {
    uint64_t until = mono_ns() + (uint64_t)ms * 1000000;
    while (mono_ns() < until) {
        long long now = fleet_field(r, "st");
        if (fleet_field(r, "trips") >= 1 && (not ? now != st : now == st)) return 1;
        nap_ms(5);
    }
    return 0;
}

/* Wait (bounded) until `pred` holds over the launches. */
static int wait_launches(int (*pred)(void), int ms) {
    uint64_t until = mono_ns() + (uint64_t)ms * 1000000;
    while (mono_ns() < until) {
        if (pred()) return 1;
        nap_ms(10);
    }
    return 0;
}

/* A run the fleet decided: its breaker exec reached Redis before admitting
 * it, and a probe of it held a lease (else the local breaker alone
 * decided: the documented degraded case). */
static int fleet_decided(const struct launch *l) {
    return atomic_load(&l->done) && !l->degraded && l->kind != K_PROBE;
}

/* The most runs of `want(l)` calling the dependency at once. */
static int most_at_once(int n, int (*want)(const struct launch *)) {
    int most = 0;
    for (int i = 0; i < n; i++) {
        const struct launch *a = &sh->l[i];
        if (!atomic_load(&a->ran) || !want(a)) continue;
        int at_once = 0; /* the runs under way when `a` began, `a` included */
        for (int j = 0; j < n; j++) {
            const struct launch *b = &sh->l[j];
            if (atomic_load(&b->ran) && want(b) && b->start_ns <= a->start_ns &&
                b->end_ns > a->start_ns)
                at_once++;
        }
        if (at_once > most) most = at_once;
    }
    return most;
}

static int is_probe(const struct launch *l) { return l->kind == K_PROBE || l->kind == K_LEASED; }
static int is_leased(const struct launch *l) { return l->kind == K_LEASED; }
static int any(const struct launch *l) { return l->kind != K_NONE; }
static int open_and_decided(const struct launch *l) {
    return l->phase == P_OPEN && fleet_decided(l);
}

static int count(int phase, int (*want)(const struct launch *)) {
    int n = 0, total = atomic_load(&sh->launches);
    for (int i = 0; i < total && i < MAX_RUNS; i++) {
        const struct launch *l = &sh->l[i];
        if (l->phase == phase && atomic_load(&l->done) && want(l)) n++;
    }
    return n;
}

static int ran(const struct launch *l) { return atomic_load(&l->ran); }
static int leased_ran(const struct launch *l) { return ran(l) && l->kind == K_LEASED; }
static int five_failed_rounds(void) { return count(P_OPEN, leased_ran) >= 5; }

/* Every loop has finished 5 launches since the fleet was seen closed. */
static int five_each_recovered(void) {
    int per[NLOOPS] = {0};
    int total = atomic_load(&sh->launches);
    for (int i = 0; i < total && i < MAX_RUNS; i++)
        if (sh->l[i].phase == P_RECOVERED && atomic_load(&sh->l[i].done)) per[sh->l[i].loop]++;
    for (int i = 0; i < NLOOPS; i++)
        if (per[i] < 5) return 0;
    return 1;
}

static int status_is(const struct launch *l, int st) { return l->status == st; }
static int exit0(const struct launch *l) { return status_is(l, 0); }
static int exit1(const struct launch *l) { return status_is(l, 1); }
static int refused(const struct launch *l) { return status_is(l, 75); }
static int refused_ran(const struct launch *l) { return refused(l) && ran(l); }
static int other_status(const struct launch *l) {
    return l->status != 0 && l->status != 1 && l->status != 75;
}
static int all(const struct launch *l) {
    (void)l;
    return 1;
}
static int degraded(const struct launch *l) { return l->degraded || l->kind == K_PROBE; }
static int calls_ran(const struct launch *l) { return ran(l) && l->kind == K_CALL; }
static int decided_call(const struct launch *l) { return fleet_decided(l) && calls_ran(l); }
static int lease_seen(const struct launch *l) { return leased_ran(l) && l->leases >= 1; }
static int lease_ok(const struct launch *l) { return leased_ran(l) && l->leases == 1; }

/* 10 processes run breaker exec in loops against one fleet name; the
 * dependency (this program as COMMAND) is down, then healthy. */
static void ten_processes_share_the_fleet_probe_limit_and_all_recover(void **state) {
    struct test_redis *r = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/shared", dir);
    sh = map_shared(path, 1);
    assert_non_null(sh);
    setenv("T_SHARED", path, 1);
    setenv("T_SOCK", r->sock, 1);
    for (int i = 0; i < NLOOPS; i++) {
        loops[i] = fork();
        assert_true(loops[i] >= 0);
        if (loops[i] == 0) loop_main(i);
    }
    /* Down: the fleet trips on the runs' failures; then five recovery
     * rounds fail (five leased probes ran); then the dependency is healthy:
     * the fleet closes, and every loop makes five more runs. A wait that
     * ends at its deadline skips what follows; the record is printed and
     * the wait fails after it. */
    uint64_t t0 = mono_ns(), t_open = 0, t_healthy = 0, t_closed = 0;
    long long trans_healthy = -1, trips = -1, trans = -1;
    int tripped = wait_state(r, 0, 1, DEADLINE), failed_rounds = 0, closed = 0, stayed = 0;
    if (tripped) {
        atomic_store(&sh->phase, P_OPEN);
        t_open = mono_ns();
        failed_rounds = wait_launches(five_failed_rounds, DEADLINE);
    }
    if (failed_rounds) {
        trans_healthy = fleet_field(r, "transitions");
        atomic_store(&sh->healthy, 1);
        atomic_store(&sh->phase, P_RECOVERING);
        t_healthy = mono_ns();
        closed = wait_state(r, 0, 0, DEADLINE);
    }
    if (closed) {
        t_closed = mono_ns();
        atomic_store(&sh->phase, P_RECOVERED);
        trips = fleet_field(r, "trips");
        trans = fleet_field(r, "transitions");
        stayed = wait_launches(five_each_recovered, DEADLINE);
    }
    stop_loops();
    int n = atomic_load(&sh->launches);
    if (n > MAX_RUNS) n = MAX_RUNS;

    printf("%d launches of breaker exec by %d processes; fleet open %.2f s after the start, "
           "closed %.2f s after the dependency recovered (-1: never)\n",
           n, NLOOPS, tripped ? (double)(t_open - t0) / 1e9 : -1.0,
           closed ? (double)(t_closed - t_healthy) / 1e9 : -1.0);
    printf("launched while    launches  exit 0  exit 1  refused  other   calls  probes  leased  "
           "degraded\n");
    for (int p = 0; p < NPHASES; p++)
        printf("  %-12s %10d %7d %7d %8d %6d %7d %7d %7d %9d\n", phase_names[p], count(p, all),
               count(p, exit0), count(p, exit1), count(p, refused), count(p, other_status),
               count(p, calls_ran), count(p, is_probe), count(p, leased_ran), count(p, degraded));
    int most_open = most_at_once(n, open_and_decided), most_probes = most_at_once(n, is_probe);
    int most_leased = most_at_once(n, is_leased), most_any = most_at_once(n, any);
    printf("at once: %d runs launched with the fleet open, %d probes, %d leased probes (%d runs "
           "of any kind, closed calls before the trip included)\n",
           most_open, most_probes, most_leased, most_any);
    int leased = 0, seen = 0, exact = 0;
    for (int p = 0; p < NPHASES; p++) {
        leased += count(p, leased_ran);
        seen += count(p, lease_seen);
        exact += count(p, lease_ok);
    }
    printf("leased probes %d: lease in Redis as each began %d (exactly one: %d); fleet trips %lld, "
           "transitions from recovery to close %lld, after close %lld\n",
           leased, seen, exact, trips, trans - trans_healthy,
           fleet_field(r, "transitions") - trans);

    assert_true(tripped);
    assert_true(failed_rounds);
    assert_true(closed);
    assert_true(stayed);
    for (int p = 0; p < NPHASES; p++)
        assert_int_equal(count(p, other_status), 0);
    /* Once the fleet is open: one run at a time, each a probe holding a
     * lease, which Redis shows while it runs. */
    assert_int_equal(count(P_OPEN, decided_call), 0);
    assert_int_equal(most_open, 1);
    assert_int_equal(most_leased, 1);
    assert_int_equal(leased, seen);
    assert_int_equal(leased, exact); /* half_open_max_probes 1 */
    assert_true(count(P_OPEN, leased_ran) >= 5);
    for (int p = 0; p < NPHASES; p++) /* a refused COMMAND never ran */
        assert_int_equal(count(p, refused_ran), 0);
    /* Recovered within bounded rounds: open -> half-open -> closed, plus at
     * most one failed round whose probe ended just before the recovery. */
    assert_true(trans - trans_healthy <= 4);
    /* ...and stays so: every run launched since is admitted as a call and
     * succeeds, no refusal, no new trip. */
    assert_int_equal(count(P_RECOVERED, refused), 0);
    assert_int_equal(count(P_RECOVERED, exit0), count(P_RECOVERED, all));
    assert_int_equal(count(P_RECOVERED, calls_ran), count(P_RECOVERED, all));
    assert_int_equal(fleet_field(r, "trips"), trips);
    assert_int_equal(fleet_field(r, "transitions"), trans);
    assert_int_equal(fleet_field(r, "st"), 0);
}

/* --redis-cluster SEEDS: breaker exec routes NAME to the master of its
 * slot in a real 3-master Redis Cluster (one seed, not that master, is
 * enough), the fleet's consecutive run trips it there, and the next run is
 * refused without running. */
static void a_cluster_fleet_trips_through_breaker_exec(void **state) {
    (void)state;
    struct test_cluster c;
    memset(&c, 0, sizeof c);
    assert_int_equal(test_cluster_start(&c, 3, 0, 2000), 0);
    char err[128], marker[128], touch[160];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(marker, sizeof marker, "%s/ran", dir);
    snprintf(touch, sizeof touch, "touch '%s'", marker);
    redisReply *slot = test_cluster_command(&c, 0, "CLUSTER KEYSLOT {cl.exec}");
    assert_non_null(slot);
    assert_int_equal(slot->type, REDIS_REPLY_INTEGER);
    int master = test_cluster_master_of(&c, (unsigned)slot->integer);
    freeReplyObject(slot);
    assert_true(master >= 0);
    /* The seed: another node than the name's master. */
    char seed[64];
    snprintf(seed, sizeof seed, "127.0.0.1:%d", c.node[(master + 1) % 3].port);
    const char *cfg = "trip=consecutive,failure_threshold=3,open=1h,open_max=1h";
    for (int i = 0; i < 3; i++) {
        const char *args[] = {"--redis-cluster", seed, "-b", cfg, "cl.exec", "--", "false", NULL};
        assert_int_equal(run_breaker(err, args), 1);
    }
    redisReply *st = test_cluster_command(&c, master, "HGET breaker:v2:{cl.exec}:s st");
    assert_non_null(st);
    assert_int_equal(st->type, REDIS_REPLY_STRING);
    assert_string_equal(st->str, "1"); /* OPEN, on the name's master */
    freeReplyObject(st);
    const char *args[] = {"--redis-cluster", seed, "cl.exec", "--", "sh", "-c", touch, NULL};
    assert_int_equal(run_breaker(err, args), 75);
    assert_int_not_equal(access(marker, F_OK), 0); /* refused: never ran */
    test_cluster_stop(&c);
}

/* `breaker open|close|reset NAME --redis ADDR`: the whole fleet's order,
 * with who (user@host) and --why stored in Redis; a `breaker exec` (another
 * host) is refused while the fleet is forced open, runs after the reset;
 * bad arguments are usage errors naming the option. */
static void operator_orders_reach_the_whole_fleet(void **state) {
    struct test_redis *r = *state;
    char err[128];
    snprintf(err, sizeof err, "%s/err", dir);
    const char *open_args[] = {"ord", "--redis", addr, "--why", "INC-7 drain", NULL};
    assert_int_equal(run_tool(err, "open", open_args), 0);
    long long ord = fleet_field_of(r, "ord", "cf"), st = fleet_field_of(r, "ord", "st");
    redisContext *c = rconnect(r, 0);
    redisReply *who = redisCommand(c, "HGET breaker:v2:{ord}:s cw");
    redisReply *why = redisCommand(c, "HGET breaker:v2:{ord}:s cy");
    int who_ok = who != NULL && who->type == REDIS_REPLY_STRING && strchr(who->str, '@') != NULL;
    int why_ok =
        why != NULL && why->type == REDIS_REPLY_STRING && strcmp(why->str, "INC-7 drain") == 0;
    printf("breaker open --redis: ok %lld, st %lld, who %s, why %s\n", ord, st,
           who != NULL && who->str != NULL ? who->str : "(none)",
           why != NULL && why->str != NULL ? why->str : "(none)");
    if (who != NULL) freeReplyObject(who);
    if (why != NULL) freeReplyObject(why);
    redisFree(c);
    assert_int_equal(ord, 1);
    assert_int_equal(st, 1);
    assert_true(who_ok && why_ok);
    const char *exec_args[] = {"--redis", addr, "ord", "--", "true", NULL};
    assert_int_equal(run_breaker(err, exec_args), 75); /* refused: forced open */
    const char *reset_args[] = {"ord", "--redis", addr, NULL};
    assert_int_equal(run_tool(err, "reset", reset_args), 0);
    assert_int_equal(fleet_field_of(r, "ord", "st"), 0);
    assert_int_equal(run_breaker(err, exec_args), 0); /* runs again */
    const char *closed_args[] = {"ord", "--redis", addr, "--for", "1m", NULL};
    assert_int_equal(run_tool(err, "close", closed_args), 0);
    assert_int_equal(fleet_field_of(r, "ord", "cf"), 2);
    char long_why[260];
    memset(long_why, 'w', 201);
    long_why[201] = '\0';
    const char *bad_why[] = {"ord", "--redis", addr, "--why", long_why, NULL};
    assert_int_equal(run_tool(err, "open", bad_why), 64);
    assert_true(file_has(err, "--why: 201 bytes, at most 200"));
    const char *bad_for[] = {"ord", "--redis", addr, "--for", "0", NULL};
    assert_int_equal(run_tool(err, "open", bad_for), 64);
    assert_true(file_has(err, "--for: bad value '0'"));
    /* --why without --redis is a store's (cli_store_ops.sh): no store here. */
    char none[160];
    snprintf(none, sizeof none, "unix:%s/no-such.sock", dir);
    const char *down[] = {"ord", "--redis", none, NULL};
    assert_int_equal(run_tool(err, "reset", down), 69);
    assert_true(file_has(err, "the order did not reach Redis"));
}

/* A field of `name`'s state hash in database `db`, as text ("" when absent). */
static void state_text(const struct test_redis *r, int db, const char *name, const char *field,
                       char *out, size_t len) {
    out[0] = '\0';
    redisContext *c = rconnect(r, db);
    if (c == NULL) return;
    redisReply *rep = redisCommand(c, "HGET breaker:v2:{%s}:s %s", name, field);
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) snprintf(out, len, "%s", rep->str);
    if (rep != NULL) freeReplyObject(rep);
    redisFree(c);
}

/* `breaker shadow NAME on|off --redis` and `breaker config NAME k=v...
 * --redis`: the fleet's shadow mode and stored limits, with who and why;
 * the keys the fleet does not store and what cannot change live refused
 * (64, 78); and the order commands take exec's connection options
 * (database, password file), on a server that needs a password. */
static void fleet_shadow_and_limits_from_the_command_line(void **state) {
    struct test_redis *r = *state;
    char err[128], out[128], pw[128];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(pw, sizeof pw, "%s/password", dir);
    FILE *f = fopen(pw, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", r->password);
    fclose(f);
    unsetenv("BREAKER_REDIS_PASSWORD");
    /* Without the password: the fleet store refuses the configuration. */
    const char *nopw[] = {"ctl", "on", "--redis", addr, NULL};
    assert_int_equal(run_tool(err, "shadow", nopw), 78);
    const char *on[] = {"ctl", "on",         "--redis", addr,    "--redis-password-file",
                        pw,    "--redis-db", "3",       "--why", "trial of the new limits",
                        NULL};
    assert_int_equal(run_tool(err, "shadow", on), 0);
    char shadow[8], sseq[8], sy[64];
    state_text(r, 3, "ctl", "ch", shadow, sizeof shadow);
    state_text(r, 3, "ctl", "cv", sseq, sizeof sseq);
    state_text(r, 3, "ctl", "cy", sy, sizeof sy);
    char in_db0[8];
    state_text(r, 0, "ctl", "ch", in_db0, sizeof in_db0);
    setenv("BREAKER_REDIS_PASSWORD", r->password, 1);
    const char *off[] = {"ctl", "off", "--redis", addr, "--redis-db", "3", NULL};
    assert_int_equal(run_tool(err, "shadow", off), 0);
    char sh_off[8];
    state_text(r, 3, "ctl", "ch", sh_off, sizeof sh_off);
    /* The fleet's limits: shown, then changed, printed old -> new. */
    stdout_path = out;
    const char *show[] = {"ctl", "--redis", addr, "--redis-db", "3", NULL};
    assert_int_equal(run_tool(err, "config", show), 0);
    int shown = file_has(out, "ctl: the fleet's limits, control version 3") &&
                file_has(out, "min_calls=20") && !file_has(out, "ramp=");
    const char *change[] = {"ctl",        "min_calls=7", "open=2s", "--redis", addr,
                            "--redis-db", "3",           "--why",   "INC-9",   NULL};
    assert_int_equal(run_tool(err, "config", change), 0);
    int printed = file_has(out, "control version 3 -> 4") && file_has(out, "min_calls: 20 -> 7") &&
                  file_has(out, "open: 30s -> 2s");
    char cfg[400], cg[8], cy[64];
    state_text(r, 3, "ctl", "min_calls", cfg, sizeof cfg);
    state_text(r, 3, "ctl", "cv", cg, sizeof cg);
    state_text(r, 3, "ctl", "cy", cy, sizeof cy);
    /* The same again: no change, nothing written (cg and cy stay). */
    const char *again[] = {"ctl", "min_calls=7", "--redis", addr, "--redis-db",
                           "3",   "--why",       "INC-10",  NULL};
    int again_rc = run_tool(err, "config", again);
    int again_said = file_has(out, "ctl: the fleet's limits, control version 4: no change");
    stdout_path = NULL;
    char cg_again[8], cy_again[64];
    state_text(r, 3, "ctl", "cv", cg_again, sizeof cg_again);
    state_text(r, 3, "ctl", "cy", cy_again, sizeof cy_again);
    const char *ramp[] = {"ctl", "ramp=1s", "--redis", addr, "--redis-db", "3", NULL};
    int ramp_rc = run_tool(err, "config", ramp);
    int ramp_named = file_has(err, "ramp: not one of the fleet's stored limits but each host's");
    const char *window_arg[] = {"ctl", "window=5m", "--redis", addr, "--redis-db", "3", NULL};
    int window_rc = run_tool(err, "config", window_arg);
    int window_named = file_has(err, "window: 1m -> 5m: cannot change on a running fleet");
    const char *probes[] = {"ctl", "half_open_max_probes=4", "--redis", addr, "--redis-db", "3",
                            NULL};
    int probes_rc = run_tool(err, "config", probes);
    int probes_named = file_has(err, "half_open_max_probes: 1 -> 4");
    const char *store_and_redis[] = {"ctl", "--store", pw, "--redis", addr, NULL};
    int both_rc = run_tool(err, "shadow", store_and_redis);
    const char *db_alone[] = {"ctl", "on", "--redis-db", "3", NULL};
    int db_alone_rc = run_tool(err, "shadow", db_alone);
    int db_alone_named = file_has(err, "--redis-db needs --redis");
    unsetenv("BREAKER_REDIS_PASSWORD");
    /* An order with the same options. */
    const char *reset[] = {"ctl", "--redis",    addr, "--redis-password-file",
                           pw,    "--redis-db", "3",  NULL};
    assert_int_equal(run_tool(err, "reset", reset), 0);
    char ok[8];
    state_text(r, 3, "ctl", "cf", ok, sizeof ok);
    printf("breaker shadow/config --redis: sh %s (seq %s, why '%s', db 0 '%s'), off %s; %s, cg %s "
           "(why '%s'); ramp %d, window %d, probes %d, --store with --redis %d, --redis-db "
           "alone %d; reset ok %s\n",
           shadow, sseq, sy, in_db0, sh_off, cfg, cg, cy, ramp_rc, window_rc, probes_rc, both_rc,
           db_alone_rc, ok);
    assert_string_equal(shadow, "1");
    assert_string_equal(sseq, "2"); /* the record's version: as made, then one change */
    assert_string_equal(sy, "trial of the new limits");
    assert_string_equal(in_db0, "");
    assert_string_equal(sh_off, "0");
    assert_true(shown);
    assert_true(printed);
    assert_string_equal(cfg, "7");
    assert_string_equal(cg, "4");
    assert_string_equal(cy, "INC-9");
    assert_int_equal(again_rc, 0);
    assert_true(again_said);
    assert_string_equal(cg_again, "4");
    assert_string_equal(cy_again, "INC-9");
    assert_int_equal(ramp_rc, 64);
    assert_true(ramp_named);
    assert_int_equal(window_rc, 78);
    assert_true(window_named);
    assert_int_equal(probes_rc, 78);
    assert_true(probes_named);
    assert_int_equal(both_rc, 64);
    assert_int_equal(db_alone_rc, 64);
    assert_true(db_alone_named);
    assert_string_equal(ok, "0"); /* the reset ended the forced state */
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--command") == 0) return command_main();
    if (argc != 2) {
        fprintf(stderr, "usage: %s BREAKER_BINARY\n", argv[0]);
        return 2;
    }
    bk = argv[1];
    ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (len <= 0) return 2;
    self_path[len] = '\0';
    setvbuf(stdout, NULL, _IONBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(each_exec_sends_its_evidence_before_it_exits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(with_redis_unreachable_the_call_runs_with_a_note, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(with_redis_unreachable_a_control_says_so_in_its_own_name,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(password_and_database_options_reach_the_server,
                                        setup_password, teardown),
        cmocka_unit_test_setup_teardown(ten_processes_share_the_fleet_probe_limit_and_all_recover,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_cluster_fleet_trips_through_breaker_exec, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(operator_orders_reach_the_whole_fleet, setup, teardown),
        cmocka_unit_test_setup_teardown(fleet_shadow_and_limits_from_the_command_line,
                                        setup_password, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
