/* SPDX-License-Identifier: MIT */
/*
 * test_ops_metric_sample.c - print every Prometheus family libbreaker
 * exports: a registry with one breaker (each per-breaker family has a
 * series whatever the state) followed by a bulkhead, a retry budget and an
 * executor. test_ops_dashboard.py checks the metric names the Grafana
 * dashboard and the Prometheus rules refer to against this output, so a
 * renamed metric fails a test instead of silently emptying a panel.
 */
#include <breaker.h>
#include <breaker/compose.h>
#include <breaker/registry.h>

#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, int rc) {
    fprintf(stderr, "test_ops_metric_sample: %s: %s\n", what, breaker_strerror(rc));
    return 1;
}

int main(void) {
    breaker_registry *reg = NULL;
    int rc = breaker_registry_create(NULL, &reg);
    if (rc != BREAKER_OK) return fail("registry", rc);
    breaker *b = NULL;
    rc = breaker_registry_get(reg, "payments.charge", &b);
    if (rc != BREAKER_OK) return fail("get", rc);
    breaker_bulkhead *bh = NULL;
    breaker_retry_budget *rb = NULL;
    breaker_executor *ex = NULL;
    if ((rc = breaker_bulkhead_create(NULL, &bh)) != BREAKER_OK) return fail("bulkhead", rc);
    if ((rc = breaker_retry_budget_create(NULL, &rb)) != BREAKER_OK) return fail("budget", rc);
    breaker_executor_config ec;
    breaker_executor_config_init(&ec);
    ec.b = b;
    ec.bulkhead = bh;
    ec.budget = rb;
    if ((rc = breaker_executor_create(&ec, &ex)) != BREAKER_OK) return fail("executor", rc);

    char *text = NULL;
    if ((rc = breaker_registry_export_prometheus_alloc(reg, &text, NULL)) != BREAKER_OK)
        return fail("registry export", rc);
    fputs(text, stdout);
    free(text);
    breaker_compose_metrics items[] = {
        {.name = "payments.charge", .bulkhead = bh, .budget = rb, .executor = ex}};
    if ((rc = breaker_compose_export_prometheus_alloc(items, 1, &text, NULL)) != BREAKER_OK)
        return fail("compose export", rc);
    fputs(text, stdout);
    free(text);

    breaker_executor_destroy(ex);
    breaker_retry_budget_destroy(rb);
    breaker_bulkhead_destroy(bh);
    (void)breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    return 0;
}
