# SPDX-License-Identifier: MIT
# Composition (include/breaker/compose.h): retries, retry budget, bulkhead,
# deadlines, fallbacks, the executor, and an end-to-end test with real HTTP.
breaker_add_test(test_executor SOURCES compose/test_executor.c TIMEOUT 60)
# "concurrency": test_retry shares one retry budget between executors on many
# threads, so make check also runs it under TSan.
breaker_add_test(test_retry SOURCES compose/test_retry.c LABELS concurrency TIMEOUT 60)
breaker_add_test(test_bulkhead SOURCES compose/test_bulkhead.c LABELS concurrency TIMEOUT 120)
breaker_add_test(test_fallback SOURCES compose/test_fallback.c TIMEOUT 60)

# End to end over real HTTP: examples/http_client (built when libcurl is
# found) against tests/support/http_test_server.py, which the test starts on a free
# loopback port and stops. A python3 in /usr/bin is preferred: version
# managers' shims take seconds to start each process.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(BREAKER_E2E_CURL QUIET libcurl)
endif()
find_program(BREAKER_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(BREAKER_PYTHON3 NAMES python3)
if(BREAKER_BUILD_EXAMPLES AND BREAKER_E2E_CURL_FOUND AND BREAKER_PYTHON3)
  add_test(NAME test_http_e2e
    COMMAND ${BREAKER_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_http_e2e.py
            --client $<TARGET_FILE:http_client>
            --server ${CMAKE_CURRENT_SOURCE_DIR}/support/http_test_server.py)
  # "concurrency" too: the client runs concurrent requests through one
  # bulkhead, breaker and executor, so make check also runs it under TSan.
  set_tests_properties(test_http_e2e PROPERTIES TIMEOUT 120 LABELS "e2e;concurrency")
else()
  message(STATUS "test_http_e2e skipped: needs libcurl (pkg-config), python3 and the examples")
endif()
