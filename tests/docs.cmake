# SPDX-License-Identifier: MIT
# Examples of the manual pages run as tests: the code block under EXAMPLE in
# man/breaker_backend.3.scd is copied out at configure time (a change to the
# page reconfigures) and compiled, with the project's warnings, beside a main
# of the test's own that checks what the page says of it.
set(_page ${PROJECT_SOURCE_DIR}/man/breaker_backend.3.scd)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_page})
file(READ ${_page} _text)
string(FIND "${_text}" "# EXAMPLE" _at)
string(SUBSTRING "${_text}" ${_at} -1 _text)
string(REGEX MATCH "```\n([^`]*)```" _block "${_text}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "${_page}: no code block under EXAMPLE")
endif()
# The page's entry point is declared first, for -Wmissing-prototypes.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/doc_backend_example.c
  "/* Generated from man/breaker_backend.3.scd (tests/docs.cmake). */\n"
  "#include <breaker.h>\n"
  "int make_replica_breakers(const breaker_config *cfg, breaker **out, int n);\n"
  "${CMAKE_MATCH_1}")
breaker_add_test(test_doc_backend_example
  SOURCES test_doc_backend_example.c ${CMAKE_CURRENT_BINARY_DIR}/doc_backend_example.c)
