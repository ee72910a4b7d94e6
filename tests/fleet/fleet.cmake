# SPDX-License-Identifier: MIT
# The fleet protocol, written once (src/store/redis/protocol.c): its rules
# alone, with no hiredis and no redis-server.
breaker_add_test(test_fleet_protocol SOURCES fleet/test_fleet_protocol.c LIBS breaker_fleet_protocol
                 TIMEOUT 30)
# The in-process Redis (src/store/redis/inproc/) on its own, and the fleet's
# real scripts on it (a seeded workload, tests/support/fleet_workload.c);
# built when Lua 5.1 is (breaker_redis_inproc). No redis-server: it runs
# under valgrind too.
if(TARGET breaker_redis_inproc)
  breaker_add_test(test_inproc SOURCES fleet/test_inproc.c support/fleet_workload.c
                   LIBS breaker_redis_inproc breaker_fleet_scripts breaker_fleet_protocol
                   TIMEOUT 120)
endif()
# The real client over the in-process transport (src/store/redis/inproc/):
# the store contract, and the deterministic simulation of a fleet with
# faults (test_fleet_sim: its invariants after every step; its seeds run
# until a million simulated rounds in an optimised build, 20 seeds in
# others, whose loop is several times slower).
if(TARGET breaker_redis AND TARGET breaker_redis_inproc)
  breaker_add_test(test_contract_inproc SOURCES fleet/test_contract_inproc.c support/store_contract.c
                   LIBS breaker::redis breaker_redis_inproc breaker_fleet_protocol TIMEOUT 120)
  breaker_add_test(test_fleet_sim SOURCES fleet/test_fleet_sim.c
                   LIBS breaker::redis breaker_redis_inproc breaker_fleet_protocol TIMEOUT 300
                   LABELS sim)
  # A reviewer's reproducers of the control record's edges (issue 34). Label
  # "concurrency": two of them are races that ASan and TSan judge (make check
  # runs the label under TSan too); valgrind serialises their threads.
  breaker_add_test(test_fleet_review SOURCES fleet/test_fleet_review.c
                   LIBS breaker::redis breaker_redis_inproc breaker_fleet_protocol TIMEOUT 120
                   LABELS concurrency)
  if(TARGET test_fleet_sim AND (BREAKER_SANITIZER OR NOT CMAKE_BUILD_TYPE MATCHES "Rel"))
    set_tests_properties(test_fleet_sim PROPERTIES ENVIRONMENT "BREAKER_SIM_SEEDS=20")
  endif()
endif()
