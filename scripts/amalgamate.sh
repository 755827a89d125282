#!/usr/bin/env bash
# Rebuild runtime/p2_runtime.c (what users get) from its parts in runtime/src/, and the
# list of the names p2_runtime.h defines (generator/c_runtime.txt, read by the names pass)
# from what the compiler makes of the header.
set -euo pipefail
cd "$(dirname "$0")/.."
"${PYTHON:-python3}" -m p2gen.toolchain amalgamate
exec "${PYTHON:-python3}" -m p2gen.cnames --runtime
