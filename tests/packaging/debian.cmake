# SPDX-License-Identifier: MIT
# The Debian packaging (debian/; label "packaging").
#
# packaging_symbols (shared builds: make check's check-shared): the symbols
# files list exactly what each built shared library exports
# (tests/packaging/symbols.sh), so a function added without its line fails
# here rather than as a warning of dpkg-gensymbols in `make deb`.
#
# The packages themselves are built and consumed by `make deb`
# (tests/packaging/deb.sh: dpkg-buildpackage, lintian, shared and static
# consumers from the unpacked packages), not by ctest: two builds of the
# project inside dpkg-buildpackage take minutes, and .ci/run runs it.
if(BUILD_SHARED_LIBS)
  set(_breaker_shared_libs $<TARGET_FILE:breaker>)
  foreach(_lib breaker_redis breaker_curl breaker_pq)
    if(TARGET ${_lib})
      list(APPEND _breaker_shared_libs $<TARGET_FILE:${_lib}>)
    endif()
  endforeach()
  add_test(NAME packaging_symbols
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/packaging/symbols.sh ${PROJECT_SOURCE_DIR}
            ${_breaker_shared_libs})
  set_tests_properties(packaging_symbols PROPERTIES TIMEOUT 60 LABELS packaging)
endif()
