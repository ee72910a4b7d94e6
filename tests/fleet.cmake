# SPDX-License-Identifier: MIT
# The fleet protocol, written once (src/redis/protocol.c): its rules alone,
# without hiredis or a redis-server.
breaker_add_test(test_fleet_protocol SOURCES test_fleet_protocol.c LIBS breaker_fleet_protocol
                 TIMEOUT 30)
