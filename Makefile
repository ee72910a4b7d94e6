# SPDX-License-Identifier: MIT
# Thin wrapper over CMake for the project's commands (see README).
#   make demo    build and run the main demonstration
#   make check   install test dependencies, build with ASan+UBSan, run every
#                test, then run the concurrency tests under ThreadSanitizer,
#                then every test again against the shared library
#   make bench   build optimised and run the benchmarks
#   make deb     build the Debian packages, lintian them, build programs
#                against them (build/deb)
#   make check-arm64  cross-build for arm64; the core, store-file and registry
#                tests under qemu-aarch64, the per-CPU stripes' tests in an
#                emulated arm64 machine with rseq (scripts/check-arm64.sh)
#   make check-musl   a static musl build of the library and the breaker
#                tool; the core, store-file and registry tests against it
#                (scripts/check-musl.sh)
#   make check-generic  the portable path of other CPUs, tested on this one
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake
CTEST ?= ctest
# The optimised build that demo, bench and valgrind use, and extra CMake
# options for it (scripts/optional-deps.sh builds elsewhere, with -Werror).
BUILD ?= build/release
CMAKE_FLAGS ?=

.PHONY: all deps deps-build deps-check deps-tls deps-valgrind deps-bench build demo check check-asan check-tsan check-valkey \
  check-shared check-arm64 check-musl check-generic bench valgrind deb format clean

all: build

# Each target installs only what it needs (scripts/install-deps.sh and
# scripts/deps/<group>/): the demo needs no Prometheus server and no valgrind.
deps:
	./scripts/install-deps.sh

deps-build:
	./scripts/install-deps.sh build

deps-check:
	./scripts/install-deps.sh check

deps-valgrind:
	./scripts/install-deps.sh check valgrind

deps-bench:
	./scripts/install-deps.sh valgrind

build:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	$(CMAKE) --build $(BUILD) -j $(JOBS)

demo: deps-build build
	./scripts/demo.sh $(BUILD)

check: deps-check deps-tls check-asan check-tsan check-shared

# The fleet store's TLS tests need a hiredis with TLS (hiredis_ssl, 1.0 or
# later); Debian 12's has none. tests/support/hiredis_tls.sh builds one from
# Debian 13's source package into build/hiredis-tls, for those tests only
# (a second build of breaker_redis links it; the library and the tools keep
# the system's). When it cannot (no network), test_fleet_tls is reported as
# skipped, saying why, and nothing else changes.
HIREDIS_TLS = $(CURDIR)/build/hiredis-tls
deps-tls:
	-./tests/support/hiredis_tls.sh $(HIREDIS_TLS)

check-asan:
	$(CMAKE) -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DBREAKER_WERROR=ON \
	  -DBREAKER_SANITIZER=address,undefined -DBREAKER_TEST_HIREDIS_TLS=$(HIREDIS_TLS)/prefix
	$(CMAKE) --build build/asan -j $(JOBS)
	cd build/asan && $(CTEST) --output-on-failure -j $(JOBS)

check-tsan:
	$(CMAKE) -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREAKER_WERROR=ON \
	  -DBREAKER_SANITIZER=thread -DBREAKER_TEST_HIREDIS_TLS=$(HIREDIS_TLS)/prefix
	$(CMAKE) --build build/tsan -j $(JOBS)
	cd build/tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  $(CTEST) --output-on-failure -L concurrency -j $(JOBS)

# The fleet store's tests against Valkey instead of Redis (not in check: a
# Valkey build takes minutes): tests/support/valkey_server.sh builds Debian
# 13's valkey-server into build/valkey, and the tests of build/asan that
# start a server ("external") start it ($BREAKER_TEST_REDIS_SERVER).
check-valkey: deps-check deps-tls
	$(CMAKE) -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DBREAKER_WERROR=ON \
	  -DBREAKER_SANITIZER=address,undefined -DBREAKER_TEST_HIREDIS_TLS=$(HIREDIS_TLS)/prefix
	$(CMAKE) --build build/asan -j $(JOBS)
	valkey=$$(./tests/support/valkey_server.sh $(CURDIR)/build/valkey) && \
	  cd build/asan && BREAKER_TEST_REDIS_SERVER=$$valkey $(CTEST) --output-on-failure \
	  -L external -j $(JOBS)

# The library as a shared object (-DBUILD_SHARED_LIBS=ON): the tests, tools
# and examples link it as users of libbreaker.so do.
check-shared:
	$(CMAKE) -S . -B build/shared -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREAKER_WERROR=ON \
	  -DBUILD_SHARED_LIBS=ON -DBREAKER_TEST_HIREDIS_TLS=$(HIREDIS_TLS)/prefix
	$(CMAKE) --build build/shared -j $(JOBS)
	cd build/shared && $(CTEST) --output-on-failure -j $(JOBS)

# Other platforms (README, "Platforms"): each script installs what it needs.
check-arm64:
	JOBS=$(JOBS) ./scripts/check-arm64.sh build/arm64

check-musl:
	JOBS=$(JOBS) ./scripts/check-musl.sh build/musl

# The portable path other CPUs take (src/core/arch/generic/), built and
# tested on this one: the core, store-file and registry tests.
check-generic: deps-check
	$(CMAKE) -S . -B build/generic -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREAKER_WERROR=ON \
	  -DBREAKER_ARCH=generic
	$(CMAKE) --build build/generic -j $(JOBS)
	cd build/generic && $(CTEST) --output-on-failure -j $(JOBS) -L 'area:(core|store|registry)$$'

bench: deps-bench build
	./scripts/bench.sh $(BUILD)

# The unit tests under valgrind memcheck (slow; not part of check). Not the
# "cli" and "packaging" cases: they run a shell or Python script (a test
# run by one is labelled cli), and memcheck would check the interpreter (it
# does not follow the programs the script starts; bash leaks by design).
# BREAKER_SIM_SEEDS=3 there: the fleet's simulation runs 3 seeds (its
# million rounds are the optimised build's, in check) and test_simulate's
# hanging caller 3 past its own (20 in check).
valgrind: deps-valgrind build
	cd $(BUILD) && BREAKER_SIM_SEEDS=3 $(CTEST) --output-on-failure -LE "concurrency|cli|packaging|external" \
	  -T memcheck --overwrite MemoryCheckCommand=/usr/bin/valgrind \
	  --overwrite MemoryCheckCommandOptions="--error-exitcode=1 --leak-check=full"

# The Debian packages (debian/): built with dpkg-buildpackage, checked by
# lintian, unpacked into a temporary root and consumed from it, shared and
# static (tests/packaging/deb.sh); the .deb files stay in build/deb. Not part
# of check (minutes: two builds); its symbols test is (packaging_symbols).
deb: deps-check
	bash tests/packaging/deb.sh . build/deb

format:
	git ls-files '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf build
