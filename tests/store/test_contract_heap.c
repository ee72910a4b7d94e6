/* SPDX-License-Identifier: MIT */
/*
 * test_contract_heap.c - the store contract (store_contract.h) for the
 * process heap: both sites are threads of one process sharing a registry,
 * the only way two handles of one process share a breaker by name.
 */
#include "store_contract.h"

#include "test_util.h"

#include <breaker/registry.h>

static breaker_registry *reg;

static int heap_setup(void) { return breaker_registry_create(NULL, &reg) == BREAKER_OK ? 0 : -1; }

static void heap_teardown(void) {
    breaker_registry_destroy(reg);
    reg = NULL;
}

/* The first attach of a name registers its limits (an exact-name
 * configuration); later ones get the breaker as it is, like a store. */
static int heap_attach(int site, const char *name, const breaker_config *cfg, breaker **out) {
    (void)site;
    if (breaker_registry_find(reg, name, out) == BREAKER_OK) return BREAKER_OK;
    int rc = breaker_registry_set_config(reg, name, cfg, NULL, 0);
    if (rc != BREAKER_OK) return rc;
    return breaker_registry_get(reg, name, out);
}

static void heap_detach(int site, breaker *b) {
    (void)site;
    breaker_registry_release(reg, b);
}

int main(void) {
    static const struct store_under_test heap = {
        .name = "heap",
        .setup = heap_setup,
        .teardown = heap_teardown,
        .attach = heap_attach,
        .detach = heap_detach,
        .sync = NULL,
    };
    return store_contract_run(&heap);
}
