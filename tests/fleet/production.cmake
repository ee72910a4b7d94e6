# SPDX-License-Identifier: MIT
# Redis as production runs it (issue 37, docs/redis-production.md): the
# fleet store's configuration errors, its documented ACL grant, TLS and
# Sentinel, each against real servers the tests start themselves on
# loopback (tests/support/redis_server.c). Built with the other redis tests
# (redis.cmake: breaker_add_redis_test()).
if(TARGET breaker_redis AND BREAKER_HAVE_CMOCKA AND BREAKER_REDIS_SERVER)
  # A configuration error is not an outage: each way Redis refuses a
  # handle's configuration, as the library, its export and (with the
  # breaker binary) breaker exec --redis report it.
  breaker_add_redis_test(test_fleet_misconfigured SOURCES fleet/test_fleet_misconfigured.c
                         TIMEOUT 120 LABELS redis external)
  if(BREAKER_BUILD_TOOLS)
    set_tests_properties(test_fleet_misconfigured PROPERTIES LABELS "redis;external;cli"
                         ENVIRONMENT "BREAKER_TEST_TOOL=$<TARGET_FILE:breaker_cli>")
  endif()
  # The documented ACL grant (docs/redis-production.md, the manual,
  # BREAKER_REDIS_ACL_RULES) is the one the test runs, and the whole fleet
  # works through it: one Redis, a database other than 0, a Cluster.
  breaker_add_redis_test(test_fleet_acl SOURCES fleet/test_fleet_acl.c TIMEOUT 180
                         LABELS redis external)
  target_compile_definitions(test_fleet_acl PRIVATE BREAKER_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endif()
