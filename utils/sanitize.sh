#!/usr/bin/env bash
# The runtime and kernel unit tests under AddressSanitizer + UBSan, then a
# bounded libFuzzer pass over the safetensors reader and the .nn front end
# (docs/runtime.md, "Sanitizers and fuzzing"). utils/check.sh runs it after
# the lit suite; it also runs on its own after utils/setup.sh:
#
#   bash utils/sanitize.sh            # 2 cores: about 4.5 min cold, 1.5 min warm
#
# 1. build-asan: the whole project configured with GCC and
#    -fsanitize=address,undefined -fno-sanitize-recover=all; only the runtime,
#    the kernels, the model support library and their GoogleTest binaries
#    (NNCCRuntimeTests, NNCCModelSupportTests, NNCCKernelMathTests) are built.
#    lit runs them with LeakSanitizer on, and test/Kernels's CPU tests (the
#    kernels against PyTorch, through ctypes) on the sanitized
#    libnncc_kernels.so; then the CUDA-path tests against the fake driver and
#    the reader's mutation tests at 200 000 iterations.
# 2. build-fuzz: test/Fuzz (a CMake project of its own) built with clang-22's
#    -fsanitize=fuzzer,address,undefined; each fuzzer runs a fixed number of
#    inputs (fixed seed, -max_len, -timeout, -rss_limit_mb) from a seed corpus
#    made here (test/Fuzz/safetensors_seeds.py; models/*.nn and the front-end
#    tests' .nn files) plus test/Fuzz/Inputs/<fuzzer>/ (past findings). Any
#    crash, sanitizer report, leak, timeout or out-of-memory fails the step;
#    the input is left in build-fuzz/findings/<fuzzer>/.
#
# The last line is `sanitize: N passed, M failed` (GoogleTest cases + one per
# fuzzer + one per build step); exit status 1 when M > 0. Both runs start
# from an empty corpus and a fixed seed, so they do about the same work
# every time (libFuzzer schedules by speed too: not byte for byte).
#
# Environment: NNCC_FUZZ_RUNS_SAFETENSORS / NNCC_FUZZ_RUNS_FRONTEND (inputs
# per fuzzer), NNCC_FUZZ_SEED, NNCC_FUZZ_CXX (a clang++ with libFuzzer),
# NNCC_ASAN_BUILD / NNCC_FUZZ_BUILD (build directories), NNCC_BUILD_LOCK (a
# file: the builds take `flock` on it, for machines where several people
# build at once).
set -euo pipefail
cd "$(dirname "$0")/.."

asan_dir=${NNCC_ASAN_BUILD:-build-asan}
fuzz_dir=${NNCC_FUZZ_BUILD:-build-fuzz}
runs_safetensors=${NNCC_FUZZ_RUNS_SAFETENSORS:-1000000}
runs_frontend=${NNCC_FUZZ_RUNS_FRONTEND:-30000}
fuzz_seed=${NNCC_FUZZ_SEED:-20261201}
lit=/usr/lib/llvm-22/bin/lit

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=0
failed=0
start=$SECONDS
note() { printf 'sanitize: %s (%d s)\n' "$*" $((SECONDS - start)); }
ok() { passed=$((passed + 1)); note "PASS $1"; }
ko() { failed=$((failed + 1)); note "FAIL $1"; }
locked() {
  if [ -n "${NNCC_BUILD_LOCK:-}" ]; then flock "$NNCC_BUILD_LOCK" "$@"; else "$@"; fi
}
finish() {
  note "done"
  echo "sanitize: ${passed} passed, ${failed} failed"
  if [ "$failed" -eq 0 ]; then exit 0; else exit 1; fi
}

# --- 1. unit tests under ASan + UBSan (GCC, the compiler of the main build)
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
mkdir -p "$asan_dir" "$fuzz_dir"
unit_targets=(NNCCRuntimeTests NNCCModelSupportTests NNCCKernelMathTests nncc_fake_cuda)
if locked cmake -S . -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
     -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
     -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
     -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
     -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
     -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined" \
     -DNNCC_KERNELS_OPT=-O1 -DNNCC_PRECOMPILED_HEADERS=OFF >"$asan_dir/configure.log" 2>&1 \
   && locked cmake --build "$asan_dir" --target "${unit_targets[@]}"; then
  ok "build $asan_dir (${unit_targets[*]})"
else
  [ -f "$asan_dir/configure.log" ] && tail -20 "$asan_dir/configure.log"
  ko "build $asan_dir"
  finish
fi

# test/Kernels's CPU tests (PyTorch parity of every kernel, through ctypes)
# against the sanitized libnncc_kernels.so: test/Fuzz/lit-kernels-asan.cfg.py.
asan_cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$asan_dir/CMakeCache.txt")
mkdir -p "$asan_dir/test-kernels"
cat >"$asan_dir/test-kernels/lit.site.cfg.py" <<EOF
config.nncc_src_root = "$PWD"
config.nncc_exec_root = "$PWD/$asan_dir/test-kernels"
config.nncc_lib = "$PWD/$asan_dir/lib"
config.asan_runtime = "$("$asan_cxx" -print-file-name=libasan.so)"
config.llvm_tools_dir = "/usr/lib/llvm-22/bin"
lit_config.load_config(config, "$PWD/test/Fuzz/lit-kernels-asan.cfg.py")
EOF

log="$asan_dir/unit-tests.log"
lit_status=0
"$lit" -sv "$asan_dir/test/Unit" "$asan_dir/test-kernels" >"$log" 2>&1 || lit_status=$?
# Failing cases with their sanitizer reports, then lit's summary.
grep -E '^(FAIL|UNRESOLVED|TIMEOUT):|ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY:' "$log" | head -40 || true
sed -n '/^Testing Time:/,$p' "$log"
count() { awk -v pat="$1" '$0 ~ "^ *(" pat ") *: *[0-9]+" { sub(/^[^:]*: */, ""); s += $1 } END { print s + 0 }' "$log"; }
unit_passed=$(count "Passed")
unit_failed=$(count "Failed|Unresolved|Timed Out")
if [ "$lit_status" -ne 0 ] && [ "$unit_failed" -eq 0 ]; then unit_failed=1; fi
if [ "$unit_passed" -eq 0 ]; then unit_failed=$((unit_failed + 1)); fi # nothing ran
passed=$((passed + unit_passed))
failed=$((failed + unit_failed))
note "unit and kernel tests under ASan/UBSan: ${unit_passed} passed, ${unit_failed} failed (log: $log)"

# Runs a GoogleTest binary directly (for what lit cannot set: the
# environment); every selected case must run and pass, none be skipped.
gtest() {
  local label=$1 glog="$asan_dir/$1.log" status=0 np nf ns
  shift
  env "$@" >"$glog" 2>&1 || status=$?
  np=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$glog" | tail -1)
  nf=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$glog" | tail -1)
  ns=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$glog" | tail -1)
  np=${np:-0} nf=${nf:-0} ns=${ns:-0}
  if [ "$status" -ne 0 ] && [ "$nf" -eq 0 ]; then nf=1; fi
  if [ "$np" -eq 0 ] || [ "$ns" -ne 0 ]; then nf=$((nf + 1)); fi
  if [ "$nf" -ne 0 ]; then
    grep -E -A12 'Failure$|ERROR: (Address|Leak)Sanitizer|runtime error:|SKIPPED' "$glog" | head -40 || true
  fi
  passed=$((passed + np))
  failed=$((failed + nf))
  note "$label: ${np} passed, ${nf} failed, ${ns} skipped (log: $glog)"
}
fake_cuda="$PWD/$asan_dir/lib/libnncc_fake_cuda.so"
# The CUDA paths against the fake driver (skipped in the lit run above, as in
# the main suite, where test/Runtime/cuda-fake-*.test run them).
gtest cuda-fake NNCC_CUDA_DRIVER="$fake_cuda" \
  "$asan_dir/test/Unit/NNCCRuntimeTests" --gtest_filter='CudaFake.*'
gtest cuda-fake-train NNCC_CUDA_DRIVER="$fake_cuda" \
  "$asan_dir/test/Unit/NNCCModelSupportTests" --gtest_filter='CudaFakeTrain*'
# The reader's mutation tests at 10x their default iterations.
gtest safetensors-mutations NNCC_FUZZ_ITERATIONS=200000 \
  "$asan_dir/test/Unit/NNCCRuntimeTests" --gtest_filter='SafetensorsFuzz.*'

# --- 2. fuzzing (clang + libFuzzer)
fuzz_cxx=${NNCC_FUZZ_CXX:-$(command -v clang++-22 || command -v clang++ || true)}
if [ -z "$fuzz_cxx" ]; then
  echo "sanitize: no clang++ for the fuzzers (bash utils/setup.sh installs clang-22)"
  ko "build $fuzz_dir"
  finish
fi
fuzz_cc=${fuzz_cxx/clang++/clang}
if locked cmake -S test/Fuzz -B "$fuzz_dir" -G Ninja -DCMAKE_C_COMPILER="$fuzz_cc" \
     -DCMAKE_CXX_COMPILER="$fuzz_cxx" >"$fuzz_dir/configure.log" 2>&1 \
   && locked cmake --build "$fuzz_dir"; then
  ok "build $fuzz_dir"
else
  [ -f "$fuzz_dir/configure.log" ] && tail -20 "$fuzz_dir/configure.log"
  ko "build $fuzz_dir"
  finish
fi

# Seed corpora, remade every time; the fuzzers add what they find to
# corpus/<name> (emptied first), never to the seeds.
rm -rf "$fuzz_dir/seeds" "$fuzz_dir/corpus" "$fuzz_dir/findings"
mkdir -p "$fuzz_dir/seeds/safetensors" "$fuzz_dir/seeds/frontend"
/usr/bin/python3 test/Fuzz/safetensors_seeds.py "$fuzz_dir/seeds/safetensors"
cp models/*.nn test/Frontend/*.nn test/Unit/Inputs/*.nn "$fuzz_dir/seeds/frontend/"
for name in safetensors frontend; do
  mkdir -p "$fuzz_dir/corpus/$name" "$fuzz_dir/findings/$name"
  if [ -d "test/Fuzz/Inputs/$name" ]; then cp "test/Fuzz/Inputs/$name"/* "$fuzz_dir/seeds/$name/"; fi
done

# fuzz NAME RUNS MAX_LEN: runs build-fuzz/nncc-fuzz-NAME in the background.
fuzz() {
  local name=$1 runs=$2 max_len=$3
  "$fuzz_dir/nncc-fuzz-$name" -runs="$runs" -seed="$fuzz_seed" -max_len="$max_len" \
    -timeout=20 -rss_limit_mb=3072 -dict="test/Fuzz/$name.dict" -print_final_stats=1 \
    -artifact_prefix="$fuzz_dir/findings/$name/" \
    "$fuzz_dir/corpus/$name" "$fuzz_dir/seeds/$name" >"$fuzz_dir/$name.log" 2>&1
}
# One fuzzer per core.
fuzz safetensors "$runs_safetensors" 4096 & pid_st=$!
fuzz frontend "$runs_frontend" 8192 & pid_fe=$!
for name in safetensors frontend; do
  status=0
  if [ "$name" = safetensors ]; then wait "$pid_st" || status=$?; else wait "$pid_fe" || status=$?; fi
  flog="$fuzz_dir/$name.log"
  artifacts=$(ls "$fuzz_dir/findings/$name")
  if [ "$status" -eq 0 ] && [ -z "$artifacts" ] && grep -q '^Done [0-9]* runs' "$flog"; then
    ok "fuzz $name: $(grep '^Done [0-9]* runs' "$flog"), $(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$flog" | tail -1)"
  else
    grep -E -A30 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzzer: ' "$flog" | head -60 || tail -30 "$flog"
    for a in $artifacts; do echo "sanitize: reproduce with $fuzz_dir/nncc-fuzz-$name $fuzz_dir/findings/$name/$a"; done
    ko "fuzz $name (exit $status; log: $flog)"
  fi
done

finish
