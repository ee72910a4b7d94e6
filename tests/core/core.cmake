# SPDX-License-Identifier: MIT
# The core (src/core/, include/breaker.h): configuration, the state machine,
# windows, permits, manual control, events and statistics, classification,
# the block and its seams, the clock, jitter, ramps, failing sources,
# latency, per-CPU stripes and the concurrency claims. The differential and
# stress tests are in correctness.cmake, the zero-allocation test in
# perf.cmake (this folder too).
breaker_add_test(test_config SOURCES core/test_config.c)
breaker_add_test(test_closed SOURCES core/test_closed.c)
breaker_add_test(test_windows SOURCES core/test_windows.c)
breaker_add_test(test_recovery SOURCES core/test_recovery.c)
breaker_add_test(test_permits SOURCES core/test_permits.c)
breaker_add_test(test_manual SOURCES core/test_manual.c)
breaker_add_test(test_operate SOURCES core/test_operate.c)
breaker_add_test(test_control_text SOURCES core/test_control_text.c)
breaker_add_test(test_control_text_concurrency SOURCES core/test_control_text_concurrency.c
                 LABELS concurrency TIMEOUT 120)
breaker_add_test(test_operate_concurrency SOURCES core/test_operate_concurrency.c LABELS concurrency
                 TIMEOUT 120)
breaker_add_test(test_events_stats SOURCES core/test_events_stats.c)
breaker_add_test(test_classify SOURCES core/test_classify.c)
breaker_add_test(test_classify_sockets SOURCES core/test_classify_sockets.c TIMEOUT 60)
breaker_add_test(test_seams INTERNAL SOURCES core/test_seams.c)
breaker_add_test(test_block INTERNAL SOURCES core/test_block.c)
breaker_add_test(test_clock_promises SOURCES core/test_clock_promises.c TIMEOUT 60)
breaker_add_test(test_fork_jitter SOURCES core/test_fork_jitter.c)
breaker_add_test(test_ramp SOURCES core/test_ramp.c)
breaker_add_test(test_sources INTERNAL SOURCES core/test_sources.c)
breaker_add_test(test_turns_review SOURCES core/test_turns_review.c)
breaker_add_test(test_latency SOURCES core/test_latency.c)
breaker_add_test(test_cpu_stripes INTERNAL SOURCES core/test_cpu_stripes.c LABELS concurrency
                 TIMEOUT 300)
# The same, and the stress test, with per-CPU stripes switched off: the
# thread-owned scheme is what valgrind, old kernels and other architectures get.
if(TARGET test_cpu_stripes)
  add_test(NAME test_cpu_stripes_off COMMAND test_cpu_stripes)
  set_tests_properties(test_cpu_stripes_off PROPERTIES TIMEOUT 300 LABELS concurrency
                       ENVIRONMENT BREAKER_CPU_STRIPES=0)
endif()
breaker_add_test(test_concurrency SOURCES core/test_concurrency.c LABELS concurrency TIMEOUT 300)
# Configuration as text (src/core/config_text.c), which the `breaker` command reads.
breaker_add_test(test_config_text SOURCES core/test_config_text.c TIMEOUT 30)
