# SPDX-License-Identifier: MIT
# bench/fleet_host: one simulated host's process for bench/fleet_load. Its
# own file, so that scripts/bench.sh can build the same program against the
# library of a baseline commit (it copies this file and fleet_host.c into
# that commit's bench/ and includes this from its CMakeLists.txt).
if(TARGET breaker_redis AND NOT TARGET fleet_host)
  add_executable(fleet_host ${CMAKE_CURRENT_LIST_DIR}/fleet_host.c)
  target_link_libraries(fleet_host PRIVATE breaker_redis Threads::Threads)
endif()
