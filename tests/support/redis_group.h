/* SPDX-License-Identifier: MIT */
/*
 * redis_group.h - one real redis-server for a whole cmocka group of tests,
 * started before the group's first test and stopped after its last (and by
 * redis_server.c's atexit handler when a test aborts on the way). A file
 * that includes it runs its group as
 *
 *     cmocka_run_group_tests(tests, group_redis_start, group_redis_stop);
 *
 * (or passes the two around one test: cmocka_unit_test_setup_teardown),
 * and its tests talk to `group_redis`. Files whose group also opens a
 * connection or a store write their own set-up around test_redis_start().
 */
#ifndef BREAKER_TEST_REDIS_GROUP_H
#define BREAKER_TEST_REDIS_GROUP_H

#include "redis_server.h"

static struct test_redis group_redis;

static int group_redis_start(void **state) {
    (void)state;
    return test_redis_start(&group_redis);
}

static int group_redis_stop(void **state) {
    (void)state;
    test_redis_stop(&group_redis);
    return 0;
}

#endif
