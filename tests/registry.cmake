# The registry's own primitives, tested apart from the registry: the
# reclamation that makes its lock-free lookups safe against frees. The stress
# case runs under TSan with the other "concurrency" tests.
breaker_add_test(test_reclaim SOURCES test_reclaim.c LABELS concurrency TIMEOUT 300)
