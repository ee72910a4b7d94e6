/* SPDX-License-Identifier: MIT */
/* The smallest program of an installed (or vendored) libbreaker's user: the
 * three public headers from C, one call through a breaker, a registry and an
 * executor. tests/packaging/consumers.sh builds it every way a user would. */
#include <breaker.h>
#include <breaker/compose.h>
#include <breaker/registry.h>

#include <stdio.h>
#include <string.h>

static enum breaker_outcome succeed(void *ctx, breaker_attempt *attempt) {
    (void)ctx;
    (void)attempt;
    return BREAKER_SUCCESS;
}

int main(void) {
    breaker_registry *reg;
    breaker *b;
    if (breaker_registry_create(NULL, &reg) != BREAKER_OK) return 1;
    if (breaker_registry_get(reg, "payments.charge", &b) != BREAKER_OK) return 1;

    breaker_executor_config ec;
    breaker_executor_config_init(&ec);
    ec.b = b;
    breaker_executor *ex;
    if (breaker_executor_create(&ec, &ex) != BREAKER_OK) return 1;
    breaker_call call;
    memset(&call, 0, sizeof(call));
    call.op = succeed;
    breaker_result res;
    if (breaker_executor_run(ex, &call, &res) != BREAKER_OK) return 1;
    if (res.kind != BREAKER_RESULT_SUCCEEDED) return 1;
    breaker_executor_destroy(ex);

    char health[64];
    if (breaker_registry_export_health_json(reg, health, sizeof(health), NULL) != BREAKER_OK)
        return 1;
    (void)breaker_registry_release(reg, b);
    breaker_registry_destroy(reg);
    /* The header the program was built with and the library it runs with. */
    printf("consumer: built with %d.%d.%d, runs %s, health %s", BREAKER_VERSION_MAJOR,
           BREAKER_VERSION_MINOR, BREAKER_VERSION_PATCH, breaker_version_string(), health);
    return strcmp(health, "{\"status\":\"ok\"}\n") == 0 ? 0 : 1;
}
