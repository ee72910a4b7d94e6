/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - how the in-process Redis runs a command: found by name in
 * the server's command table (commands.c, reached through the server so
 * that this file names no command), its arity checked, then what a Redis
 * in the refused condition would refuse (inproc.h) is refused, in the
 * order of Redis 7.0's processCommand() for a client's command and of its
 * scriptCall() for a script's (scripting.c), with their error texts.
 */
#include "store/redis/inproc/engine.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct breaker__inproc_command *
breaker__inproc_command_find(const struct breaker__redis_inproc *s, const char *name, size_t len) {
    char lower[24];
    if (len == 0 || len >= sizeof lower) return NULL;
    for (size_t i = 0; i < len; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    lower[len] = '\0';
    const struct breaker__inproc_command *commands = s->commands->commands;
    size_t lo = 0, hi = s->commands->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(lower, commands[mid].name);
        if (c == 0) return &commands[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static bool arity_ok(const struct breaker__inproc_command *cmd, int argc) {
    return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

#define OOM_ERROR      "-OOM command not allowed when used memory > 'maxmemory'."
#define READONLY_ERROR "-READONLY You can't write against a read only replica."

const char *breaker__inproc_script_refusal(struct breaker__redis_inproc *s,
                                           const struct breaker__inproc_command *cmd, int argc,
                                           bool read_only, bool wrote) {
    if (cmd == NULL) return "Unknown Redis command called from script";
    if (!arity_ok(cmd, argc)) return "Wrong number of args calling Redis command from script";
    if (cmd->flags & CMD_NOSCRIPT) return "This Redis command is not allowed from script";
    if (!(cmd->flags & CMD_WRITE)) return NULL;
    if (read_only) return "Write commands are not allowed from read-only scripts.";
    /* A script that wrote already cannot be stopped half done. */
    if (wrote) return NULL;
    if (s->refuse == BREAKER__INPROC_REFUSE_READONLY) return READONLY_ERROR;
    if (s->refuse == BREAKER__INPROC_REFUSE_OOM && (cmd->flags & CMD_DENYOOM)) return OOM_ERROR;
    return NULL;
}

/* The error of an unknown command: the name and the first arguments, at
 * most 128 bytes of them (server.c, processCommand()). */
static breaker_redis_reply *unknown_command(int argc, const struct breaker__inproc_arg *argv) {
    char args[512] = "";
    size_t len = 0;
    for (int i = 1; i < argc && len < 128; i++) {
        int n = snprintf(args + len, sizeof args - len, "'%.*s' ", (int)(128 - len), argv[i].str);
        if (n > 0) len += (size_t)n < sizeof args - len ? (size_t)n : sizeof args - len - 1;
    }
    return breaker__inproc_error("ERR unknown command '%.128s', with args beginning with: %s",
                                 argv[0].str, args);
}

breaker_redis_reply *breaker__redis_inproc_command(struct breaker__redis_inproc *s, int argc,
                                                   const char *const *argv, const size_t *argvlen) {
    if (argc <= 0) return breaker__inproc_error("ERR empty command");
    s->now_ns = s->clock(s->clock_ctx);
    s->now_ms = (int64_t)(s->now_ns / 1000000u);
    s->stats.commands++;
    /* The arguments as the commands read them: each ends with a NUL (the
     * parsers rely on it, as Redis's sds strings do). */
    size_t bytes = 0;
    for (int i = 0; i < argc; i++)
        bytes += argvlen[i] + 1;
    struct breaker__inproc_arg small[32];
    char text[1024];
    struct breaker__inproc_arg *args = argc <= 32 ? small : malloc((size_t)argc * sizeof *args);
    char *copy = bytes <= sizeof text ? text : malloc(bytes);
    breaker_redis_reply *r = NULL;
    if (args != NULL && copy != NULL) {
        char *p = copy;
        for (int i = 0; i < argc; i++) {
            if (argvlen[i] > 0) memcpy(p, argv[i], argvlen[i]);
            p[argvlen[i]] = '\0';
            args[i] = (struct breaker__inproc_arg){.str = p, .len = argvlen[i]};
            p += argvlen[i] + 1;
        }
        const struct breaker__inproc_command *cmd =
            breaker__inproc_command_find(s, args[0].str, args[0].len);
        if (cmd == NULL) {
            r = unknown_command(argc, args);
        } else if (!arity_ok(cmd, argc)) {
            r = breaker__inproc_arity_error(cmd->name);
        } else if (s->refuse == BREAKER__INPROC_REFUSE_OOM && (cmd->flags & CMD_DENYOOM)) {
            s->stats.refused++;
            r = breaker__inproc_error("%s", OOM_ERROR + 1);
        } else if (s->refuse == BREAKER__INPROC_REFUSE_READONLY && (cmd->flags & CMD_WRITE)) {
            s->stats.refused++;
            r = breaker__inproc_error("%s", READONLY_ERROR + 1);
        } else {
            r = cmd->fn(s, argc, args);
        }
    }
    if (args != small) free(args);
    if (copy != text) free(copy);
    return r;
}
