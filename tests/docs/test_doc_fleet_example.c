/* SPDX-License-Identifier: MIT */
/*
 * test_doc_fleet_example.c - docs/fleet.md's example runs (tests/docs/docs.cmake
 * copies its first C block out of the page) against a real redis-server on
 * loopback (tests/support/redis_server.h), as the page says of it: attach
 * stores the limits in Redis as named fields; healthy calls go through; the
 * failures of one round trip the fleet once, with the host's evidence;
 * fleet_stop() makes the last round and frees the breaker.
 */
#include "doc_fleet_example.h"
#include "redis_server.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

int doc_fleet_failing;

#define NAME_KEY "breaker:v2:{payments-db}:s"

static void the_fleet_example_shares_its_trip_through_redis(void **state) {
    (void)state;
    struct test_redis server = {0};
    assert_int_equal(test_redis_start(&server), 0);
    assert_int_equal(fleet_start("127.0.0.1", server.port), 0);
    /* The first attacher's limits, stored as named fields. */
    assert_int_equal(test_redis_int(&server, "HGET " NAME_KEY " min_calls"), 20);
    assert_int_equal(test_redis_int(&server, "HGET " NAME_KEY " st"), 0);
    doc_fleet_failing = 0;
    for (int i = 0; i < 10; i++)
        assert_int_equal(pay(1), 0);
    /* Ten failures: with the ten successes, min_calls and a 50% rate. The
     * local breaker trips on them too; later calls get the fallback. */
    doc_fleet_failing = 1;
    int failed = 0, fell_back = 0;
    for (int i = 0; i < 15; i++) {
        int r = pay(1);
        failed += r > 0;
        fell_back += r == -1;
    }
    assert_int_equal(failed, 10);
    assert_int_equal(fell_back, 5);
    /* A round (the flusher's, here at once) carries them: the fleet trips
     * once, on this host's evidence. */
    assert_int_equal(breaker_redis_flush(fleet), BREAKER_OK);
    assert_int_equal(test_redis_int(&server, "HGET " NAME_KEY " st"), 1);
    assert_int_equal(test_redis_int(&server, "HGET " NAME_KEY " trips"), 1);
    assert_int_equal(test_redis_int(&server, "HGET " NAME_KEY " ec"), 20);
    assert_int_equal(test_redis_int(&server, "HGET " NAME_KEY " ef"), 10);
    assert_int_equal(breaker_get_state(payments), BREAKER_OPEN);
    fleet_stop();
    test_redis_stop(&server);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_fleet_example_shares_its_trip_through_redis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
