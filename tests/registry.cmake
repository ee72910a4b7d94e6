# SPDX-License-Identifier: MIT
# The registry's own parts, tested apart from its public API (INTERNAL: they
# call hidden functions): the reclamation that makes its lock-free lookups
# safe against frees (the stress case runs under TSan with the other
# "concurrency" tests), and the store it makes and frees breakers through.
breaker_add_test(test_reclaim INTERNAL SOURCES test_reclaim.c LABELS concurrency TIMEOUT 300)
breaker_add_test(test_registry_store INTERNAL SOURCES test_registry_store.c TIMEOUT 60)
