#!/usr/bin/env bash
# The main job: set up, then run the TPC-B head-to-head benchmark (every generated variant,
# hand-coded C, SQLite, LMDB) at the small default size, then the OO7 benchmark (every
# variant of type_equations/oo7/, hand-written pointers, SQLite) on the small database at
# fanout 3. Extra arguments go to `p2gen bench tpcb`, e.g. --reference for the paper's
# scale (SF 2-12, 100,000 accounts per branch, 200,000 transactions); --reference also
# runs OO7 at its reference scale (the medium database, fanouts 3, 6, 9).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
oo7_args=()
for a in "$@"; do
    if [ "$a" = "--reference" ]; then oo7_args+=(--reference); fi
done
rc=0
p2gen bench tpcb "$@" || rc=$?
p2gen bench oo7 ${oo7_args[@]+"${oo7_args[@]}"} || rc=$?
exit $rc
