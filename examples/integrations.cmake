# SPDX-License-Identifier: MIT
# The integrations' examples (docs/grpc.md, docs/postgresql.md, docs/curl.md):
# grpc_status always (the classifier is libbreaker's), pq_query and curl_get
# when breaker_pq and breaker_curl are built. test_pq and test_curl run them
# against their servers (tests/integrations/integrations.cmake).
add_executable(grpc_status grpc_status.c)
target_link_libraries(grpc_status PRIVATE breaker::breaker)
if(TARGET breaker_pq)
  add_executable(pq_query pq_query.c)
  target_link_libraries(pq_query PRIVATE breaker::pq PkgConfig::BREAKER_DEP_PQ)
endif()
if(TARGET breaker_curl)
  add_executable(curl_get curl_get.c)
  target_link_libraries(curl_get PRIVATE breaker::curl PkgConfig::BREAKER_DEP_CURL)
endif()
