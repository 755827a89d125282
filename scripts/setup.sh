#!/usr/bin/env bash
# Install what a fresh machine lacks to build, test and benchmark p2gen, then p2gen itself.
# Idempotent: re-running only checks. Debian packages need root (CI runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."

# C/C++ toolchain; Google Benchmark, SQLite, LMDB and Boost (MultiIndex, Interprocess:
# header-only) for the benchmark drivers in bench/
packages=(gcc g++ make binutils libbenchmark-dev libsqlite3-dev liblmdb-dev libboost-dev nbdkit libnbd-dev redis-server libhiredis-dev nfs-ganesha nfs-ganesha-vfs libnfs-dev rpcbind)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
    else
        echo "setup: please install (as root): apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

PY=${PYTHON:-python3}
# A regular (non-editable) install would also do; editable keeps a checkout's edits live.
"$PY" -m pip install -q --disable-pip-version-check -e ".[test,bench]"
