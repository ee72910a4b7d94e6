# SPDX-License-Identifier: MIT
# `breaker exec --redis` (tools/ops/exec_fleet.c) against a real redis-server
# (tests/support/redis_server.c), with real processes: the test runs the built tool,
# which runs the test program again as its COMMAND. Built when the fleet
# store is (the tool then links it: tools/CMakeLists.txt) and a redis-server
# is installed. Labels: "redis", "external" (it needs a redis-server; its
# runs mean nothing under valgrind), "cli" (it runs the command line).
if(TARGET breaker_redis AND BREAKER_HAVE_CMOCKA AND BREAKER_BUILD_TOOLS)
  find_program(BREAKER_REDIS_SERVER redis-server)
  if(BREAKER_REDIS_SERVER)
    add_executable(test_cli_exec_redis tools/test_cli_exec_redis.c support/redis_server.c)
    target_link_libraries(test_cli_exec_redis PRIVATE PkgConfig::CMOCKA PkgConfig::HIREDIS)
    target_include_directories(test_cli_exec_redis PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
    add_test(NAME test_cli_exec_redis COMMAND test_cli_exec_redis $<TARGET_FILE:breaker_cli>)
    set_tests_properties(test_cli_exec_redis PROPERTIES TIMEOUT 300 LABELS "redis;external;cli")
  endif()
endif()
