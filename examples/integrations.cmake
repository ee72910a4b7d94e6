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
# Given no arguments, each prints its usage line and exits 2.
if(BREAKER_BUILD_TESTS)
  foreach(_example pq_query curl_get)
    if(TARGET ${_example})
      add_test(NAME examples_${_example}_prints_its_usage COMMAND sh -c
        "out=$(\"$0\" 2>&1); rc=$?; [ $rc -eq 2 ] && echo \"$out\" | grep -q \"^usage: $1 \" ||
           { echo \"exit $rc: $out\"; exit 1; }"
        $<TARGET_FILE:${_example}> ${_example})
      set_tests_properties(examples_${_example}_prints_its_usage PROPERTIES TIMEOUT 30 LABELS cli)
    endif()
  endforeach()
endif()
