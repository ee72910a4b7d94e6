# SPDX-License-Identifier: MIT
# Observability: the Prometheus and JSON exports, the alerting rules and the
# Grafana dashboard (the registry itself is in registry/). The export tests
# validate their output with real consumers: promtool (Debian package
# prometheus, in scripts/deps/check/observability.txt) and the jansson JSON
# parser (libjansson-dev, in scripts/deps/build/observability.txt). When one
# is missing the build still works
# and the test that needs it fails saying what to install: a validation that
# silently does not run would prove nothing.
# A store's breakers under the same metric table (breaker status --prometheus).
breaker_add_test(test_export_store SOURCES export/test_export_store.c TIMEOUT 30)

# (Both export tests are cmocka programs: without cmocka neither is built,
# and a missing validator is not reported either.)
find_program(BREAKER_PROMTOOL promtool)
if(BREAKER_PROMTOOL)
  breaker_add_test(test_export_prometheus SOURCES export/test_export_prometheus.c TIMEOUT 60
    DEFINITIONS BREAKER_PROMTOOL="${BREAKER_PROMTOOL}")
elseif(BREAKER_HAVE_CMOCKA)
  breaker_missing_dependency_test(test_export_prometheus "promtool (Debian package prometheus)")
endif()

if(PKG_CONFIG_FOUND)
  pkg_check_modules(JANSSON IMPORTED_TARGET jansson)
endif()
if(JANSSON_FOUND)
  breaker_add_test(test_export_json INTERNAL SOURCES export/test_export_json.c LIBS PkgConfig::JANSSON
    TIMEOUT 60)
elseif(BREAKER_HAVE_CMOCKA)
  breaker_missing_dependency_test(test_export_json "jansson (libjansson-dev)")
endif()

# The alerting and recording rules in contrib/prometheus: promtool checks
# their syntax and runs their unit tests (breaker.rules.test.yml), from that
# directory so the test file finds the rules by a relative path.
set(_breaker_rules_dir ${PROJECT_SOURCE_DIR}/contrib/prometheus)
if(BREAKER_PROMTOOL)
  add_test(NAME test_ops_rules_check
    COMMAND ${BREAKER_PROMTOOL} check rules ${_breaker_rules_dir}/breaker.rules.yml)
  add_test(NAME test_ops_rules
    COMMAND ${BREAKER_PROMTOOL} test rules breaker.rules.test.yml
    WORKING_DIRECTORY ${_breaker_rules_dir})
  # They run promtool only (no library code): "external" keeps them out of
  # make valgrind, which would check promtool itself.
  set_tests_properties(test_ops_rules_check test_ops_rules PROPERTIES TIMEOUT 60
    LABELS external)
else()
  breaker_missing_dependency_test(test_ops_rules "promtool (Debian package prometheus)")
endif()

# The Grafana dashboard (contrib/grafana/breaker.json) parses as JSON and
# names only metrics the library exports (as test_ops_metric_sample prints
# them) or the rules record; the rules' expressions are held to the same.
add_executable(test_ops_metric_sample export/test_ops_metric_sample.c)
target_link_libraries(test_ops_metric_sample PRIVATE breaker::breaker)
# With the fleet store, the sample prints its families too (the fleet alerts
# and panels name them).
if(TARGET breaker_redis)
  target_link_libraries(test_ops_metric_sample PRIVATE breaker_redis)
  target_compile_definitions(test_ops_metric_sample PRIVATE BREAKER_OPS_SAMPLE_FLEET=1)
endif()
find_program(BREAKER_OPS_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(BREAKER_OPS_PYTHON3 NAMES python3)
if(BREAKER_OPS_PYTHON3)
  add_test(NAME test_ops_dashboard
    COMMAND ${BREAKER_OPS_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_ops_dashboard.py
            $<TARGET_FILE:test_ops_metric_sample>
            ${PROJECT_SOURCE_DIR}/contrib/grafana/breaker.json
            ${PROJECT_SOURCE_DIR}/contrib/prometheus/breaker.rules.yml)
  set_tests_properties(test_ops_dashboard PROPERTIES TIMEOUT 60)
else()
  breaker_missing_dependency_test(test_ops_dashboard "python3")
endif()
