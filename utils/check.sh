#!/usr/bin/env bash
# Sets up, builds and runs every test: the lit suite + GoogleTest units, then
# utils/sanitize.sh (runtime and kernel tests under ASan/UBSan, libFuzzer on
# the safetensors reader and the front end; NNCC_SANITIZE=0 leaves it out).
# The last line counts both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash utils/setup.sh
# NNCC_BUILD_LOCK=FILE: builds (here and in utils/sanitize.sh) take `flock`
# on FILE, for machines where several people build at once.
locked() { if [ -n "${NNCC_BUILD_LOCK:-}" ]; then flock "$NNCC_BUILD_LOCK" "$@"; else "$@"; fi; }
locked cmake -S . -B build -G Ninja
locked cmake --build build
log=$(mktemp)
status=0
suites=(build/test)
[ -f build/test/Unit/lit.site.cfg.py ] && suites+=(build/test/Unit)
/usr/lib/llvm-22/bin/lit -sv "${suites[@]}" 2>&1 | tee "$log" || status=$?
count() { awk -v pat="$1" '$0 ~ "^ *(" pat ") *: *[0-9]+" { sub(/^[^:]*: */, ""); s += $1 } END { print s + 0 }' "$log"; }
passed=$(count "Passed")
failed=$(count "Failed|Unresolved|Timed Out")
if [ "${NNCC_SANITIZE:-1}" != 0 ]; then
  slog=$(mktemp)
  bash utils/sanitize.sh 2>&1 | tee "$slog" || status=1
  # Its last line: `sanitize: N passed, M failed`; none means it broke off.
  counts=$(sed -n 's/^sanitize: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$slog" | tail -1)
  if [ -n "$counts" ]; then
    passed=$((passed + ${counts% *}))
    failed=$((failed + ${counts#* }))
  else
    failed=$((failed + 1))
    status=1
  fi
fi
# The failing tests again, last, where a truncated log still shows them.
grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ' "$log" || true
[ -n "${slog:-}" ] && { grep -E '^sanitize: FAIL' "$slog" || true; }
echo "${passed} passed, ${failed} failed"
exit $status
