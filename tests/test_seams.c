/*
 * test_seams.c - the seams a shared store builds on, and the defects found
 * while drawing them: a breaker's identity is its handle's (never its
 * configuration's), a probe slot claim is unique per admission, and a block
 * is checked before it is used.
 */
#include "test_util.h"

#include <breaker/registry.h>

/* ---- Identity: the registry recognises its breakers by their handle ------- */

static unsigned user_events;
static void count_user_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)ctx;
    (void)b;
    (void)ev;
    user_events++;
}

static void copy_of_registry_config_is_not_the_registrys(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    test_config(&rc.defaults, &clock, NULL);
    rc.defaults.on_event = count_user_event;
    rc.defaults.event_ctx = &user_events;
    rc.clock = fake_clock_read;
    rc.clock_ctx = &clock;
    breaker_registry *reg = NULL;
    assert_int_equal(breaker_registry_create(&rc, &reg), BREAKER_OK);
    breaker *real = NULL;
    assert_int_equal(breaker_registry_get(reg, "payments", &real), BREAKER_OK);

    /* The configuration hands back the user's own callback. */
    breaker_config cfg;
    breaker_get_config(real, &cfg);
    assert_ptr_equal(cfg.on_event, count_user_event);
    assert_ptr_equal(cfg.event_ctx, &user_events);

    /* A breaker made from it is nobody's. */
    breaker *copy = make_breaker(&cfg);
    assert_null(breaker_registry_name(reg, copy));
    assert_int_equal(breaker_registry_release(reg, copy), BREAKER_EINVAL);
    breaker_registry_info info;
    assert_int_equal(breaker_registry_info_get(reg, copy, &info, NULL, 0), BREAKER_EINVAL);

    /* Its transitions reach the user's callback and not the registry's
     * history of the real breaker. */
    user_events = 0;
    assert_int_equal(breaker_force_open(copy), BREAKER_OK);
    assert_int_equal(user_events, 1);
    breaker_event hist[8];
    assert_int_equal(breaker_registry_info_get(reg, real, &info, hist, 8), BREAKER_OK);
    assert_int_equal(info.history_len, 0);
    assert_int_equal(breaker_get_state(real), BREAKER_CLOSED);

    /* The real breaker's own transitions still reach both. */
    assert_int_equal(breaker_force_open(real), BREAKER_OK);
    assert_int_equal(user_events, 2);
    assert_int_equal(breaker_registry_info_get(reg, real, &info, hist, 8), BREAKER_OK);
    assert_int_equal(info.history_len, 1);
    assert_string_equal(breaker_registry_name(reg, real), "payments");

    /* The real reference is still there to release, once. */
    assert_int_equal(breaker_registry_release(reg, real), BREAKER_OK);
    test_breaker_destroy(copy);
    breaker_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copy_of_registry_config_is_not_the_registrys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
