/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tool_options.c - what the `breaker` command reads besides traces:
 * INI files (tools/cli/ini_load.c, scenarios and [breaker NAME] sections), the
 * -b 'NAME:key=value,...' specs and the -s KEY=VALUE options.
 *
 * Input: an INI file, then optionally a line "%%" and option lines, each
 * "b SPEC" (as -b takes it) or "s KEY=VALUE" (as -s takes it). Without a
 * "%%" line the whole input is the INI file. The INI part may hold any
 * bytes, NUL included (it is read as a file is); option lines end at a
 * newline, as arguments cannot hold NUL.
 *
 * What must hold:
 * - the INI file loads or is refused with "NAME:LINE: message", both as a
 *   scenario and as a -c file; read from a stream and from a string (when
 *   it holds no NUL) it gives the same answer, message and configurations;
 * - every configuration's name is whole (it occurs in the input, or is
 *   "default"), unique, shorter than TOOL_NAME_MAX and plain text; so are
 *   descriptions and phase names, each within its field; summaries are
 *   NUL-terminated within theirs;
 * - a scenario that finishes has phases that add up to its duration, at
 *   most 7 days;
 * - -b accepts or refuses with a message; a name it accepts is the spec's
 *   (whole) or the default one;
 * - -s sets every configuration exactly as breaker_config_set() does with
 *   the key and value split at the first '=' and trimmed, whatever their
 *   length, and refuses the same;
 * - every message, once escaped with tool_escape(), holds no control byte
 *   and no byte that is not UTF-8, and tool_escape() returns its length.
 */
#define _GNU_SOURCE
#include "fuzz_util.h"

#include "cli/config.h"
#include "cli/parse.h"
#include "cli/text.h"
#include "sim/scenario.h"

#include <string.h>

static void check_message(const char *msg, size_t cap) {
    FUZZ_CHECK(memchr(msg, '\0', cap) != NULL, "message not NUL-terminated");
    FUZZ_CHECK(msg[0] != '\0', "an error without a message");
    size_t need = tool_escape(NULL, 0, msg) + 1;
    char *safe = malloc(need);
    FUZZ_CHECK(safe != NULL, "out of memory");
    FUZZ_CHECK(tool_escape(safe, need, msg) == need - 1, "escape length");
    FUZZ_CHECK(strlen(safe) == need - 1, "escaped copy cut: '%s'", safe);
    FUZZ_CHECK(tool_text_is_plain(safe) && strchr(safe, '\t') == NULL,
               "escaped message still has raw bytes: '%s'", safe);
    free(safe);
}

static bool text_fits(const char *s, size_t cap) {
    return memchr(s, '\0', cap) != NULL && tool_text_is_plain(s);
}

static void check_breakers(const struct tool_breakers *list, const uint8_t *data, size_t size) {
    for (size_t i = 0; i < list->count; i++) {
        const struct tool_breaker *b = &list->items[i];
        FUZZ_CHECK(text_fits(b->name, sizeof(b->name)) && b->name[0] != '\0', "breaker name");
        FUZZ_CHECK(strcmp(b->name, "default") == 0 || strncmp(b->name, "cli", 3) == 0 ||
                       memmem(data, size, b->name, strlen(b->name)) != NULL,
                   "breaker '%s' is not named in the input", b->name);
        FUZZ_CHECK(text_fits(b->description, sizeof(b->description)), "breaker %s: description",
                   b->name);
        FUZZ_CHECK(memchr(b->summary, '\0', sizeof(b->summary)) != NULL, "summary");
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(b->name, list->items[j].name) != 0, "breaker '%s' twice", b->name);
    }
}

static void check_scenario(struct tool_scenario *sc) {
    FUZZ_CHECK(text_fits(sc->name, sizeof(sc->name)), "scenario name");
    FUZZ_CHECK(text_fits(sc->description, sizeof(sc->description)), "scenario description");
    FUZZ_CHECK(sc->phase_count <= TOOL_MAX_PHASE, "%zu phases", sc->phase_count);
    for (size_t i = 0; i < sc->phase_count; i++)
        FUZZ_CHECK(text_fits(sc->phases[i].name, sizeof(sc->phases[i].name)), "phase name");
    char msg[TOOL_MSG_MAX];
    if (tool_scenario_finish(sc, msg, sizeof(msg)) != 0) {
        check_message(msg, sizeof(msg));
        return;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < sc->phase_count; i++) {
        FUZZ_CHECK(sc->phases[i].duration_ns <= UINT64_MAX - total, "phases wrap");
        total += sc->phases[i].duration_ns;
    }
    FUZZ_CHECK(total == sc->duration_ns, "phases add up to %llu, the run lasts %llu",
               (unsigned long long)total, (unsigned long long)sc->duration_ns);
    FUZZ_CHECK(total <= 7 * 24 * 3600 * TOOL_SEC, "a run longer than 7d");
}

static bool same_breakers(const struct tool_breakers *a, const struct tool_breakers *b) {
    if (a->count != b->count) return false;
    for (size_t i = 0; i < a->count; i++) {
        const struct tool_breaker *x = &a->items[i], *y = &b->items[i];
        if (strcmp(x->name, y->name) != 0 || strcmp(x->description, y->description) != 0 ||
            strcmp(x->summary, y->summary) != 0 || memcmp(&x->cfg, &y->cfg, sizeof(x->cfg)) != 0)
            return false;
    }
    return true;
}

/* Load the INI part as a scenario or (sc NULL) as a -c file, from a stream
 * and, if it holds no NUL, from a string: the same answer both ways. */
static int load_both_ways(const uint8_t *ini, size_t size, struct tool_scenario *sc,
                          struct tool_breakers *list) {
    char msg[TOOL_MSG_MAX] = "";
    int rc = 0;
    if (size > 0) {
        FILE *in = fmemopen((void *)(uintptr_t)ini, size, "r");
        FUZZ_CHECK(in != NULL, "fmemopen");
        rc = tool_load_scenario_stream(in, "(built-in)", sc, list, msg, sizeof(msg));
        fclose(in);
    }
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (rc != 0) {
        check_message(msg, sizeof(msg));
        FUZZ_CHECK(strncmp(msg, "(built-in):", 11) == 0, "message without its place: '%s'", msg);
    }
    if (memchr(ini, '\0', size) != NULL) return rc;
    char *text = strndup((const char *)ini, size);
    FUZZ_CHECK(text != NULL, "out of memory");
    struct tool_scenario sc2;
    tool_scenario_init(&sc2);
    struct tool_breakers list2 = {0};
    char msg2[TOOL_MSG_MAX] = "";
    int rc2 = tool_load_scenario(NULL, text, sc ? &sc2 : NULL, &list2, msg2, sizeof(msg2));
    FUZZ_CHECK(rc2 == rc && strcmp(msg, msg2) == 0, "stream: %d '%s'; string: %d '%s'", rc, msg,
               rc2, msg2);
    FUZZ_CHECK(rc != 0 || same_breakers(list, &list2), "configurations differ");
    FUZZ_CHECK(sc == NULL || rc != 0 ||
                   (sc->phase_count == sc2.phase_count && strcmp(sc->name, sc2.name) == 0 &&
                    sc->duration_ns == sc2.duration_ns),
               "scenarios differ");
    tool_breakers_free(&list2);
    tool_scenario_free(&sc2);
    free(text);
    return rc;
}

/* -s on every configuration, against breaker_config_set() on the split. */
static void check_set(struct tool_breakers *list, const char *assignment) {
    for (size_t i = 0; i < list->count; i++) {
        struct tool_breaker *b = &list->items[i];
        breaker_config want = b->cfg;
        int want_rc = -1;
        char *pair = strdup(assignment);
        FUZZ_CHECK(pair != NULL, "out of memory");
        char *eq = strchr(pair, '=');
        if (eq != NULL) {
            *eq = '\0';
            want_rc =
                breaker_config_set(&want, tool_trim(pair), tool_trim(eq + 1), NULL, 0) == BREAKER_OK
                    ? 0
                    : -1;
        }
        free(pair);
        char msg[TOOL_MSG_MAX] = "";
        int rc = tool_breaker_assign(b, assignment, msg, sizeof(msg));
        FUZZ_CHECK(rc == want_rc, "-s '%s': %d, breaker_config_set: %d", assignment, rc, want_rc);
        if (rc != 0) {
            check_message(msg, sizeof(msg));
        } else {
            FUZZ_CHECK(memcmp(&want, &b->cfg, sizeof(want)) == 0, "-s '%s' set otherwise",
                       assignment);
        }
    }
}

static void check_spec(struct tool_breakers *list, const char *spec, int n) {
    char name[16], msg[TOOL_MSG_MAX] = "";
    snprintf(name, sizeof(name), "cli%d", n);
    size_t before = list->count;
    if (tool_breakers_add_spec(list, spec, name, msg, sizeof(msg)) != 0) {
        check_message(msg, sizeof(msg));
        return;
    }
    FUZZ_CHECK(list->count == before || list->count == before + 1, "-b added %zu",
               list->count - before);
}

/* The option lines after "%%": "b SPEC" and "s KEY=VALUE". */
static void run_options(struct tool_breakers *list, const uint8_t *data, size_t size) {
    char *text = strndup((const char *)data, size); /* stops at a NUL, as argv would */
    FUZZ_CHECK(text != NULL, "out of memory");
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL && n < 64;
         line = strtok_r(NULL, "\n", &save), n++) {
        if (strncmp(line, "b ", 2) == 0) check_spec(list, line + 2, n + 1);
        if (strncmp(line, "s ", 2) == 0) check_set(list, line + 2);
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t ini_size = size;
    const uint8_t *opts = data + size, *sep;
    if (size >= 3 && memcmp(data, "%%\n", 3) == 0) {
        ini_size = 0;
        opts = data + 3;
    } else if ((sep = memmem(data, size, "\n%%\n", 4)) != NULL) {
        ini_size = (size_t)(sep + 1 - data);
        opts = sep + 4;
    }

    struct tool_scenario sc;
    tool_scenario_init(&sc);
    if (load_both_ways(data, ini_size, &sc, &sc.breakers) == 0) {
        check_breakers(&sc.breakers, data, size);
        check_scenario(&sc);
    }
    tool_scenario_free(&sc);

    struct tool_breakers list = {0};
    if (load_both_ways(data, ini_size, NULL, &list) == 0) check_breakers(&list, data, size);
    run_options(&list, opts, (size_t)(data + size - opts));
    check_breakers(&list, data, size);
    tool_breakers_free(&list);
    return 0;
}
