# Composition (issue 5): retries, retry budget, bulkhead, deadlines,
# fallbacks, the executor, and an end-to-end test with real HTTP.
breaker_add_test(test_executor SOURCES test_executor.c TIMEOUT 60)
