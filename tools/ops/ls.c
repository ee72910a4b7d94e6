/* SPDX-License-Identifier: MIT */
/*
 * ls.c - `breaker ls`: the names of a store's breakers, in creation order.
 */
#include "ops/commands.h"
#include "ops/ops.h"

#include <stdio.h>

const char tool_ls_help[] = "usage: breaker ls [options]\n"
                            "\n"
                            "Lists the names of the store's breakers, one per line, in creation "
                            "order.\n" TOOL_STORE_PATH_HELP "\n"
                            "options:\n"
                            "      --store PATH  the store file\n"
                            "  -h, --help        show this text\n";

int tool_cmd_ls(int argc, char **argv) {
    struct tool_store_args a;
    int rc = tool_store_options("ls", tool_ls_help, false, 0, 0, argc, argv, &a);
    if (rc != 0 || a.done) return rc;
    breaker_store *st;
    struct tool_names n;
    if ((rc = tool_open_existing("ls", &a, &st, &n)) != 0) return rc;
    for (size_t i = 0; i < n.count; i++)
        tool_error(stdout, "%s", n.items[i]);
    tool_names_free(&n);
    breaker_store_close(st);
    return 0;
}
