# SPDX-License-Identifier: MIT
# The integrations (src/integrations/, include/breaker/{grpc,sqlstate,curl,pq}.h).
# - test_grpc_status, test_sqlstate: the pure classifiers, no server.
# - test_pq: breaker_pq against a real PostgreSQL server that the test
#   initialises (initdb) in a temporary directory as an unprivileged user and
#   stops on every path (tests/support/pg_server.c). Needs libpq and the server's
#   binaries (Debian: libpq-dev, postgresql; scripts/deps/check/integrations.txt).
# - test_curl: breaker_curl against real local HTTP servers on 127.0.0.1
#   (tests/support/http_fault_server.c: healthy, 503 with Retry-After, silent, refused,
#   reset mid-body, slow body).
# Labels: "integrations"; the server tests also "external" (real servers and
# their timings: not under valgrind).
# breaker_add_example_to(test example MACRO): the test runs the example
# program (examples/integrations.cmake), whose path it gets as MACRO, when
# examples are built.
function(breaker_add_example_to test example macro)
  if(TARGET ${test} AND BREAKER_BUILD_EXAMPLES)
    target_compile_definitions(${test} PRIVATE ${macro}="$<TARGET_FILE:${example}>")
    add_dependencies(${test} ${example})
  endif()
endfunction()

breaker_add_test(test_grpc_status SOURCES integrations/test_grpc_status.c LABELS integrations)
breaker_add_test(test_sqlstate SOURCES integrations/test_sqlstate.c LABELS integrations)

if(TARGET breaker_pq)
  breaker_add_test(test_pq SOURCES integrations/test_pq.c support/pg_server.c LIBS breaker_pq PkgConfig::BREAKER_DEP_PQ
                   TIMEOUT 180 LABELS "integrations;external")
  breaker_add_example_to(test_pq pq_query EXAMPLE_PQ_QUERY)
endif()

if(TARGET breaker_curl)
  breaker_add_test(test_curl SOURCES integrations/test_curl.c support/http_fault_server.c
                   LIBS breaker_curl PkgConfig::BREAKER_DEP_CURL
                   TIMEOUT 120 LABELS "integrations;external")
  breaker_add_example_to(test_curl curl_get EXAMPLE_CURL_GET)
endif()

# examples/grpc_status.c prints the table; RESOURCE_EXHAUSTED is ignored by
# default and a failure with the shedding policy.
if(BREAKER_BUILD_EXAMPLES)
  add_test(NAME example_grpc_status COMMAND grpc_status)
  set_tests_properties(example_grpc_status PROPERTIES TIMEOUT 30 LABELS integrations
    PASS_REGULAR_EXPRESSION "RESOURCE_EXHAUSTED +ignored +failure\nFAILED_PRECONDITION")
endif()

# - test_grpc_live: breaker/grpc.hpp against a real gRPC server on 127.0.0.1
#   (gRPC's generic API, no code generation), when pkg-config finds grpc++
#   (Debian: libgrpc++-dev, scripts/deps/check/grpc.txt). A plain C++ program,
#   not cmocka; built with the project's sanitizers, and the C-only warnings
#   left out.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(BREAKER_GRPCXX QUIET IMPORTED_TARGET grpc++)
endif()
if(BREAKER_GRPCXX_FOUND)
  enable_language(CXX)
  # docs/grpc.md's example (its C++ block, the #include lines moved above) as
  # the body of a function that test_grpc_live runs against its server; the
  # names the block leaves to the reader are tests/integrations/doc_grpc_example.hpp's.
  breaker_doc_block(docs/grpc.md cpp "the example" _body)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/doc_grpc_example.cpp
    "/* Generated from docs/grpc.md's example (tests/integrations/integrations.cmake). */\n"
    "#include <breaker/grpc.hpp>\n"
    "#include \"doc_grpc_example.hpp\"\n"
    "grpc::Status doc_grpc_example(breaker *b, doc_stub *stub, const doc_message &request,\n"
    "                              doc_message &reply, std::uint64_t tenant_key,\n"
    "                              std::chrono::system_clock::time_point caller_deadline) {\n"
    "${_body}"
    "    return status;\n"
    "}\n")
  add_executable(test_grpc_live integrations/test_grpc_live.cpp
                                ${CMAKE_CURRENT_BINARY_DIR}/doc_grpc_example.cpp)
  target_include_directories(test_grpc_live PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integrations)
  target_compile_features(test_grpc_live PRIVATE cxx_std_17)
  target_link_libraries(test_grpc_live PRIVATE breaker::breaker PkgConfig::BREAKER_GRPCXX
                                               Threads::Threads)
  get_directory_property(_breaker_opts COMPILE_OPTIONS)
  list(REMOVE_ITEM _breaker_opts -Wstrict-prototypes -Wmissing-prototypes)
  set_target_properties(test_grpc_live PROPERTIES COMPILE_OPTIONS "${_breaker_opts}")
  add_test(NAME test_grpc_live COMMAND test_grpc_live)
  set_tests_properties(test_grpc_live PROPERTIES TIMEOUT 120 LABELS "integrations;external")
else()
  message(STATUS "grpc++ not found (Debian: libgrpc++-dev): test_grpc_live is not built")
endif()
