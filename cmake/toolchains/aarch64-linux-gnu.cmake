# SPDX-License-Identifier: MIT
# Cross-building for arm64 Linux with Debian's gcc-aarch64-linux-gnu, against
# the arm64 packages of the dependencies installed beside the host's
# (multiarch: libcmocka-dev:arm64 in /usr/lib/aarch64-linux-gnu). The tests
# run under qemu-aarch64 (user mode): ctest prefixes each test program with
# CMAKE_CROSSCOMPILING_EMULATOR. scripts/check-arm64.sh drives it
# (make check-arm64).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# The arm64 libraries are found in the host's root, in their multiarch
# directories; programs (the compiler's helpers) on the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config reads the arm64 .pc files only (not the host's x86-64 ones).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# The emulator finds the arm64 dynamic loader and libc in the host's root
# (/lib/ld-linux-aarch64.so.1, from libc6:arm64).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
