#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# debian_source.sh PACKAGE DIR - the upstream tarball of PACKAGE's source in
# Debian 13 (trixie), for a test dependency newer than Debian 12 ships
# (hiredis_tls.sh, valkey_server.sh). Fetched with apt-get through a private
# apt state in DIR/apt: the system's sources and lists are untouched, the
# Sources index is verified against Debian's archive keyring like any apt
# download and the files against its checksums. Prints the tarball's path
# on standard output; exit 1 (saying why on standard error) when it could
# not be fetched.
set -euo pipefail

pkg=${1:?usage: debian_source.sh PACKAGE DIR}
dir=${2:?usage: debian_source.sh PACKAGE DIR}
mkdir -p "$dir"
apt_dir=$(cd "$dir" && pwd)/apt
for tool in apt-get tar; do
  if ! command -v "$tool" > /dev/null; then
    echo "debian_source: $tool not found" >&2
    exit 1
  fi
done
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/src/$pkg"
echo 'deb-src http://deb.debian.org/debian trixie main' > "$apt_dir/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=$(id -un)"
  -qq
)
# The index every time: the archive drops the files an old one names.
if ! apt-get "${apt_opts[@]}" update > /dev/null; then
  echo "debian_source: apt-get update of Debian trixie's sources failed (no network?)" >&2
  exit 1
fi
# Only the upstream tarball is used: a mirror that lacks the packaging
# files of the revision its index names (a point release under way) fails
# apt-get source after the tarball, checked, is already here.
(cd "$apt_dir/src/$pkg" && apt-get "${apt_opts[@]}" source --download-only "$pkg" > /dev/null 2>&1) ||
  true
orig=$(ls "$apt_dir/src/$pkg/${pkg}_"*.orig.tar.* 2> /dev/null | head -n 1)
if [ -z "$orig" ]; then
  echo "debian_source: apt-get source $pkg (trixie) fetched no upstream tarball" >&2
  exit 1
fi
echo "$orig"
