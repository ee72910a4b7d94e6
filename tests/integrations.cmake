# SPDX-License-Identifier: MIT
# The integrations (src/integrations/, include/breaker/{grpc,sqlstate,curl,pq}.h).
# - test_grpc_status, test_sqlstate: the pure classifiers, no server.
# - test_pq: breaker_pq against a real PostgreSQL server that the test
#   initialises (initdb) in a temporary directory as an unprivileged user and
#   stops on every path (tests/pg_server.c). Needs libpq and the server's
#   binaries (Debian: libpq-dev, postgresql; scripts/deps/check/integrations.txt).
# - test_curl: breaker_curl against real local HTTP servers on 127.0.0.1
#   (tests/http_fault_server.c: healthy, 503 with Retry-After, silent, refused,
#   reset mid-body, slow body).
# Labels: "integrations"; the server tests also "external" (real servers and
# their timings: not under valgrind).
breaker_add_test(test_grpc_status SOURCES test_grpc_status.c LABELS integrations)
breaker_add_test(test_sqlstate SOURCES test_sqlstate.c LABELS integrations)

if(TARGET breaker_pq)
  breaker_add_test(test_pq SOURCES test_pq.c pg_server.c LIBS breaker_pq PkgConfig::BREAKER_DEP_PQ
                   TIMEOUT 180 LABELS "integrations;external")
endif()

if(TARGET breaker_curl)
  breaker_add_test(test_curl SOURCES test_curl.c http_fault_server.c
                   LIBS breaker_curl PkgConfig::BREAKER_DEP_CURL
                   TIMEOUT 120 LABELS "integrations;external")
endif()
