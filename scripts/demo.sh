#!/usr/bin/env bash
# The main job: set up, build every example spec, and run the C and Python demos.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=generated
for spec in type_equations/*.p2 type_equations/*/*.p2; do
    [ -f "$spec" ] || continue
    p2gen build -q "$spec" -o "$out/$(basename "$(dirname "$spec")")"
    echo "built $spec"
done
p2gen build type_equations/paper.p2 -o "$out" --python
cc -std=c11 -O2 -Wall -Wextra -Werror -I"$out" examples/paper_demo.c "$out/libpaper.a" -o "$out/paper_demo"
demo_dir=$(mktemp -d)
trap 'rm -rf "$demo_dir"' EXIT
echo "== C demo (run twice: the second run reopens the file) =="
"$out/paper_demo" "$demo_dir"
"$out/paper_demo" "$demo_dir"
echo "== Python demo =="
"${PYTHON:-python3}" examples/paper_demo.py "$out"
