# SPDX-License-Identifier: MIT
# Correctness of the fast code: the breaker against a simple
# reference model on long random sequences, and a multi-threaded stress test
# whose invariants ThreadSanitizer also checks (label "concurrency").
breaker_add_test(test_differential
  SOURCES core/test_differential.c support/reference_model.c
  TIMEOUT 300)
breaker_add_test(test_stress
  SOURCES core/test_stress.c support/reference_model.c
  LABELS concurrency
  TIMEOUT 300)
if(TARGET test_stress)
  add_test(NAME test_stress_thread_owned COMMAND test_stress)
  set_tests_properties(test_stress_thread_owned PROPERTIES TIMEOUT 300 LABELS concurrency
                       ENVIRONMENT BREAKER_CPU_STRIPES=0)
endif()
