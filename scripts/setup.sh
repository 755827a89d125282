#!/usr/bin/env bash
# Install what a fresh machine lacks to build and test p2gen, then p2gen itself.
# Idempotent: re-running only checks. Debian packages need root (CI runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v ar >/dev/null 2>&1 || need_apt+=(binutils)
command -v make >/dev/null 2>&1 || need_apt+=(make)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_apt[@]}"
    else
        echo "setup: please install: ${need_apt[*]} (needs root)" >&2
        exit 1
    fi
fi

PY=${PYTHON:-python3}
# A regular (non-editable) install would also do; editable keeps a checkout's edits live.
"$PY" -m pip install -q --disable-pip-version-check -e ".[test]"
