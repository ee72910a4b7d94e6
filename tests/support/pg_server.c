/* SPDX-License-Identifier: MIT */
/*
 * pg_server.c - a real PostgreSQL server for the tests (see pg_server.h).
 */
#define _GNU_SOURCE
#include "pg_server.h"

#include <libpq-fe.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG_PORT 5432 /* names the socket file only: the server has no TCP */

static struct test_pg *running; /* for the atexit handler */
static pid_t owner_pid;

static void remove_tree(const char *dir) {
    if (dir[0] == '\0') return;
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", dir, (char *)NULL);
        _exit(127);
    }
    if (pid > 0) (void)waitpid(pid, NULL, 0);
}

/* SIGKILL whatever is left of the server's process group (a killed
 * postmaster's backends) and wait, at most 5 s, until none is left. */
static void kill_group(pid_t pgid) {
    if (pgid <= 0) return;
    kill(-pgid, SIGKILL);
    for (int i = 0; i < 50 && !(kill(-pgid, 0) != 0 && errno == ESRCH); i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void kill_leftovers(void) {
    if (getpid() != owner_pid || running == NULL) return; /* a forked child */
    if (running->pid > 0) {
        kill(running->pid, SIGKILL);
        (void)waitpid(running->pid, NULL, 0);
        running->pid = 0;
    }
    kill_group(running->pgid);
    remove_tree(running->dir);
}

static int find_bindir(struct test_pg *pg) {
    const char *env = getenv("BREAKER_PG_BINDIR");
    if (env != NULL && env[0] != '\0') {
        snprintf(pg->bindir, sizeof(pg->bindir), "%s", env);
        return 0;
    }
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        fprintf(stderr, "pg_server: no /usr/lib/postgresql/*/bin/initdb (Debian: postgresql)\n");
        return -1;
    }
    /* The newest version sorts last. */
    snprintf(pg->bindir, sizeof(pg->bindir), "%.*s",
             (int)(strlen(g.gl_pathv[g.gl_pathc - 1]) - strlen("/initdb")),
             g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    return 0;
}

/* In a forked child: become the server's user, die with the parent, send
 * output to the log, and exec argv. */
static void exec_as_user(const struct test_pg *pg, pid_t parent, const char **argv) {
    if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(pg->gid) != 0 || setuid(pg->uid) != 0))
        _exit(126);
    /* After the credentials change, which clears the setting. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Its own process group: the backends of a killed postmaster, which
     * outlive it for a moment, can be killed with it (kill_group()). */
    setpgid(0, 0);
    if (getppid() != parent) _exit(125);
    char log[300];
    snprintf(log, sizeof(log), "%s/log", pg->dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    if (chdir(pg->dir) != 0) _exit(124);
    /* execv takes char *const[] for historical reasons; it writes nothing. */
    union {
        const char **c;
        char *const *m;
    } args = {.c = argv};
    execv(argv[0], args.m);
    _exit(127);
}

static pid_t spawn(const struct test_pg *pg, const char **argv) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) exec_as_user(pg, parent, argv);
    if (pid > 0) setpgid(pid, pid); /* as the child does: whichever runs first */
    return pid;
}

static int run_initdb(struct test_pg *pg) {
    char prog[300], data[300];
    snprintf(prog, sizeof(prog), "%s/initdb", pg->bindir);
    snprintf(data, sizeof(data), "%s/data", pg->dir);
    const char *argv[] = {prog,    "-D",          data, "-U",   "postgres",  "-A",
                          "trust", "--no-locale", "-E", "UTF8", "--no-sync", "--no-instructions",
                          NULL};
    pid_t pid = spawn(pg, argv);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "pg_server: initdb failed (status %d), see %s/log\n", status, pg->dir);
        return -1;
    }
    return 0;
}

static int wait_ready(struct test_pg *pg) {
    for (int i = 0; i < 600; i++) { /* 60 s */
        if (PQping(pg->conninfo) == PQPING_OK) return 0;
        int status;
        if (waitpid(pg->pid, &status, WNOHANG) == pg->pid) {
            fprintf(stderr, "pg_server: postgres exited (status %d), see %s/log\n", status,
                    pg->dir);
            pg->pid = 0;
            return -1;
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "pg_server: postgres did not answer in 60 s, see %s/log\n", pg->dir);
    return -1;
}

int test_pg_restart(struct test_pg *pg) {
    char prog[300], data[300], port[16];
    snprintf(prog, sizeof(prog), "%s/postgres", pg->bindir);
    snprintf(data, sizeof(data), "%s/data", pg->dir);
    snprintf(port, sizeof(port), "%d", PG_PORT);
    const char *argv[] = {prog,
                          "-D",
                          data,
                          "-k",
                          pg->dir,
                          "-p",
                          port,
                          "-c",
                          "listen_addresses=",
                          "-c",
                          "fsync=off",
                          "-c",
                          "max_connections=20",
                          "-c",
                          "shared_buffers=16MB",
                          NULL};
    kill_group(pg->pgid); /* what a killed server left */
    pg->pid = spawn(pg, argv);
    if (pg->pid < 0) {
        pg->pid = pg->pgid = 0;
        return -1;
    }
    pg->pgid = pg->pid;
    return wait_ready(pg);
}

int test_pg_start(struct test_pg *pg) {
    memset(pg, 0, sizeof(*pg));
    if (find_bindir(pg) != 0) return -1;
    pg->uid = geteuid();
    pg->gid = getegid();
    if (pg->uid == 0) {
        struct passwd *pw = getpwnam("nobody");
        if (pw == NULL) {
            fprintf(stderr, "pg_server: running as root and there is no user nobody\n");
            return -1;
        }
        pg->uid = pw->pw_uid;
        pg->gid = pw->pw_gid;
    }
    snprintf(pg->dir, sizeof(pg->dir), "/tmp/breaker-pg-XXXXXX");
    if (mkdtemp(pg->dir) == NULL || chown(pg->dir, pg->uid, pg->gid) != 0) {
        fprintf(stderr, "pg_server: temporary directory: %s\n", strerror(errno));
        pg->dir[0] = '\0';
        return -1;
    }
    snprintf(pg->conninfo, sizeof(pg->conninfo),
             "host=%s port=%d dbname=postgres user=postgres connect_timeout=10", pg->dir, PG_PORT);
    if (owner_pid == 0) {
        owner_pid = getpid();
        atexit(kill_leftovers);
    }
    running = pg;
    if (run_initdb(pg) != 0 || test_pg_restart(pg) != 0) {
        test_pg_stop(pg);
        return -1;
    }
    return 0;
}

void test_pg_signal(struct test_pg *pg, int sig) {
    if (pg->pid <= 0) return;
    kill(pg->pid, sig);
    (void)waitpid(pg->pid, NULL, 0);
    pg->pid = 0;
}

void test_pg_stop(struct test_pg *pg) {
    if (pg->pid > 0) {
        kill(pg->pid, SIGINT);
        for (int i = 0; i < 100; i++) { /* 10 s */
            if (waitpid(pg->pid, NULL, WNOHANG) == pg->pid) {
                pg->pid = 0;
                break;
            }
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        test_pg_signal(pg, SIGKILL);
    }
    kill_group(pg->pgid);
    pg->pgid = 0;
    remove_tree(pg->dir);
    pg->dir[0] = '\0';
    if (running == pg) running = NULL;
}
