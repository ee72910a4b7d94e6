# SPDX-License-Identifier: MIT
# metrics_server: the registry's Prometheus and JSON exports served over HTTP
# with libmicrohttpd (Debian: libmicrohttpd-dev, in scripts/deps/build/observability.txt).
# Built only when pkg-config finds libmicrohttpd; the library itself never
# depends on it. When tests are on, test_metrics_server starts it on a free
# loopback port, scrapes it with curl, checks the scrape with promtool, and
# stops it.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(MICROHTTPD IMPORTED_TARGET libmicrohttpd)
endif()

if(MICROHTTPD_FOUND)
  add_executable(metrics_server metrics_server.c)
  target_link_libraries(metrics_server PRIVATE breaker::breaker PkgConfig::MICROHTTPD
                        Threads::Threads)

  if(BREAKER_BUILD_TESTS)
    find_program(BREAKER_CURL curl)
    find_program(BREAKER_PROMTOOL promtool)
    if(BREAKER_CURL AND BREAKER_PROMTOOL)
      add_test(NAME test_metrics_server
        COMMAND ${PROJECT_SOURCE_DIR}/tests/export/test_metrics_server.sh
                $<TARGET_FILE:metrics_server> ${BREAKER_CURL} ${BREAKER_PROMTOOL})
      set_tests_properties(test_metrics_server PROPERTIES TIMEOUT 60)
    else()
      add_test(NAME test_metrics_server COMMAND sh -c
        "echo 'test_metrics_server: curl or promtool not found; run make deps and reconfigure' >&2; exit 1")
    endif()
  endif()
else()
  message(STATUS "libmicrohttpd not found: examples/metrics_server is not built")
endif()
