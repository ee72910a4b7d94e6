/* SPDX-License-Identifier: MIT */
/*
 * run_tool.c - running the built `breaker` command from a test (run_tool.h).
 */
#define _GNU_SOURCE /* posix_spawn file actions */

#include "run_tool.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

int test_run_tool(const char *tool, const char *err_path, const char *const *args) {
    return test_run_tool_out(tool, "/dev/null", err_path, args);
}

int test_run_tool_out(const char *tool, const char *out_path, const char *err_path,
                      const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = tool;
    for (int i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    /* posix_spawn takes char *const[] for historical reasons; it writes nothing. */
    union {
        const char **c;
        char *const *m;
    } a = {.c = argv};
    pid_t pid;
    int rc = posix_spawn(&pid, tool, &fa, NULL, a.m, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

int test_file_says(const char *path, const char *words) {
    char buf[16384] = "";
    FILE *fp = fopen(path, "r");
    if (fp == NULL) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    printf("  %s", buf);
    return strstr(buf, words) != NULL;
}
