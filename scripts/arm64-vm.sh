#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The arm64 restartable sequences, run: a whole arm64 machine emulated by
# qemu-system-aarch64 (2 CPUs, software emulation), booting Debian's arm64
# Linux 6.12 (bookworm-backports: rseq with mm_cid needs 6.3 or later, and
# bookworm's own kernel is 6.1) straight into an initramfs that holds
# busybox, the arm64 C library and the test programs of BUILD_DIR
# (cross-built by scripts/check-arm64.sh). qemu user mode has no rseq at all,
# so this is where the arm64 per-CPU stripes run. The tests:
#   test_cpu_stripes   the per-CPU stripes, on (the_machine_decides_which_
#                      path_runs fails if they are not)
#   test_stress        the concurrency invariants, per-CPU stripes on
#   test_store_stripes processes sharing a store file's stripes (claims
#                      judged through /proc, which qemu user mode fakes)
#   test_store_moves   moves of a store file, with 300 forks during them
#                      (which qemu user mode makes 5 s each)
# The kernel and busybox packages are fetched with apt-get download into
# BUILD_DIR/vm (the kernel through a private sources list, so the machine's
# apt configuration is not changed) and reused by later runs.
# Usage: scripts/arm64-vm.sh [BUILD_DIR]   (default build/arm64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build/arm64}" && pwd)
vm=$build/vm
tests=(test_cpu_stripes test_stress test_store_stripes test_store_moves)
mkdir -p "$vm/apt/lists/partial" "$vm/debs"

# ---- The kernel, from bookworm-backports (arm64 only).
apt_bp=(-o Dir::Etc::SourceList="$vm/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State::Lists="$vm/apt/lists" -o APT::Architecture=arm64 -o APT::Architectures::=arm64)
if ! ls "$vm"/debs/linux-image-*-cloud-arm64*_arm64.deb >/dev/null 2>&1; then
  echo "deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "http://deb.debian.org/debian bookworm-backports main" >"$vm/apt/sources.list"
  apt-get "${apt_bp[@]}" update -qq
  # The meta-package names the current version's image package.
  image=$(apt-cache "${apt_bp[@]}" depends linux-image-cloud-arm64 |
    sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-arm64\(-unsigned\)\{0,1\}\)$/\1/p' | head -n1)
  if [ -z "$image" ]; then
    echo "arm64-vm: no linux-image-cloud-arm64 in bookworm-backports" >&2
    exit 1
  fi
  (cd "$vm/debs" && apt-get "${apt_bp[@]}" download "$image:arm64")
fi
if ! ls "$vm"/debs/busybox-static_*_arm64.deb >/dev/null 2>&1; then
  (cd "$vm/debs" && apt-get download busybox-static:arm64)
fi
rm -rf "$vm/kernel" "$vm/busybox" "$vm/root"
dpkg-deb -x "$(ls "$vm"/debs/linux-image-*-cloud-arm64*_arm64.deb | head -n1)" "$vm/kernel"
dpkg-deb -x "$(ls "$vm"/debs/busybox-static_*_arm64.deb | head -n1)" "$vm/busybox"
kernel=$(ls "$vm"/kernel/boot/vmlinuz-* | head -n1)

# ---- The initramfs: busybox, the dynamic loader and the libraries the test
# programs need (from the arm64 packages installed for the cross build), the
# programs, and /init, which runs them and powers the machine off.
root=$vm/root
mkdir -p "$root/bin" "$root/lib/aarch64-linux-gnu" "$root/proc" "$root/sys" "$root/tmp" "$root/dev"
cp "$vm/busybox/bin/busybox" "$root/bin/busybox"
cp -L /lib/ld-linux-aarch64.so.1 "$root/lib/"
for lib in libc.so.6 libm.so.6 libcmocka.so.0; do
  cp -L "$(ls /lib/aarch64-linux-gnu/$lib /usr/lib/aarch64-linux-gnu/$lib 2>/dev/null | head -n1)" \
    "$root/lib/aarch64-linux-gnu/"
done
for t in "${tests[@]}"; do cp "$build/tests/$t" "$root/bin/"; done
{
  echo '#!/bin/busybox sh'
  echo '/bin/busybox mount -t proc proc /proc'
  echo '/bin/busybox mount -t sysfs sys /sys'
  echo '/bin/busybox mount -t tmpfs tmp /tmp'
  echo '/bin/busybox mount -t devtmpfs dev /dev'
  echo 'echo "arm64-vm: Linux $(/bin/busybox uname -r), $(/bin/busybox nproc) CPUs"'
  echo 'export TMPDIR=/tmp'
  for t in "${tests[@]}"; do
    echo "/bin/$t; echo \"arm64-vm: $t exit \$?\""
  done
  echo '/bin/busybox poweroff -f'
} >"$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 >"$vm/initrd.gz")

# ---- Boot. No network, no disk; the console is the log. About 9 minutes on
# two loaded cores (test_cpu_stripes 7); the timeout only stops a hung
# machine. (test_store_crash, which user mode cannot run either, took 15
# minutes here: it is not run on arm64; x86-64 runs it with glibc and musl.)
log=$vm/console.log
start=$(date +%s)
timeout 1800 qemu-system-aarch64 -M virt -cpu max -smp 2 -m 1024 -accel tcg,thread=multi \
  -nographic -no-reboot -nic none -kernel "$kernel" -initrd "$vm/initrd.gz" \
  -append "console=ttyAMA0 rdinit=/init quiet panic=-1" </dev/null | tee "$log" || true
passed=0
failed=0
for t in "${tests[@]}"; do
  if grep -q "^arm64-vm: $t exit 0" "$log"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "arm64-vm: $(($(date +%s) - start)) s"
echo "arm64-vm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
