# SPDX-License-Identifier: MIT
# http_client: real HTTP requests through the executor (breaker, bulkhead,
# retries, budget, cached fallback). Built only when libcurl's development
# package is installed (libcurl4-openssl-dev, see scripts/deps/build/compose.txt);
# the library itself never links libcurl.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(BREAKER_CURL QUIET IMPORTED_TARGET libcurl)
endif()
if(BREAKER_CURL_FOUND)
  add_executable(http_client http_client.c)
  target_link_libraries(http_client PRIVATE breaker::breaker PkgConfig::BREAKER_CURL Threads::Threads)
else()
  message(STATUS "libcurl not found: examples/http_client and test_http_e2e are not built")
endif()
