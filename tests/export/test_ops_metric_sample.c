/* SPDX-License-Identifier: MIT */
/*
 * test_ops_metric_sample.c - print every Prometheus family libbreaker
 * exports: a registry with one breaker (each per-breaker family has a
 * series whatever the state) followed by a bulkhead, a retry budget and an
 * executor; a second breaker that has had one probe (the probe-duration
 * family has series only then); and, when built with the fleet store
 * (BREAKER_OPS_SAMPLE_FLEET), a fleet handle's families (a handle on a
 * socket that does not exist: degraded at once, no server needed).
 * test_ops_dashboard.py checks the metric names the Grafana
 * dashboard and the Prometheus rules refer to against this output, so a
 * renamed metric fails a test instead of silently emptying a panel.
 */
#include <breaker.h>
#include <breaker/compose.h>
#include <breaker/registry.h>

#include <stdio.h>
#include <stdlib.h>
#ifdef BREAKER_OPS_SAMPLE_FLEET
#include <breaker/redis.h>
#endif

/* A clock the sample moves by hand, to get a probe without waiting. */
static uint64_t sample_now;
static uint64_t sample_clock(void *ctx) {
    (void)ctx;
    return sample_now;
}

/* Trip `b` (consecutive, threshold 1), let its wait pass and complete one
 * probe. */
static int one_probe(breaker *b) {
    breaker_permit p;
    int rc = breaker_acquire(b, &p);
    if (rc == BREAKER_OK) rc = breaker_complete(b, &p, BREAKER_FAILURE);
    if (rc != BREAKER_OK) return rc;
    sample_now += breaker_retry_after_ns(b);
    rc = breaker_acquire(b, &p);
    if (rc == BREAKER_OK) rc = breaker_complete(b, &p, BREAKER_SUCCESS);
    return rc;
}

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

    breaker_registry_config prc;
    breaker_registry_config_init(&prc);
    prc.defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    prc.defaults.failure_threshold = 1;
    prc.defaults.clock = sample_clock;
    prc.clock = sample_clock;
    breaker_registry *preg = NULL;
    breaker *pb = NULL;
    if ((rc = breaker_registry_create(&prc, &preg)) != BREAKER_OK) return fail("registry", rc);
    if ((rc = breaker_registry_get(preg, "search.query", &pb)) != BREAKER_OK)
        return fail("get", rc);
    if ((rc = one_probe(pb)) != BREAKER_OK) return fail("probe", rc);
    if ((rc = breaker_registry_export_prometheus_alloc(preg, &text, NULL)) != BREAKER_OK)
        return fail("probe export", rc);
    fputs(text, stdout);
    free(text);
    (void)breaker_registry_release(preg, pb);
    breaker_registry_destroy(preg);

#ifdef BREAKER_OPS_SAMPLE_FLEET
    breaker_redis_config fc;
    breaker_redis_config_init(&fc);
    fc.unix_path = "/nonexistent/breaker-ops-sample.sock";
    breaker_redis *fleet = NULL;
    char msg[256], fleet_text[8192];
    if ((rc = breaker_redis_open(&fc, &fleet, msg, sizeof(msg))) != BREAKER_OK)
        return fail(msg, rc);
    rc = breaker_redis_export_prometheus(fleet, fleet_text, sizeof(fleet_text), NULL);
    breaker_redis_close(fleet);
    if (rc != BREAKER_OK) return fail("fleet export", rc);
    fputs(fleet_text, stdout);
#endif

    breaker_executor_destroy(ex);
    breaker_retry_budget_destroy(rb);
    breaker_bulkhead_destroy(bh);
    (void)breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    return 0;
}
