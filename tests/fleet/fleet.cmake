# SPDX-License-Identifier: MIT
# The fleet protocol, written once (src/store/redis/protocol.c): its rules alone,
# and the simulator's model of the fleet store (tools/sim/fleet_model.c, its
# server half tools/sim/fleet_server.c) that drives them. Neither needs hiredis
# or a redis-server; the model against the real scripts on a real
# redis-server is test_fleet_differential (redis.cmake).
# The store contract (support/store_contract.h) for the model, as for every store.
breaker_add_test(test_fleet_protocol SOURCES fleet/test_fleet_protocol.c LIBS breaker_fleet_protocol
                 TIMEOUT 30)
breaker_add_test(test_fleet_model SOURCES fleet/test_fleet_model.c
                 ${PROJECT_SOURCE_DIR}/tools/sim/fleet_model.c ${PROJECT_SOURCE_DIR}/tools/sim/fleet_server.c
                 LIBS breaker_fleet_protocol TIMEOUT 30)
breaker_add_test(test_contract_model INTERNAL SOURCES fleet/test_contract_model.c support/store_contract.c
                 ${PROJECT_SOURCE_DIR}/tools/sim/fleet_model.c ${PROJECT_SOURCE_DIR}/tools/sim/fleet_server.c
                 LIBS breaker_fleet_protocol)
# The in-process Redis (src/store/redis/inproc/) on its own, and the fleet's
# real scripts on it (a seeded workload, tests/support/fleet_workload.c);
# built when Lua 5.1 is (breaker_redis_inproc). No redis-server: it runs
# under valgrind too.
if(TARGET breaker_redis_inproc)
  breaker_add_test(test_inproc SOURCES fleet/test_inproc.c support/fleet_workload.c
                   LIBS breaker_redis_inproc breaker_fleet_scripts breaker_fleet_protocol
                   TIMEOUT 120)
endif()
