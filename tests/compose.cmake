# Composition (issue 5): retries, retry budget, bulkhead, deadlines,
# fallbacks, the executor, and an end-to-end test with real HTTP.
breaker_add_test(test_executor SOURCES test_executor.c TIMEOUT 60)
breaker_add_test(test_retry SOURCES test_retry.c TIMEOUT 60)
breaker_add_test(test_bulkhead SOURCES test_bulkhead.c LABELS concurrency TIMEOUT 120)
breaker_add_test(test_fallback SOURCES test_fallback.c TIMEOUT 60)
