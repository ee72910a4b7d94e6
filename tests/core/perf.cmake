# SPDX-License-Identifier: MIT
# Performance properties that are tests rather than benchmarks.
# test_no_alloc: a million acquire/complete pairs in every state make no heap
# allocation. It counts by interposing malloc in normal builds and through the
# sanitizer's allocator hooks under ASan/TSan (see the file's header).
breaker_add_test(test_no_alloc SOURCES core/test_no_alloc.c LABELS perf TIMEOUT 300)
# Exit code 77: the allocations cannot be counted here (under valgrind, which
# replaces malloc everywhere; on a C library other than glibc without a
# sanitizer). ctest then reports the test as skipped, not passed.
if(TEST test_no_alloc)
  set_tests_properties(test_no_alloc PROPERTIES SKIP_RETURN_CODE 77)
endif()
