# SPDX-License-Identifier: MIT
# Fuzz targets (docs/fuzzing.md). Each tests/fuzz/<target>.c
# defines LLVMFuzzerTestOneInput. Every build links it with replay_main.c
# into a plain executable that ctest runs over the checked-in corpus
# tests/fuzz/corpus/<target>/ (label "fuzz"), so gcc builds, and make check
# under ASan+UBSan, run every target on every corpus input. With clang and
# libFuzzer available, each target is also built as <target>_libfuzzer
# (-fsanitize=fuzzer, not a test) against copies of the library and the tool
# code compiled with coverage instrumentation, for real fuzzing.
set(_fuzz_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(_fuzz_targets fuzz_config_set fuzz_api_sequence fuzz_store_file fuzz_fleet_reply)
if(BREAKER_BUILD_TOOLS)
  list(APPEND _fuzz_targets fuzz_replay_trace fuzz_tool_options)
endif()

foreach(t ${_fuzz_targets})
  add_executable(${t} ${_fuzz_dir}/${t}.c ${_fuzz_dir}/replay_main.c)
  target_include_directories(${t} PRIVATE ${_fuzz_dir})
  if(t MATCHES "^fuzz_(replay_trace|tool_options)$")
    target_link_libraries(${t} PRIVATE breaker_tool)
  elseif(t STREQUAL "fuzz_fleet_reply")
    # The fleet client's reading of Redis's answers (protocol.c: no hiredis).
    target_link_libraries(${t} PRIVATE breaker::breaker breaker_fleet_protocol)
  else()
    target_link_libraries(${t} PRIVATE breaker::breaker)
  endif()
  add_test(NAME ${t}_corpus COMMAND ${t} ${_fuzz_dir}/corpus/${t})
  set_tests_properties(${t}_corpus PROPERTIES TIMEOUT 60 LABELS fuzz)
  if(t STREQUAL "fuzz_api_sequence")
    # Again from a thread without an owned stripe: per-CPU stripes where the
    # machine has them (the general paths' atomics where not).
    target_link_libraries(${t} PRIVATE Threads::Threads)
    add_test(NAME ${t}_corpus_no_owned_stripe COMMAND ${t} ${_fuzz_dir}/corpus/${t})
    set_tests_properties(${t}_corpus_no_owned_stripe PROPERTIES TIMEOUT 60 LABELS fuzz
                         ENVIRONMENT BREAKER_FUZZ_NO_OWNED_STRIPE=1)
  endif()
  # Inputs that fail until a known bug is fixed (docs/fuzzing.md): listed by
  # ctest as disabled, run by hand; move them into the corpus once fixed.
  if(IS_DIRECTORY ${_fuzz_dir}/reproducers/${t})
    add_test(NAME ${t}_reproducers COMMAND ${t} ${_fuzz_dir}/reproducers/${t})
    set_tests_properties(${t}_reproducers PROPERTIES TIMEOUT 60 LABELS fuzz DISABLED TRUE)
  endif()
endforeach()

# ---- libFuzzer builds: clang only, and not with ThreadSanitizer (libFuzzer
# does not support it).
option(BREAKER_LIBFUZZER "With clang, also build the libFuzzer fuzz targets" ON)
if(BREAKER_LIBFUZZER AND CMAKE_C_COMPILER_ID MATCHES "Clang" AND
   NOT BREAKER_SANITIZER MATCHES "thread")
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_c_source_compiles("
    #include <stddef.h>
    #include <stdint.h>
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }"
    BREAKER_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  if(NOT BREAKER_HAVE_LIBFUZZER)
    message(STATUS "libFuzzer not found (apt-get install libclang-rt-dev): "
                   "fuzz targets build as corpus replays only")
  endif()
endif()

if(BREAKER_HAVE_LIBFUZZER)
  # The library and the tool again, with coverage feedback for libFuzzer.
  add_library(breaker_fuzzing STATIC EXCLUDE_FROM_ALL ${BREAKER_SOURCES})
  target_include_directories(breaker_fuzzing
    PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(breaker_fuzzing PRIVATE -fsanitize=fuzzer-no-link)
  target_link_libraries(breaker_fuzzing PUBLIC Threads::Threads m ${CMAKE_DL_LIBS})
  set(_fuzz_libs_fuzz_config_set breaker_fuzzing)
  set(_fuzz_libs_fuzz_api_sequence breaker_fuzzing)
  set(_fuzz_libs_fuzz_store_file breaker_fuzzing)
  set(_fuzz_libs_fuzz_fleet_reply breaker_fuzzing)

  if(BREAKER_BUILD_TOOLS)
    file(GLOB _fuzz_tool_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/cli/*.c
                                                   ${PROJECT_SOURCE_DIR}/tools/sim/*.c)
    add_library(breaker_tool_fuzzing STATIC EXCLUDE_FROM_ALL ${_fuzz_tool_sources})
    target_include_directories(breaker_tool_fuzzing PUBLIC ${PROJECT_SOURCE_DIR}/tools
                                                    PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(breaker_tool_fuzzing PRIVATE _GNU_SOURCE)
    target_compile_options(breaker_tool_fuzzing PRIVATE -fsanitize=fuzzer-no-link)
    target_link_libraries(breaker_tool_fuzzing PUBLIC breaker_fuzzing m)
    set(_fuzz_libs_fuzz_replay_trace breaker_tool_fuzzing)
    set(_fuzz_libs_fuzz_tool_options breaker_tool_fuzzing)
  endif()

  foreach(t ${_fuzz_targets})
    add_executable(${t}_libfuzzer ${_fuzz_dir}/${t}.c)
    target_include_directories(${t}_libfuzzer PRIVATE ${_fuzz_dir})
    target_compile_options(${t}_libfuzzer PRIVATE -fsanitize=fuzzer)
    target_link_options(${t}_libfuzzer PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${t}_libfuzzer PRIVATE ${_fuzz_libs_${t}})
  endforeach()
  # protocol.c, instrumented with the target.
  target_sources(fuzz_fleet_reply_libfuzzer
                 PRIVATE ${PROJECT_SOURCE_DIR}/src/store/redis/protocol.c)
  target_include_directories(fuzz_fleet_reply_libfuzzer PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
