/* SPDX-License-Identifier: MIT */
/*
 * test_export_store.c - breaker_store_export_prometheus(): a store's
 * breakers under the registry exporter's metric table, without the
 * families a store cannot keep (what `breaker status --prometheus` prints).
 */
#define _GNU_SOURCE /* mkdtemp */
#include "store_fixture.h"

#include <breaker/registry.h>

#include <string.h>

static void assert_contains(const char *text, const char *line) {
    if (strstr(text, line) == NULL) fail_msg("missing '%s' in:\n%s", line, text);
}

static void assert_lacks(const char *text, const char *what) {
    if (strstr(text, what) != NULL) fail_msg("unexpected '%s' in:\n%s", what, text);
}

/* The "# TYPE name kind" lines of `text`, one per line, in order. */
static void families_of(const char *text, char *out, size_t cap) {
    out[0] = '\0';
    for (const char *p = strstr(text, "# TYPE "); p != NULL; p = strstr(p + 1, "\n# TYPE ")) {
        if (*p == '\n') p++;
        const char *name = p + 7, *end = strchr(name, ' ');
        assert_non_null(end);
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%.*s\n", (int)(end - name), name);
    }
}

/* Family `name` taken out of a `families_of()` list. */
static void drop(char *list, const char *name) {
    char line[96];
    snprintf(line, sizeof(line), "%s\n", name);
    char *at = strstr(list, line);
    if (at == NULL) fail_msg("no family %s in:\n%s", name, list);
    memmove(at, at + strlen(line), strlen(at + strlen(line)) + 1);
}

/* Three breakers in a store: "tripped" (open after two failures), "forced"
 * (forced open by an operator) and "timed" (times its calls). */
static breaker_store *three_breakers(void) {
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(2);
    breaker *b = attach(st, "tripped", &cfg);
    call_ok(b, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE);
    breaker_destroy(b);
    b = attach(st, "forced", NULL);
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    breaker_destroy(b);
    breaker_config_init(&cfg);
    cfg.slow_call_ns = 1000000;
    b = attach(st, "timed", &cfg);
    call_ok(b, BREAKER_SUCCESS);
    breaker_destroy(b);
    return st;
}

static void a_store_exports_the_registry_families_but_those_it_cannot_keep(void **state) {
    (void)state;
    breaker_store *st = three_breakers();
    char *store_text = NULL, *reg_text = NULL;
    assert_int_equal(breaker_store_export_prometheus_alloc(st, NULL, &store_text, NULL),
                     BREAKER_OK);
    /* The same breakers through a registry over the same store. */
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.store = st;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    const char *names[] = {"tripped", "forced", "timed"};
    for (int i = 0; i < 3; i++) {
        breaker *b = NULL;
        assert_int_equal(breaker_registry_get(reg, names[i], &b), BREAKER_OK);
    }
    assert_int_equal(breaker_registry_export_prometheus_alloc(reg, &reg_text, NULL), BREAKER_OK);

    /* One table: the store's families are the registry's, in its order,
     * with the per-pair transitions, flapping and the registry's own
     * series left out, and the store's transition count in their place. */
    char store_families[4096], reg_families[4096];
    families_of(store_text, store_families, sizeof(store_families));
    families_of(reg_text, reg_families, sizeof(reg_families));
    drop(store_families, "breaker_store_transitions_total");
    drop(reg_families, "breaker_transitions_total");
    drop(reg_families, "breaker_flapping");
    const char *registry_own[] = {"breaker_registry_breakers", "breaker_registry_max_breakers",
                                  "breaker_registry_created_total",
                                  "breaker_registry_evicted_total",
                                  "breaker_registry_rejected_full_total"};
    for (size_t i = 0; i < sizeof(registry_own) / sizeof(registry_own[0]); i++)
        drop(reg_families, registry_own[i]);
    assert_string_equal(store_families, reg_families);

    /* What the store keeps, shared by every process. */
    assert_contains(store_text, "breaker_state{breaker=\"tripped\"} 1\n");
    assert_contains(store_text, "breaker_state{breaker=\"forced\"} 3\n");
    assert_contains(store_text, "breaker_store_transitions_total{breaker=\"tripped\"} 1\n");
    assert_contains(store_text,
                    "breaker_state_seconds_total{breaker=\"forced\",state=\"forced_open\"} ");
    assert_contains(store_text, "breaker_next_probe_seconds{breaker=\"forced\"} +Inf\n");
    assert_contains(
        store_text,
        "breaker_call_duration_seconds_count{breaker=\"timed\",outcome=\"success\"} 1\n");
    assert_lacks(store_text,
                 "breaker_state_seconds_total{breaker=\"tripped\",state=\"forced_open\"}");
    assert_lacks(store_text, "breaker_flapping");
    assert_lacks(store_text, "breaker_registry_");
    assert_contains(store_text, "breaker_build_info{version=\"");
    free(store_text);
    free(reg_text);
    breaker_registry_destroy(reg);
    breaker_store_close(st);
}

static void a_store_export_names_one_breaker_or_says_it_is_not_there(void **state) {
    (void)state;
    breaker_store *st = three_breakers();
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(breaker_store_export_prometheus_alloc(st, "forced", &text, &len), BREAKER_OK);
    assert_int_equal(strlen(text), len);
    assert_contains(text, "breaker_state{breaker=\"forced\"} 3\n");
    assert_lacks(text, "breaker=\"tripped\"");
    assert_lacks(text, "breaker=\"timed\"");
    free(text);
    static char untouched[] = "untouched";
    text = untouched;
    assert_int_equal(breaker_store_export_prometheus_alloc(st, "absent", &text, &len),
                     BREAKER_NOT_FOUND);
    assert_null(text);
    breaker_store_close(st);
}

static void a_small_buffer_gets_enospc_and_the_size_it_needs(void **state) {
    (void)state;
    breaker_store *st = three_breakers();
    char small[64];
    size_t need = 0;
    assert_int_equal(breaker_store_export_prometheus(st, "tripped", small, sizeof(small), &need),
                     BREAKER_ENOSPC);
    assert_string_equal(small, "");
    char *big = malloc(need);
    assert_non_null(big);
    size_t len = 0;
    assert_int_equal(breaker_store_export_prometheus(st, "tripped", big, need, &len), BREAKER_OK);
    assert_int_equal(len + 1, need);
    assert_contains(big, "breaker_store_transitions_total{breaker=\"tripped\"} 1\n");
    free(big);
    breaker_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_store_exports_the_registry_families_but_those_it_cannot_keep, setup, teardown),
        cmocka_unit_test_setup_teardown(a_store_export_names_one_breaker_or_says_it_is_not_there,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_small_buffer_gets_enospc_and_the_size_it_needs, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
