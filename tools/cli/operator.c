/* SPDX-License-Identifier: MIT */
/*
 * operator.c - who gives an operator's control or order (open, close,
 * reset, shadow, config), as the store file and the fleet record it.
 *
 * The name comes from the process's real user id through the password
 * database, never from the environment: $USER and $LOGNAME are whatever the
 * caller set (anyone can run `USER=alice breaker open api`), and are unset
 * under cron and `env -i`, where every control was recorded as
 * "unknown@host". The real uid is the one the kernel says started the
 * process: set-uid programs keep it, so it still names the person.
 */
#define _POSIX_C_SOURCE 200809L /* getpwuid_r, gethostname */

#include "cli/cli.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The user name of `uid` into `out`, or "uid N" when the password database
 * has no entry for it (a container's user without /etc/passwd line) or
 * cannot be read. */
static void user_name(uid_t uid, char *out, size_t len) {
    long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
    size_t size = hint > 0 ? (size_t)hint : 1024;
    for (int tries = 0; tries < 6; tries++, size *= 4) {
        char *buf = malloc(size);
        if (buf == NULL) break;
        struct passwd pw, *found = NULL;
        int rc = getpwuid_r(uid, &pw, buf, size, &found);
        if (rc == 0 && found != NULL && pw.pw_name[0] != '\0') {
            snprintf(out, len, "%s", pw.pw_name);
            free(buf);
            return;
        }
        free(buf);
        if (rc != ERANGE) break; /* no entry, or the database failed */
    }
    snprintf(out, len, "uid %lu", (unsigned long)uid);
}

void tool_operator_who(char *out, size_t len) {
    char user[256], host[256] = "";
    user_name(getuid(), user, sizeof user);
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    snprintf(out, len, "%s@%s", user, host[0] != '\0' ? host : "unknown");
    for (char *c = out; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}
