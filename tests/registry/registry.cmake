# SPDX-License-Identifier: MIT
# Named breakers (include/breaker/registry.h): the registry, its events,
# history and flapping, from many threads.
breaker_add_test(test_registry SOURCES registry/test_registry.c TIMEOUT 60)
breaker_add_test(test_registry_concurrency
  SOURCES registry/test_registry_concurrency.c
  LABELS concurrency
  TIMEOUT 120)
# The registry's own parts: the reclamation that makes its lock-free lookups
# safe against frees, tested apart from its public API (INTERNAL: it calls
# hidden functions; the stress case runs under TSan with the other
# "concurrency" tests), and the backend it makes and frees breakers through
# (breaker_registry_config.backend, with the experimental breaker/backend.h).
breaker_add_test(test_reclaim INTERNAL SOURCES registry/test_reclaim.c LABELS concurrency TIMEOUT 300)
breaker_add_test(test_registry_store SOURCES registry/test_registry_store.c TIMEOUT 60)
