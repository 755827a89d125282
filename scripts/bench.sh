#!/usr/bin/env bash
# The main job: set up, then run the TPC-B head-to-head benchmark (every generated variant,
# hand-coded C, SQLite, LMDB) at the small default size. Extra arguments go to
# `p2gen bench tpcb`, e.g. --reference for the paper's scale (SF 2-12, 100,000 accounts
# per branch, 200,000 transactions).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec p2gen bench tpcb "$@"
