# SPDX-License-Identifier: MIT
# The fleet store's tests (src/store/redis/, include/breaker/redis.h): a real
# redis-server that the tests start themselves (tests/support/redis_server.c), on a
# free loopback port and a unix socket. Built when breaker_redis is; they link
# breaker::redis, which brings libbreaker (one copy of the core, static or
# shared). Labels: "external" (it needs a redis-server, and its timings mean
# nothing under valgrind), "concurrency" (make check also runs it under TSan:
# the flusher thread and the callers share the lease slots and gates).
# Both are cmocka programs (tests/CMakeLists.txt: BREAKER_HAVE_CMOCKA).
if(TARGET breaker_redis AND BREAKER_HAVE_CMOCKA)
  find_program(BREAKER_REDIS_SERVER redis-server)
  if(NOT BREAKER_REDIS_SERVER)
    message(STATUS "breaker_redis: no redis-server; its tests are not built")
  else()
    # One redis test: its sources beside redis_server.c, linked with
    # breaker::redis, a timeout and its labels.
    function(breaker_add_redis_test name)
      cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LABELS" ${ARGN})
      add_executable(${name} ${T_SOURCES} support/redis_server.c)
      target_link_libraries(${name} PRIVATE breaker_redis PkgConfig::CMOCKA PkgConfig::HIREDIS
                                            Threads::Threads)
      target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
      add_test(NAME ${name} COMMAND ${name})
      set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
    endfunction()
    breaker_add_redis_test(test_redis_fleet SOURCES fleet/test_redis_fleet.c TIMEOUT 240
                           LABELS external concurrency)
    if(BREAKER_PROMTOOL)
      target_compile_definitions(test_redis_fleet PRIVATE BREAKER_PROMTOOL="${BREAKER_PROMTOOL}")
    endif()
    # The store contract (store_contract.h) for the fleet store: two sites
    # are two fleet handles (two hosts) on one redis-server.
    breaker_add_redis_test(test_contract_redis SOURCES fleet/test_contract_redis.c support/store_contract.c
                           TIMEOUT 120 LABELS external)
    # The in-process Redis (src/store/redis/inproc/) held to this one:
    # command by command (test_inproc_redis), and on seeded runs of the
    # fleet's real scripts with the keyspaces compared after every step
    # (test_inproc_differential). Built when Lua 5.1 is.
    if(TARGET breaker_redis_inproc)
      foreach(t test_inproc_redis test_inproc_differential)
        add_executable(${t} fleet/${t}.c support/redis_server.c support/fleet_workload.c)
        target_link_libraries(${t} PRIVATE breaker::breaker breaker_redis_inproc
                                           breaker_fleet_scripts breaker_fleet_protocol
                                           PkgConfig::CMOCKA PkgConfig::HIREDIS)
        target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support
                                                ${PROJECT_SOURCE_DIR}/src)
        add_test(NAME ${t} COMMAND ${t})
        set_tests_properties(${t} PROPERTIES TIMEOUT 240 LABELS "redis;external")
      endforeach()
    endif()
    # A follower that hears "the fleet is closed" on its lease request
    # closes instead of probing alone (the protocol's rule, on real Redis).
    breaker_add_redis_test(test_fleet_follower SOURCES fleet/test_fleet_follower.c TIMEOUT 60
                           LABELS redis external)
    # A healthy name costs a state read per round, not a script call (issue
    # 22): script calls counted by Redis, rounds run when the test asks.
    breaker_add_redis_test(test_fleet_cheap SOURCES fleet/test_fleet_cheap.c TIMEOUT 60
                           LABELS redis external)
    # A corrupt fleet state is reported and rebuilt, never followed (issue
    # 21): it runs the acquire script's text itself (lua/, embedded).
    breaker_add_redis_test(test_fleet_corrupt SOURCES fleet/test_fleet_corrupt.c
                           $<TARGET_OBJECTS:breaker_fleet_scripts> TIMEOUT 120
                           LABELS redis external)
    target_include_directories(test_fleet_corrupt PRIVATE ${PROJECT_SOURCE_DIR}/src)
    # The fleet's scope on every path: ten host processes through the
    # executor and through a registry on the fleet backend.
    breaker_add_redis_test(test_fleet_scope SOURCES fleet/test_fleet_scope.c TIMEOUT 180
                           LABELS external)
    # Fleet-wide operator orders (forced open, forced closed, reset, timed
    # open, with who and why): four host processes and an operator's handle.
    breaker_add_redis_test(test_fleet_orders SOURCES fleet/test_fleet_orders.c TIMEOUT 120
                           LABELS redis external)
    # A reviewer's reproducers: the control record across a change of a
    # store file's holder (issue 34).
    breaker_add_redis_test(test_fleet_review_redis SOURCES fleet/test_fleet_review_redis.c
                           TIMEOUT 120 LABELS redis external)
    # The fleet's shadow mode and live limits: four host processes and an
    # operator's handle; refusals, conflicts and corrupt control fields.
    breaker_add_redis_test(test_fleet_controls SOURCES fleet/test_fleet_controls.c TIMEOUT 120
                           LABELS redis external)
    # The fleet's new limits and a local change of the same breaker at once
    # (with and without a store file): neither writes over the other.
    breaker_add_redis_test(test_fleet_reconfig_race SOURCES fleet/test_fleet_reconfig_race.c
                           TIMEOUT 180 LABELS redis external concurrency)
    # One flusher per host: processes sharing a store file flush as one
    # host (a kernel lock per name in the file; SIGKILL and SIGSTOP of its
    # holder, a closed handle, a moved file; two hosts of four processes and
    # the fleet's probe cap). It reads who holds a name (store/file/host.h).
    breaker_add_redis_test(test_fleet_host SOURCES fleet/test_fleet_host.c TIMEOUT 180
                           LABELS external concurrency)
    target_include_directories(test_fleet_host PRIVATE ${PROJECT_SOURCE_DIR}/src)
    # The fault matrix: each store fault (latency 0-200 ms and jitter through
    # tests/support/fault_proxy.c, resets, a silent peer, a READONLY replica, OOM,
    # killed, stopped, restarted empty) against its promised bound.
    breaker_add_redis_test(test_fleet_faults SOURCES fleet/test_fleet_faults.c support/fault_proxy.c TIMEOUT 180
                           LABELS redis external)
    # Redis Cluster (docs/fleet.md, "Redis Cluster"): 3 masters with a
    # replica each, started by the test on loopback ports; names spread over
    # the masters, a trip across host processes, a killed master's failover,
    # a slot migrated under traffic. It computes slots itself (slots.c).
    # "concurrency": make check also runs it under TSan (the probe path reads
    # the slot map and node list lock-free while the flusher writes them).
    breaker_add_redis_test(test_fleet_cluster SOURCES fleet/test_fleet_cluster.c
                           ${PROJECT_SOURCE_DIR}/src/store/redis/hiredis/slots.c TIMEOUT 300
                           LABELS redis external concurrency)
    target_include_directories(test_fleet_cluster PRIVATE ${PROJECT_SOURCE_DIR}/src)
  endif()
endif()

# The public header compiles as C++ (the C build above compiles it as C).
foreach(_cxx g++ clang++)
  string(MAKE_C_IDENTIFIER "BREAKER_REDIS_${_cxx}" _var)
  find_program(${_var} ${_cxx})
  if(TARGET breaker_redis AND ${_var})
    add_test(NAME redis_header_${_var}
      COMMAND ${${_var}} -std=c++17 -Wall -Wextra -pedantic -Werror -fsyntax-only
              -I${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_LIST_DIR}/redis_header.cpp)
    set_tests_properties(redis_header_${_var} PROPERTIES TIMEOUT 60 LABELS packaging)
  endif()
endforeach()
