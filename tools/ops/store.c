/* SPDX-License-Identifier: MIT */
/*
 * store.c - where the store file of the commands on shared breakers is, its
 * directory's checks, opening it, and the names it holds.
 */
#include "ops/ops.h"

#include <breaker/registry.h> /* breaker_name_validate() */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How far the directory of the default store path is trusted. */
enum dir_trust {
    DIR_ANY,     /* $BREAKER_STORE: the user's own choice, as --store is */
    DIR_OWNED,   /* /run/breaker: ours, written by no one else */
    DIR_PRIVATE, /* /tmp/breaker-$UID, in a directory anyone may write: ours, closed */
};

/* The default store path, per the help text. It depends on the user alone,
 * never on the session: $XDG_RUNTIME_DIR is not set in cron jobs (and its
 * directory goes with the user's last session), so following it gave a
 * login shell and the same user's cron jobs two stores. @return it
 * (malloc'd), or NULL with `msg`; `*trust` says what its directory must
 * be. */
static char *default_store_path(enum dir_trust *trust, char *msg, size_t len) {
    *trust = DIR_OWNED;
    char *path = NULL;
    int n;
    const char *env = getenv("BREAKER_STORE");
    if (env != NULL && *env != '\0') {
        *trust = DIR_ANY;
        n = asprintf(&path, "%s", env);
    } else if (getuid() == 0) {
        n = asprintf(&path, "/run/breaker/" TOOL_STORE_FILE);
    } else {
        *trust = DIR_PRIVATE;
        n = asprintf(&path, "/tmp/breaker-%ju/" TOOL_STORE_FILE, (uintmax_t)getuid());
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
 * checked as `trust` says. @return 0, or an exit status with `msg`. */
static int prepare_dir(const char *path, enum dir_trust trust, bool create, char *msg, size_t len) {
    char *dir = strdup(path);
    if (dir == NULL) {
        snprintf(msg, len, "out of memory");
        return TOOL_EXIT_OSERR;
    }
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
            snprintf(msg, len, "cannot create %s: %s", dir, strerror(errno));
            rc = TOOL_EXIT_CANTCREAT;
        }
        /* A missing directory without `create` is the open's to report. */
        struct stat st;
        if (rc == 0 && trust != DIR_ANY && (create || lstat(dir, &st) == 0) &&
            check_dir(dir, trust, msg, len) != 0)
            rc = TOOL_EXIT_NOPERM;
    }
    free(dir);
    return rc;
}

/* The library offers a program BREAKER_STORE_ALLOW_SHARED for a store file
 * of another user or one others may write; the commands take no such file
 * (their store is the user's own), so the message says what to fix instead
 * of naming a flag no option sets. */
static void say_what_to_fix(char *msg, size_t len) {
    static const char flag[] = "allow with BREAKER_STORE_ALLOW_SHARED";
    static const char fix[] = "a store file must be this user's and writable by no one else";
    char *at = strstr(msg, flag);
    if (at == NULL) return;
    char tail[TOOL_MSG_MAX];
    snprintf(tail, sizeof(tail), "%s", at + strlen(flag));
    snprintf(at, len - (size_t)(at - msg), "%s%s", fix, tail);
}

/* Whether the directory of `path` is missing (or is no directory): its
 * path into `dir`. */
static bool missing_dir(const char *path, char *dir, size_t len) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL) return false; /* the working directory */
    snprintf(dir, len, "%.*s", (int)(slash == path ? 1 : slash - path), path);
    struct stat st;
    return stat(dir, &st) != 0 ? errno == ENOENT || errno == ENOTDIR : !S_ISDIR(st.st_mode);
}

/* Open the store at --store PATH (`given`) or the default path; with
 * `create`, create its default directory and the file. @return 0, or an exit
 * status after saying why. */
int tool_open_store(const char *cmd, const char *given, bool create, breaker_store **out,
                    char *used, size_t used_len) {
    char msg[TOOL_MSG_MAX];
    enum dir_trust trust = DIR_ANY;
    char *path = given != NULL ? strdup(given) : default_store_path(&trust, msg, sizeof(msg));
    if (path == NULL) return tool_out_of_memory(cmd);
    if (used != NULL) snprintf(used, used_len, "%s", path);
    int rc = given == NULL ? prepare_dir(path, trust, create, msg, sizeof(msg)) : 0;
    if (rc != 0) tool_error(stderr, "breaker %s: %s", cmd, msg);
    breaker_store_config cfg;
    breaker_store_config_init(&cfg);
    if (!create) cfg.flags &= ~(unsigned)BREAKER_STORE_CREATE;
    if (rc == 0) {
        int st = breaker_store_open(path, &cfg, out, msg, sizeof(msg));
        char dir[PATH_MAX];
        if (st == BREAKER_NOT_FOUND && missing_dir(path, dir, sizeof dir)) {
            /* The file cannot be there, nor be made: say which directory is
             * missing, not that no `breaker exec` ran. */
            tool_error(stderr,
                       create ? "breaker %s: cannot create the store %s: no directory %s"
                              : "breaker %s: no store at %s: no directory %s",
                       cmd, path, dir);
            rc = create ? TOOL_EXIT_CANTCREAT : TOOL_EXIT_NOINPUT;
        } else if (st == BREAKER_NOT_FOUND) {
            tool_error(stderr, "breaker %s: no store at %s (no `breaker exec` has used it yet)",
                       cmd, path);
            rc = TOOL_EXIT_NOINPUT;
        } else if (st != BREAKER_OK) {
            say_what_to_fix(msg, sizeof(msg));
            /* The library's message names the file already: once is enough. */
            bool named = strncmp(msg, path, strlen(path)) == 0;
            tool_error(stderr, "breaker %s: %s%s%s", cmd, named ? "" : path, named ? "" : ": ",
                       msg);
            rc = TOOL_EXIT_IOERR;
        }
    }
    free(path);
    return rc;
}

static int collect_name(void *ctx, const char *name) {
    struct tool_names *n = ctx;
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

void tool_names_free(struct tool_names *n) {
    for (size_t i = 0; i < n->count; i++)
        free(n->items[i]);
    free(n->items);
}

/* The store's names, copied out: attaching while foreach runs could wait on
 * the store's lock. @return 0, or 1 after saying so. */
int tool_list_names(const char *cmd, breaker_store *st, struct tool_names *out) {
    memset(out, 0, sizeof(*out));
    if (breaker_store_foreach(st, collect_name, out) != 0) {
        tool_names_free(out);
        return tool_out_of_memory(cmd);
    }
    return 0;
}

bool tool_names_has(const struct tool_names *n, const char *name) {
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->items[i], name) == 0) return true;
    return false;
}

/* A NAME argument the library would refuse is a usage error. */
int tool_check_name(const char *cmd, const char *name) {
    char msg[TOOL_MSG_MAX];
    if (breaker_name_validate(name, msg, sizeof(msg)) != BREAKER_OK)
        return tool_usage_error(cmd, "bad breaker name '%s': %s", name, msg);
    return 0;
}

/* Attach an existing breaker with whatever limits it has (NULL: the stored
 * ones win, so BREAKER_CONFIG_DIFFERS is expected, not news). */
int tool_attach_existing(const char *cmd, breaker_store *st, const char *name, breaker **out) {
    char msg[TOOL_MSG_MAX];
    int rc = breaker_store_attach(st, name, NULL, out, msg, sizeof(msg));
    if (rc == BREAKER_OK || rc == BREAKER_CONFIG_DIFFERS) return 0;
    tool_error(stderr, "breaker %s: %s: %s", cmd, name, msg);
    return TOOL_EXIT_IOERR;
}

/* Open the store without creating it and list its names; with a NAME, it
 * must be one of them. @return 0 or an exit status (the store closed). */
int tool_open_existing(const char *cmd, struct tool_store_args *a, breaker_store **st,
                       struct tool_names *n) {
    int rc = tool_open_store(cmd, a->store, false, st, a->path, sizeof(a->path));
    if (rc != 0) return rc;
    if ((rc = tool_list_names(cmd, *st, n)) == 0 && a->name != NULL &&
        !tool_names_has(n, a->name)) {
        tool_error(stderr, "breaker %s: no breaker '%s' in the store %s", cmd, a->name, a->path);
        tool_names_free(n);
        rc = TOOL_EXIT_NOINPUT;
    }
    if (rc != 0) breaker_store_close(*st);
    return rc;
}

int tool_with_breaker(const char *cmd, struct tool_store_args *a,
                      int (*act)(breaker *b, const struct tool_store_args *a, const char *cmd)) {
    breaker_store *st;
    struct tool_names n;
    int rc = tool_open_existing(cmd, a, &st, &n);
    if (rc != 0) return rc;
    tool_names_free(&n);
    breaker *b;
    if ((rc = tool_attach_existing(cmd, st, a->name, &b)) == 0) {
        int r = act(b, a, cmd);
        if (r >= TOOL_EXIT_USAGE) {
            rc = r;
        } else if (r != BREAKER_OK) {
            tool_error(stderr, "breaker %s: %s: %s", cmd, a->name, breaker_strerror(r));
            rc = TOOL_EXIT_IOERR;
        }
        breaker_destroy(b);
    }
    breaker_store_close(st);
    return rc;
}
