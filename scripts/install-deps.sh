#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages a make target needs, and no more.
# Usage: scripts/install-deps.sh [GROUP...]    (no GROUP: every group)
# Groups are the directories of scripts/deps/, each holding one file per area
# of the project (scripts/deps/<group>/<area>.txt: packages separated by
# blanks or lines, '#' comments):
#   build     compiling everything: the library, tests, tools and examples
#             (make build, make demo); always included
#   check     what the tests run besides the build: promtool, python3,
#             curl, xmllint, clang++ (make check)
#   valgrind  valgrind (make valgrind, make bench)
#   arm64     the cross compiler, arm64 test libraries and qemu (make check-arm64)
#   musl      musl-gcc (make check-musl)
# Only missing packages are installed, so a prepared machine does not touch
# the network.
set -euo pipefail
cd "$(dirname "$0")/.."

groups=(build)
if [ $# -eq 0 ]; then
  for d in scripts/deps/*/; do groups+=("$(basename "$d")"); done
else
  groups+=("$@")
fi
files=()
for g in "${groups[@]}"; do
  if [ ! -d "scripts/deps/$g" ]; then
    echo "install-deps: no group '$g' (groups: $(cd scripts/deps && echo */ | tr -d /))" >&2
    exit 2
  fi
  files+=("scripts/deps/$g"/*.txt)
done
# Files directly in scripts/deps/ belong to every group.
for f in scripts/deps/*.txt; do
  if [ -e "$f" ]; then files+=("$f"); fi
done

mapfile -t wanted < <(cat "${files[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d' | sort -u)
label=$(printf '%s\n' "${groups[@]}" | sort -u | tr '\n' ' ')
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: ${label}: all ${#wanted[@]} packages present"
  exit 0
fi
echo "install-deps: ${label}: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# A package named NAME:ARCH (another architecture's, multiarch) needs that
# architecture added to dpkg before the update.
for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
  dpkg --print-foreign-architectures | grep -qx "$arch" || $SUDO dpkg --add-architecture "$arch"
done
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

# Debian has no package with promtool alone: the prometheus package brings
# it, and on a systemd host its install enables and starts a Prometheus
# server (listening on :9090, scraping, writing a database). The tests need
# only the binary, so when this script installed the package it stops and
# disables that server. Without systemd as PID 1 nothing was started. A
# prometheus that was installed before is left alone.
for pkg in "${missing[@]}"; do
  if [ "$pkg" = prometheus ] && command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    echo "install-deps: stopping and disabling the prometheus service (only promtool is needed)"
    $SUDO systemctl disable --now prometheus.service || true
  fi
done
