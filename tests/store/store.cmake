# SPDX-License-Identifier: MIT
# The store file (src/store/file/, include/breaker/store.h): processes that
# share a breaker, its moves, its registry, crashes at every point, shared
# stripes; and the store contract (support/store_contract.h) for the heap and
# the file (the fleet store's runs are in fleet/).
breaker_add_test(test_file_store SOURCES store/test_file_store.c TIMEOUT 120)
breaker_add_test(test_operate_store INTERNAL SOURCES store/test_operate_store.c TIMEOUT 60)
breaker_add_test(test_store_moves SOURCES store/test_store_moves.c LABELS concurrency TIMEOUT 120)
breaker_add_test(test_store_registry SOURCES store/test_store_registry.c TIMEOUT 60)
# 8-77 s under CPU hogs on both cores, past 120 s on one core (taskset -c 0):
# the work of 400 killed openers, not a wait.
breaker_add_test(test_store_crash SOURCES store/test_store_crash.c LABELS concurrency TIMEOUT 300)
# The last operator control's record: across processes, damaged by hand, and
# two writers racing a reader (a few seconds under ASan).
breaker_add_test(test_store_control SOURCES store/test_store_control.c LABELS store concurrency
                 TIMEOUT 120)
breaker_add_test(test_window_recycle INTERNAL SOURCES store/test_window_recycle.c)
breaker_add_test(test_crash_points INTERNAL SOURCES store/test_crash_points.c)
breaker_add_test(test_store_stripes INTERNAL SOURCES store/test_store_stripes.c LABELS concurrency
                 TIMEOUT 120)
# The store contract (support/store_contract.h), once per store.
breaker_add_test(test_contract_heap SOURCES store/test_contract_heap.c support/store_contract.c)
breaker_add_test(test_contract_file SOURCES store/test_contract_file.c support/store_contract.c)
# No store call waits for the file's lock past lock_wait_ns: a stopped holder,
# flock(1) (util-linux), two threads; real time, about 2 s.
breaker_add_test(test_store_bounded_waits SOURCES store/test_store_bounded_waits.c LABELS store concurrency
                 TIMEOUT 120)
