#!/usr/bin/env bash
# Sets up, builds and runs every test (lit suite + GoogleTest units + front-end fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash utils/setup.sh
cmake -S . -B build -G Ninja
cmake --build build
log=$(mktemp)
status=0
suites=(build/test)
[ -f build/test/Unit/lit.site.cfg.py ] && suites+=(build/test/Unit)
/usr/lib/llvm-22/bin/lit -sv "${suites[@]}" 2>&1 | tee "$log" || status=$?
count() { awk -v pat="$1" '$0 ~ "^ *(" pat ") *: *[0-9]+" { sub(/^[^:]*: */, ""); s += $1 } END { print s + 0 }' "$log"; }
passed=$(count "Passed")
failed=$(count "Failed|Unresolved|Timed Out")
echo "${passed} passed, ${failed} failed"
exit $status
