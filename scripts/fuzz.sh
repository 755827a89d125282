#!/usr/bin/env bash
# Soak the spec front end (parser, checker, planner, renderer) with fuzzed specs.
#
#   bash scripts/fuzz.sh [SECONDS]        # default 300; `bash scripts/fuzz.sh 600` = 10 minutes
#
# The test suite runs tests/compiler/test_fuzz_frontend.py with a small, fixed budget (~35 s, the
# same inputs every run). This script spends SECONDS on more:
#   - rounds of tests/compiler/test_fuzz_frontend.py with P2GEN_FUZZ_EXAMPLES examples per test
#     (default 1000) and a fresh --hypothesis-seed per round, until the time is up (a round
#     starts only if the previous one would still fit, but the first always runs);
#   - if atheris is installed (pip install atheris), half of the time goes to the
#     libFuzzer target scripts/fuzz_atheris.py, seeded with every example spec and the
#     dictionary tests/fuzz/p2spec.dict. Its corpus is kept in $P2GEN_FUZZ_DIR/corpus
#     (default .fuzz/, git-ignored by .fuzz/.gitignore) so later soaks start from it.
#
# A failure stops the script with a non-zero status: hypothesis prints the falsifying spec
# and the seed to repeat it (python -m pytest tests/compiler/test_fuzz_frontend.py
# --hypothesis-seed=N with P2GEN_FUZZ_EXAMPLES set); libFuzzer writes crash-* files into
# $P2GEN_FUZZ_DIR (replay: python scripts/fuzz_atheris.py $P2GEN_FUZZ_DIR/crash-...).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=${1:-300}
PY=${PYTHON:-python3}
EXAMPLES=${P2GEN_FUZZ_EXAMPLES:-1000}
DIR=${P2GEN_FUZZ_DIR:-.fuzz}
start=$(date +%s)
deadline=$((start + SECONDS_TOTAL))

if "$PY" -c "import atheris" 2>/dev/null; then
    atheris_secs=$((SECONDS_TOTAL / 2))
else
    atheris_secs=0
    echo "fuzz.sh: atheris not installed (pip install atheris); hypothesis only"
fi

if [ "$atheris_secs" -gt 0 ]; then
    mkdir -p "$DIR/corpus"
    [ -f "$DIR/.gitignore" ] || echo "*" > "$DIR/.gitignore"
    cp type_equations/*.p2 type_equations/*/*.p2 tests/specs/*.p2 tests/fuzz/seeds/*.p2 \
        "$DIR/corpus/"
    echo "fuzz.sh: atheris for ${atheris_secs}s (corpus $DIR/corpus)"
    root=$PWD
    (cd "$DIR" && "$PY" "$root/scripts/fuzz_atheris.py" -max_total_time="$atheris_secs" \
        -dict="$root/tests/fuzz/p2spec.dict" -print_final_stats=1 corpus)
fi

round=0
last=0
while :; do
    now=$(date +%s)
    left=$((deadline - now))
    # start a round only if the previous one would fit in what is left
    if [ "$round" -gt 0 ] && [ "$left" -lt "$last" ]; then break; fi
    if [ "$left" -le 0 ]; then break; fi
    round=$((round + 1))
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    echo "fuzz.sh: hypothesis round $round, $EXAMPLES examples per test, seed $seed (${left}s left)"
    P2GEN_FUZZ_EXAMPLES=$EXAMPLES "$PY" -m pytest -q -x -p no:cacheprovider \
        tests/compiler/test_fuzz_frontend.py --hypothesis-seed="$seed"
    last=$(($(date +%s) - now))
done
echo "fuzz.sh: done in $(($(date +%s) - start))s, $round hypothesis rounds, no failures"
