/* SPDX-License-Identifier: MIT */
/*
 * test_contract_file.c - the store contract (store_contract.h) for a store
 * file: each site maps the file itself, as two processes would.
 */
#define _GNU_SOURCE
#include "store_contract.h"

#include "test_util.h"

#include <breaker/store.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[64];
static char path[128];
static breaker_store *sites[2];

static int file_setup(void) {
    snprintf(dir, sizeof(dir), "/tmp/breaker_contract_XXXXXX");
    if (mkdtemp(dir) == NULL) return -1;
    snprintf(path, sizeof(path), "%s/store", dir);
    for (int i = 0; i < 2; i++)
        if (breaker_store_open(path, NULL, &sites[i], NULL, 0) != BREAKER_OK) return -1;
    return 0;
}

static void file_teardown(void) {
    for (int i = 0; i < 2; i++) {
        breaker_store_close(sites[i]);
        sites[i] = NULL;
    }
    unlink(path);
    rmdir(dir);
}

static int file_attach(int site, const char *name, const breaker_config *cfg, breaker **out) {
    return breaker_store_attach(sites[site], name, cfg, out, NULL, 0);
}

static void file_detach(int site, breaker *b) {
    (void)site;
    breaker_destroy(b);
}

int main(void) {
    static const struct store_under_test file = {
        .name = "file",
        .setup = file_setup,
        .teardown = file_teardown,
        .attach = file_attach,
        .detach = file_detach,
        .sync = NULL,
    };
    return store_contract_run(&file);
}
