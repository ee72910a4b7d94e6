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
                         support/run_tool.c TIMEOUT 120 LABELS redis external)
  if(BREAKER_REDIS_HAVE_TLS)
    target_compile_definitions(test_fleet_misconfigured PRIVATE BREAKER_TEST_REDIS_TLS=1)
  else()
    target_compile_definitions(test_fleet_misconfigured PRIVATE BREAKER_TEST_REDIS_TLS=0)
  endif()
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
  # TLS: TLS-only redis-servers (--tls-port, --port 0) with certificates
  # the test makes (support/tls_certs.sh, the openssl command), through
  # breaker_redis_tls (src/store/redis/CMakeLists.txt: breaker_redis itself
  # when the system's hiredis has hiredis_ssl, else a second build over the
  # hiredis of -DBREAKER_TEST_HIREDIS_TLS, which make check builds with
  # support/hiredis_tls.sh). Without either it is reported as skipped,
  # saying why: never as passed.
  find_program(BREAKER_OPENSSL openssl)
  if(TARGET breaker_redis_tls AND BREAKER_OPENSSL)
    add_executable(test_fleet_tls fleet/test_fleet_tls.c support/redis_server.c
                                  support/run_tool.c)
    target_link_libraries(test_fleet_tls PRIVATE breaker_redis_tls breaker_test_hiredis
                                                 PkgConfig::CMOCKA Threads::Threads)
    target_include_directories(test_fleet_tls PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
    add_test(NAME test_fleet_tls
             COMMAND test_fleet_tls ${PROJECT_SOURCE_DIR}/tests/support/tls_certs.sh)
    set_tests_properties(test_fleet_tls PROPERTIES TIMEOUT 120 LABELS "redis;external")
    # `breaker exec --redis-tls` too: the command over breaker_redis_tls
    # (tools/CMakeLists.txt: breaker_cli itself when that is breaker_redis).
    if(BREAKER_BUILD_TOOLS)
      if(BREAKER_REDIS_HAVE_TLS)
        set(_tls_tool breaker_cli)
      else()
        set(_tls_tool breaker_cli_tls)
      endif()
      set_tests_properties(test_fleet_tls PROPERTIES LABELS "redis;external;cli"
                           ENVIRONMENT "BREAKER_TEST_TOOL=$<TARGET_FILE:${_tls_tool}>")
    endif()
  else()
    set(_why "no openssl command")
    if(NOT TARGET breaker_redis_tls)
      set(_why "no hiredis with hiredis_ssl: hiredis ${HIREDIS_VERSION} has none, and "
               "-DBREAKER_TEST_HIREDIS_TLS names no prefix that tests/support/hiredis_tls.sh made")
      string(CONCAT _why ${_why})
    endif()
    add_test(NAME test_fleet_tls COMMAND sh -c "echo 'test_fleet_tls skipped: ${_why}'; exit 77")
    set_tests_properties(test_fleet_tls PROPERTIES SKIP_RETURN_CODE 77 LABELS "redis;external")
  endif()
  # Redis Sentinel: a master, two replicas and three Sentinels (redis-server
  # --sentinel, which Debian's redis-sentinel runs), started by the test; the
  # master killed, and failed over gracefully, under three hosts.
  breaker_add_redis_test(test_fleet_sentinel SOURCES fleet/test_fleet_sentinel.c
                         support/run_tool.c TIMEOUT 300
                         LABELS redis external)
  if(BREAKER_BUILD_TOOLS)
    set_tests_properties(test_fleet_sentinel PROPERTIES LABELS "redis;external;cli"
                         ENVIRONMENT "BREAKER_TEST_TOOL=$<TARGET_FILE:breaker_cli>")
  endif()
  # The fleet as Redis holds it: breaker_redis_status() and breaker status
  # --redis over names in every state, a read-only ACL user, a Cluster.
  breaker_add_redis_test(test_fleet_status SOURCES fleet/test_fleet_status.c support/run_tool.c
                         ${PROJECT_SOURCE_DIR}/src/store/redis/hiredis/slots.c TIMEOUT 120
                         LABELS redis external)
  target_include_directories(test_fleet_status PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(test_fleet_status PRIVATE BREAKER_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(BREAKER_PROMTOOL)
    target_compile_definitions(test_fleet_status PRIVATE BREAKER_PROMTOOL="${BREAKER_PROMTOOL}")
  endif()
  if(BREAKER_BUILD_TOOLS)
    set_tests_properties(test_fleet_status PROPERTIES LABELS "redis;external;cli"
                         ENVIRONMENT "BREAKER_TEST_TOOL=$<TARGET_FILE:breaker_cli>")
  endif()
  # A fleet handle across fork(): children with handles of their own, the
  # parent's untouched; an exec'd program given none of its descriptors.
  breaker_add_redis_test(test_fleet_fork SOURCES fleet/test_fleet_fork.c TIMEOUT 120
                         LABELS redis external)
endif()
