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
  "/* Generated from man/breaker_backend.3.scd (tests/docs/docs.cmake). */\n"
  "#include <breaker.h>\n"
  "int make_replica_breakers(const breaker_config *cfg, breaker **out, int n);\n"
  "${CMAKE_MATCH_1}")
breaker_add_test(test_doc_backend_example
  SOURCES docs/test_doc_backend_example.c ${CMAKE_CURRENT_BINARY_DIR}/doc_backend_example.c)

# README's 30-second example, as a function body: its first C block, with
# the #include lines moved above, and the two placeholders it names (the
# dependency's call, the fallback) given as the reader would write them.
breaker_doc_block(README.md c "the 30-second example" _body)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/doc_readme_example.c
  "/* Generated from README.md's 30-second example (tests/docs/docs.cmake). */\n"
  "#include <breaker.h>\n"
  "#include <stdlib.h>\n"
  "int readme_example(int answer);\n"
  "static int serve_fallback(void) { return 1; }\n"
  "/* The dependency: answers `answer` (an HTTP status). */\n"
  "#define http_get(...) answer\n"
  "int readme_example(int answer) {\n"
  "${_body}"
  "    breaker_destroy(b);\n"
  "    return 0;\n"
  "}\n")
breaker_add_test(test_doc_readme_example
  SOURCES docs/test_doc_readme_example.c ${CMAKE_CURRENT_BINARY_DIR}/doc_readme_example.c)

# docs/fleet.md's example ("Using it"), its first C block, after
# docs/doc_fleet_example.h (its #include lines, and the placeholders it names
# given); a main of the test's own runs it against a redis-server
# (tests/fleet/redis.cmake: built when breaker_redis and redis-server are).
if(COMMAND breaker_add_redis_test)
  breaker_doc_block(docs/fleet.md c "the example of Using it" _body)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/doc_fleet_example.c
    "/* Generated from docs/fleet.md's example (tests/docs/docs.cmake). */\n"
    "#include \"doc_fleet_example.h\"\n${_body}")
  breaker_add_redis_test(test_doc_fleet_example
    SOURCES docs/test_doc_fleet_example.c ${CMAKE_CURRENT_BINARY_DIR}/doc_fleet_example.c
    TIMEOUT 60 LABELS docs external)
  target_include_directories(test_doc_fleet_example PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/docs)
endif()

# docs/design.md's layout is the tree: every file it names exists, and every
# file under include/ and src/ is named there.
add_test(NAME docs_design_layout_is_the_tree
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs/design_layout.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(docs_design_layout_is_the_tree PROPERTIES LABELS "docs;cli" TIMEOUT 30)

# CHANGELOG.md's Unreleased section: one line per change, each link found.
find_program(BREAKER_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(BREAKER_PYTHON3 NAMES python3)
if(BREAKER_PYTHON3)
  add_test(NAME docs_changelog_one_line_per_change
    COMMAND ${BREAKER_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/changelog_check.py
            ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs_changelog_one_line_per_change PROPERTIES LABELS "docs;cli" TIMEOUT 30)
endif()

# README's "Platforms" section against the Makefile and .ci/run: the
# platforms it says are tested are the ones CI tests.
add_test(NAME readme_platforms COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/docs/readme_platforms.sh
                                         ${PROJECT_SOURCE_DIR})
# "cli": a shell script, which make valgrind leaves out.
set_tests_properties(readme_platforms PROPERTIES TIMEOUT 30 LABELS "docs;cli")
