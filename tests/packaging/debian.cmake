# SPDX-License-Identifier: MIT
# The Debian packages (debian/, tests/packaging/deb.sh; label "packaging"):
# dpkg-buildpackage -us -uc -b on a copy of the tree, lintian --fail-on
# error, the packages unpacked into a temporary root and consumed from it
# (pkg-config, find_package(breaker COMPONENTS curl pq), the tool). It builds
# the packages itself, whatever this build is, so it is registered once: in
# static builds (make check's ASan build), as packaging_consumers is. About
# 20 s on two cores. Needs dpkg-buildpackage, dh and lintian
# (scripts/deps/check/debian.txt); without them it says so and is skipped.
if(NOT BUILD_SHARED_LIBS)
  find_program(BREAKER_DPKG_BUILDPACKAGE dpkg-buildpackage)
  find_program(BREAKER_DH dh)
  find_program(BREAKER_LINTIAN lintian)
  if(BREAKER_DPKG_BUILDPACKAGE AND BREAKER_DH AND BREAKER_LINTIAN)
    add_test(NAME packaging_deb
      COMMAND bash ${PROJECT_SOURCE_DIR}/tests/packaging/deb.sh ${PROJECT_SOURCE_DIR})
    set_tests_properties(packaging_deb PROPERTIES TIMEOUT 600 LABELS packaging)
  else()
    message(STATUS "dpkg-buildpackage, dh or lintian not found (debhelper, lintian): "
                   "packaging_deb is not run")
  endif()
endif()
