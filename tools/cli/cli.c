/* SPDX-License-Identifier: MIT */
/*
 * cli.c - usage errors, the -c, -b and -s options of every command, and
 * configurations validated as the command line speaks of them.
 *
 * Every message that quotes user input goes out through tool_error(), which
 * escapes control bytes.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int tool_out_of_memory(const char *cmd) {
    tool_error(stderr, "breaker %s: out of memory", cmd);
    return TOOL_EXIT_OSERR;
}

int tool_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) text = NULL;
    va_end(ap);
    tool_error(stderr, "breaker %s: %s", cmd, text != NULL ? text : "(out of memory)");
    free(text);
    fprintf(stderr, "Try 'breaker %s --help'.\n", cmd);
    return TOOL_EXIT_USAGE;
}

/* getopt_long() answered '?' (an unknown or ambiguous option) or ':' (an
 * option without its value), with opterr off so that the message is ours:
 * the command's prefix, and the closest option for a typo. */
int tool_option_error(const char *cmd, int c, char **argv, const struct option *longopts) {
    const char *arg = argv[optind - 1];
    if (c == ':') {
        if (optopt != 0 && optopt < 256 && strncmp(arg, "--", 2) != 0)
            return tool_usage_error(cmd, "option '-%c' needs a value", optopt);
        return tool_usage_error(cmd, "option '%.*s' needs a value", (int)strcspn(arg, "="), arg);
    }
    if (optopt != 0) return tool_usage_error(cmd, "unknown option '-%c'", optopt);
    /* A long option: its name without the dashes and any "=value". */
    const char *name = arg + strspn(arg, "-");
    int len = (int)strcspn(name, "=");
    const char *names[32];
    size_t n = 0, prefixed = 0;
    char typed[80];
    snprintf(typed, sizeof(typed), "%.*s", len, name);
    for (const struct option *lo = longopts; lo->name != NULL && n < 32; lo++) {
        names[n++] = lo->name;
        prefixed += strncmp(lo->name, typed, strlen(typed)) == 0;
    }
    if (prefixed > 1) return tool_usage_error(cmd, "option '--%s' is ambiguous", typed);
    const char *guess = tool_suggest(typed, names, n);
    if (guess != NULL)
        return tool_usage_error(cmd, "unknown option '--%s'; did you mean '--%s'?", typed, guess);
    return tool_usage_error(cmd, "unknown option '--%s'", typed);
}

int tool_options_init(const char *cmd, struct tool_options *o, int argc) {
    memset(o, 0, sizeof(*o));
    o->sets = calloc((size_t)argc, sizeof(*o->sets));
    return o->sets != NULL ? 0 : tool_out_of_memory(cmd);
}

void tool_options_free(struct tool_options *o) {
    tool_breakers_free(&o->breakers);
    free(o->sets);
    o->sets = NULL;
}

int tool_common_option(const char *cmd, int c, struct tool_options *o) {
    char msg[TOOL_MSG_MAX];
    switch (c) {
    case 'c':
        o->have_breakers = true;
        int rc = tool_load_ini(optarg, NULL, NULL, &o->breakers, msg, sizeof(msg));
        if (rc != 0) {
            tool_error(stderr, "breaker %s: %s", cmd, msg);
            return tool_load_exit(rc);
        }
        return 0;
    case 'b': {
        char name[16];
        snprintf(name, sizeof(name), "cli%d", ++o->cli_count);
        o->have_breakers = true;
        if (tool_breakers_add_spec(&o->breakers, optarg, name, msg, sizeof(msg)) != 0) {
            tool_error(stderr, "breaker %s: -b %s", cmd, msg);
            return TOOL_EXIT_CONFIG;
        }
        return 0;
    }
    case 's':
        if (strchr(optarg, '=') == NULL)
            return tool_usage_error(cmd, "--set %s: expected KEY=VALUE", optarg);
        o->sets[o->set_count++] = optarg;
        return 0;
    default:
        return -1;
    }
}

int tool_duration_option(const char *cmd, const char *option, const char *text, uint64_t min,
                         uint64_t max, const char *range, uint64_t *out) {
    uint64_t ns;
    double number;
    bool bare = tool_parse_number(text, false, &number);
    bool parsed = tool_parse_duration(text, 0, &ns);
    if (!parsed && bare && number == 0.0) { /* zero needs no unit */
        ns = 0;
        parsed = true;
    }
    if (parsed && ns >= min && ns <= max) {
        *out = ns;
        return 0;
    }
    /* A number alone: which unit was meant is the question to answer. */
    if (!parsed && bare)
        return tool_usage_error(cmd,
                                "%s: '%s' has no unit: write it with one of ns, us, ms, s, m, h, "
                                "d, such as %ss (a duration %s)",
                                option, text, text, range);
    return tool_usage_error(cmd, "%s: bad value '%s': expected a duration %s such as %s", option,
                            text, range, TOOL_DURATION_FORMATS);
}

int tool_load_exit(int rc) { return rc == -2 ? TOOL_EXIT_NOINPUT : TOOL_EXIT_CONFIG; }

int tool_validate_breaker(const char *cmd, const struct tool_breaker *b) {
    char msg[TOOL_MSG_MAX];
    if (breaker_config_validate(&b->cfg, msg, sizeof(msg)) == BREAKER_OK) return 0;
    tool_humanize_ns(msg, sizeof(msg));
    tool_error(stderr, "breaker %s: breaker '%s': %s", cmd, b->name, msg);
    return TOOL_EXIT_CONFIG;
}

int tool_finish_breakers(const char *cmd, const struct tool_options *o,
                         struct tool_breakers *list) {
    char msg[TOOL_MSG_MAX];
    for (size_t i = 0; i < list->count; i++) {
        for (size_t k = 0; k < o->set_count; k++) {
            if (tool_breaker_assign(&list->items[i], o->sets[k], msg, sizeof(msg)) != 0) {
                tool_error(stderr, "breaker %s: --set %s", cmd, msg);
                return TOOL_EXIT_CONFIG;
            }
        }
        int rc = tool_validate_breaker(cmd, &list->items[i]);
        if (rc != 0) return rc;
    }
    return 0;
}
