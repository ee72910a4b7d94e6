# SPDX-License-Identifier: MIT
# Packaging: every way a user consumes libbreaker (label "packaging").
# - packaging_cxx: the public headers and the optional breaker/breaker.hpp from
#   C++17 (g++ and clang++, -Wall -Wextra -pedantic -Werror), linked against
#   this build's library and run (tests/cpp/run.sh).
# - packaging_consumers: static and shared install trees consumed through
#   find_package(), pkg-config and FetchContent, version compatibility, the
#   installed tool's RUNPATH and the SONAME (tests/packaging/consumers.sh). It
#   configures its own builds from the source tree, whatever this build is, so
#   it is registered once: in static builds (make check's ASan build), not
#   again in the shared one.
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(_breaker_cxx_driver clang++)
else()
  set(_breaker_cxx_driver g++)
endif()
add_test(NAME packaging_cxx
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/cpp/run.sh ${PROJECT_SOURCE_DIR}
          $<TARGET_FILE:breaker> ${_breaker_cxx_driver} "${BREAKER_SANITIZER}")
set_tests_properties(packaging_cxx PROPERTIES TIMEOUT 120 LABELS packaging)

if(NOT BUILD_SHARED_LIBS)
  add_test(NAME packaging_consumers
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/packaging/consumers.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/packaging ${CMAKE_C_COMPILER} ${CMAKE_GENERATOR})
  set_tests_properties(packaging_consumers PROPERTIES TIMEOUT 300 LABELS packaging)
endif()

# - packaging_spdx: every tracked source file carries its SPDX licence line.
add_test(NAME packaging_spdx COMMAND ${PROJECT_SOURCE_DIR}/scripts/spdx.sh --check)
set_tests_properties(packaging_spdx PROPERTIES TIMEOUT 60 LABELS packaging)
