/* SPDX-License-Identifier: MIT */
/*
 * run_tool.h - running the built `breaker` command from a test, for the
 * fleet store's tests that check the command line as well
 * ($BREAKER_TEST_TOOL names the binary: tests/fleet/production.cmake).
 */
#ifndef BREAKER_TEST_RUN_TOOL_H
#define BREAKER_TEST_RUN_TOOL_H

/* Run `tool` with `args` (NULL-terminated, after the program's name),
 * standard output to /dev/null, standard error to `err_path`.
 * @return its exit status, or -1 (not started, or killed). */
int test_run_tool(const char *tool, const char *err_path, const char *const *args);

/* test_run_tool() with standard output to `out_path`. */
int test_run_tool_out(const char *tool, const char *out_path, const char *err_path,
                      const char *const *args);

/* @return 1 when the text of `path` has `words` (it is printed, for the
 * log), else 0. */
int test_file_says(const char *path, const char *words);

#endif
