#!/usr/bin/env bash
# Rebuild runtime/p2_runtime.c (what users get) from its parts in runtime/src/.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" -m p2gen.toolchain amalgamate
