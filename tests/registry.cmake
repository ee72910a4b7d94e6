# SPDX-License-Identifier: MIT
# The registry's own parts: the reclamation that makes its lock-free lookups
# safe against frees, tested apart from its public API (INTERNAL: it calls
# hidden functions; the stress case runs under TSan with the other
# "concurrency" tests), and the backend it makes and frees breakers through
# (breaker_registry_config.backend, with the experimental breaker/backend.h).
breaker_add_test(test_reclaim INTERNAL SOURCES test_reclaim.c LABELS concurrency TIMEOUT 300)
breaker_add_test(test_registry_store SOURCES test_registry_store.c TIMEOUT 60)
