#!/usr/bin/env bash
# Regenerate the ANTLR 4.13.2 Python3 parser in generator/grammar/ from P2Spec.g4.
#
# Usage: scripts/regen_parser.sh        (from any directory; safe to run repeatedly)
#
# Needs java and, the first time only, maven (to fetch the ANTLR "complete" jar into
# ~/.m2). Do not use Debian's antlr4 package: it is 4.7.2 and its output does not run on
# the 4.13.2 Python runtime that p2gen depends on. ANTLR_JAR=/path/to/jar overrides.
set -euo pipefail

ANTLR_VERSION=4.13.2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GRAMMAR_DIR="$ROOT/generator/grammar"
M2_REPO="${M2_REPO:-$HOME/.m2/repository}"
ANTLR_JAR="${ANTLR_JAR:-$M2_REPO/org/antlr/antlr4/$ANTLR_VERSION/antlr4-$ANTLR_VERSION-complete.jar}"

if [ ! -f "$ANTLR_JAR" ]; then
    command -v mvn >/dev/null 2>&1 || { echo "regen_parser: $ANTLR_JAR missing and mvn not found" >&2; exit 1; }
    echo "regen_parser: fetching org.antlr:antlr4:$ANTLR_VERSION:jar:complete" >&2
    mvn -q dependency:get -Dartifact="org.antlr:antlr4:$ANTLR_VERSION:jar:complete"
    [ -f "$ANTLR_JAR" ] || { echo "regen_parser: jar not found at $ANTLR_JAR after download" >&2; exit 1; }
fi
command -v java >/dev/null 2>&1 || { echo "regen_parser: java not found" >&2; exit 1; }

cd "$ROOT"
# Relative paths keep absolute build paths out of the generated file headers.
java -jar "$ANTLR_JAR" -Dlanguage=Python3 -visitor -no-listener \
    -o generator/grammar -Xexact-output-dir generator/grammar/P2Spec.g4

# The package marker must survive regeneration.
[ -f "$GRAMMAR_DIR/__init__.py" ] || : > "$GRAMMAR_DIR/__init__.py"
echo "regen_parser: generated $(cd "$GRAMMAR_DIR" && ls P2Spec*.py | tr '\n' ' ')" >&2
