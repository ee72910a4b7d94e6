/* SPDX-License-Identifier: MIT */
/*
 * cli/text.h - user text on its way out: escaped for a terminal or JSON
 * (escape.c), and "did you mean" for a typo (suggest.c).
 */
#ifndef BREAKER_TOOL_CLI_TEXT_H
#define BREAKER_TOOL_CLI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TOOL_MSG_MAX 512 /* a message buffer: a validation error with its context */

/* The candidate closest to `word` if `word` looks like a typo of it (at
 * most 2 edits, at most half its length), else NULL. */
const char *tool_suggest(const char *word, const char *const *candidates, size_t count);

/* Copy `src` into `dst` as it may be shown on a terminal: printable ASCII
 * and well-formed UTF-8 as they are, every other byte (C0 and C1 controls,
 * DEL, bytes that are not UTF-8) as \xNN. Like snprintf, the copy is cut to
 * fit `dst_len` (at a whole character or escape) and NUL-terminated.
 * @return the length of the whole escaped text. */
size_t tool_escape(char *dst, size_t dst_len, const char *src);

/* True if tool_escape() would leave `text` as it is, tabs aside: what names
 * and descriptions shown in reports and pictures may hold. */
bool tool_text_is_plain(const char *text);

/* Write a message and a newline to `out`, escaped with tool_escape(): the
 * way every message that quotes user input leaves the tool. */
void tool_error(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write `text` as a JSON string, quotes included: control characters as
 * \u00XX, bytes that are not UTF-8 as U+FFFD, so the output is valid
 * JSON whatever a file name or a header held. */
void tool_json_string(FILE *out, const char *text);

#endif /* BREAKER_TOOL_CLI_TEXT_H */
