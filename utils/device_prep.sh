#!/usr/bin/env bash
# Prepares one folder for the GPU machine (no LLVM, no network there): every
# model compiled with gradients for both targets, the runtime and kernel
# libraries they link, OpenBLAS (xz), the parity harness, and run.sh, which
# on the GPU checks CPU against CUDA for each model's forward and training
# step and over a training loop with a resume (utils/device_train_check.py),
# bf16 libraries (--precision bf16) against f32 outputs, and runs compute-sanitizer (memcheck, racecheck, synccheck) over a
# training step of the models named in SANITIZE (default: bert_small,
# reformer_lsh, reversible_dilated_bert), nncc.torch on CUDA
# (utils/device_torch_check.py: CPU vs CUDA module, AdamW, one-rank NCCL DDP;
# test/Python/ddp_gru.py with NCCL), a deploy bundle's nncc-runner on CUDA
# and bench/gpu.py (nncc against PyTorch on the same GPU). It also prepares
# OUT/memtable, bench/memory_table.py's GPU table (issue 9's Table 1 on the
# GPU: --prepare-gpu, at the sequences MEMTABLE_SEQS, default 128: the seed
# configuration; each T costs about 4 minutes of compiling here) and OUT/memtable.sh, which runs
# it as a call of its own.
#
#   bash utils/device_prep.sh OUT [model ...]     # default: every models/*.nn
#   # then, with the tool library's device runner:
#   #   run(command="bash OUT/run.sh", carry=["OUT"])
#   #   run(command="bash OUT/memtable.sh", carry=["OUT"], timeout_s=540)
#
# OUT must be an ignored path of the repository (e.g. build-device) for the
# runner to carry it (64 MiB at most: the script prints the size).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: device_prep.sh OUT [model ...]}"
shift
NNCC="$ROOT/build/bin/nncc"
[ -x "$NNCC" ] || { echo "device_prep: build nncc first (cmake --build build)" >&2; exit 1; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "device_prep: nvcc not found (utils/setup.sh installs the CUDA toolkit)" >&2; exit 1; }
export PATH="$PATH:/usr/local/cuda/bin"

MODELS=("$@")
if [ ${#MODELS[@]} -eq 0 ]; then
  for f in "$ROOT"/models/*.nn; do MODELS+=("$(basename "$f" .nn)"); done
fi
rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/models" "$OUT/bin"

# The libraries the model libraries link (the CUDA ones exist there).
cp -L "$ROOT/build/lib/libnncc_kernels.so" "$ROOT/build/lib/libnncc_runtime.so.0" "$OUT/lib/"
for l in libgfortran.so.5 libquadmath.so.0 libgomp.so.1; do
  cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l { print $NF; exit }')" "$OUT/lib/"
done
xz -T2 -c "$(ldconfig -p | awk '$1 == "libopenblas.so.0" { print $NF; exit }')" \
  > "$OUT/lib/libopenblas.so.0.xz"

cc -std=c99 -O2 -I"$ROOT/runtime/include" "$ROOT/test/Target/Inputs/cuda_parity.c" \
  -L"$ROOT/build/lib" -lnncc_runtime -Wl,-rpath,'$ORIGIN/../lib' -ldl -lm \
  -o "$OUT/bin/cuda_parity"

for m in "${MODELS[@]}"; do
  echo "device_prep: $m" >&2
  "$NNCC" compile "$ROOT/models/$m.nn" --grad --target all -o "$OUT/models/$m" >/dev/null
  # Keep the library and the CUDA source (for reading errors there).
  find "$OUT/models/$m" -type f ! -name "lib$m.so" ! -name "$m.cu" -delete
  # Does this model train on CUDA? (the reason otherwise, from the library)
  reason=$(grep -A1 "_cuda_train_unsupported(void) {" "$OUT/models/$m/$m.cu" | tail -1 |
           sed -e 's/^ *return //' -e 's/;$//')
  echo "$m $reason" >> "$OUT/models/train-support.txt"
  xz -T2 "$OUT/models/$m/lib$m.so"
done

# Training loops (utils/device_train_check.py: STEPS train_step calls on
# CUDA against the CPU from the same weights, then a resume from a saved
# training state): one batch of inputs per model that trains on CUDA, at
# the parity shape.
mkdir -p "$OUT/train"
while read -r m reason; do
  [ "$reason" = NULL ] || continue
  case $m in
  deep_mlp | residual_mlp) dims="--dim N=16" ;;
  neural_ode) dims="--dim B=4" ;;
  *) dims="--dim B=3 --dim T=16" ;;
  esac
  "$NNCC" run "$ROOT/models/$m.nn" --random-inputs $dims --seed 0 --inputs-only \
    --save-inputs "$OUT/train/$m.in.st" >/dev/null
done < "$OUT/models/train-support.txt"

# The LSTM LM under the smallest memory budget at run.sh's parity shape
# (B 3, T 16): the binomial BPTT schedule (launch_rnn_backward_revolve),
# checked by the same parity loop as lstm_lm_min (REVOLVE=0 leaves it out).
if [ "${REVOLVE:-1}" != 0 ]; then
  echo "device_prep: lstm_lm_min (binomial BPTT)" >&2
  "$NNCC" compile "$ROOT/models/lstm_lm.nn" --grad --target all --memory-budget min \
    --dim B=3 --dim T=16 -o "$OUT/models/lstm_lm_min" >/dev/null
  grep -q launch_rnn_backward_revolve "$OUT/models/lstm_lm_min/lstm_lm.cu" ||
    { echo "device_prep: lstm_lm at --memory-budget min no longer picks the binomial schedule" >&2; exit 1; }
  mv "$OUT/models/lstm_lm_min/liblstm_lm.so" "$OUT/models/lstm_lm_min/liblstm_lm_min.so"
  find "$OUT/models/lstm_lm_min" -type f ! -name "liblstm_lm_min.so" ! -name "lstm_lm.cu" -delete
  echo "lstm_lm_min NULL" >> "$OUT/models/train-support.txt"
  xz -T2 "$OUT/models/lstm_lm_min/liblstm_lm_min.so"
fi

# The reversible dilated BERT with every block stored (a budget that holds
# them all, at run.sh's parity shape B 3, T 16): the forms nncc-remat builds
# with reversible blocks inlined before differentiation (docs/memory.md),
# checked by the same parity loop (STORED=0 leaves it out).
if [ "${STORED:-1}" != 0 ]; then
  echo "device_prep: reversible_dilated_bert_stored" >&2
  m=reversible_dilated_bert
  stored=$("$NNCC" inspect "$ROOT/models/$m.nn" --memory --grad --memory-budget 64GiB \
             --dim B=3 --dim T=16 | python3 -c \
             'import json, sys; print(json.load(sys.stdin)["remat"]["stored_reversible_blocks"])')
  [ "$stored" = 12 ] ||
    { echo "device_prep: $m under 64GiB stores $stored blocks, not 12" >&2; exit 1; }
  "$NNCC" compile "$ROOT/models/$m.nn" --grad --target all --memory-budget 64GiB \
    --dim B=3 --dim T=16 -o "$OUT/models/${m}_stored" >/dev/null
  mv "$OUT/models/${m}_stored/lib$m.so" "$OUT/models/${m}_stored/lib${m}_stored.so"
  find "$OUT/models/${m}_stored" -type f ! -name "lib${m}_stored.so" ! -name "$m.cu" -delete
  echo "${m}_stored NULL" >> "$OUT/models/train-support.txt"
  xz -T2 "$OUT/models/${m}_stored/lib${m}_stored.so"
fi

# nncc.torch on the GPU: the GRU forecaster with the VJP, for both targets.
mkdir -p "$OUT/torch"
"$NNCC" compile "$ROOT/models/gru_forecaster.nn" --grad --vjp --target all -o "$OUT/torch/build" >/dev/null
xz -T2 -c "$OUT/torch/build/libgru_forecaster.so" > "$OUT/torch/libgru_forecaster.so.xz"
rm -rf "$OUT/torch/build"

# A deploy bundle (nncc compile --bundle) of the GRU forecaster for both
# targets, with inputs and the CPU's outputs: run.sh runs its nncc-runner on
# CUDA with nothing from here but the bundle (xz, without the sources).
# BUNDLE=0 leaves it out (6 MB: it ran on an H200 on 2026-11-27, and with
# every other stage the folder plus the working tree outgrow the runner's
# 64 MiB).
if [ "${BUNDLE:-1}" != 0 ]; then
  "$NNCC" compile "$ROOT/models/gru_forecaster.nn" --target all --bundle -o "$OUT/bundle" >/dev/null
  "$NNCC" run "$ROOT/models/gru_forecaster.nn" --random-inputs --dim B=3 --dim T=5 --seed 0 \
    --save-inputs "$OUT/bundle/in.st" -o "$OUT/bundle/expected.st" --quiet
  tar cJf "$OUT/bundle.tar.xz" -C "$OUT" --exclude='*.cu.o' --exclude='*.cpp' --exclude='*.cu' bundle
  rm -rf "$OUT/bundle"
fi

# --precision bf16 on the GPU: each of BF16_MODELS as a bf16 CUDA library,
# with inputs and the f32 CPU library's outputs for the same seeded weights
# (computed here); run.sh runs nncc-runner on CUDA against them at bf16's
# tolerance (test/Target/cuda-emu-bf16.test does the same on the emulation).
mkdir -p "$OUT/bf16"
cp -L "$ROOT/build/bin/nncc-runner" "$OUT/bin/"
for m in ${BF16_MODELS:-bert_small reversible_dilated_bert reformer_lsh deep_mlp}; do
  dims="--dim B=2 --dim T=128"
  case $m in deep_mlp | residual_mlp) dims="--dim N=8" ;; esac
  "$NNCC" compile "$ROOT/models/$m.nn" --target cuda --precision bf16 -o "$OUT/bf16/$m" >/dev/null
  "$NNCC" compile "$ROOT/models/$m.nn" --target cpu -o "$OUT/bf16/$m.f32" >/dev/null
  "$NNCC" run "$ROOT/models/$m.nn" --random-inputs $dims --seed 0 --inputs-only \
    --save-inputs "$OUT/bf16/$m.in.st" >/dev/null
  "$ROOT/build/bin/nncc-runner" "$OUT/bf16/$m.f32/lib$m.so" --inputs "$OUT/bf16/$m.in.st" \
    --seed 1 -o "$OUT/bf16/$m.ref.st" >/dev/null
  find "$OUT/bf16/$m" -type f ! -name "lib$m.so" -delete
  rm -rf "$OUT/bf16/$m.f32"
  xz -T2 "$OUT/bf16/$m/lib$m.so"
done

# bf16 training on the GPU: each of BF16_TRAIN_MODELS as a bf16 CUDA
# training library and an f32 CPU one, with inputs; run.sh compares one
# step's loss and gradients and three train_step calls
# (test/Target/Inputs/bf16_training.py, as test/Target/cuda-emu-bf16.test
# and cuda-emu-bf16-rnn.test do on the emulation). The recurrent models at
# T 32: their training scans are serial in T; the neural ODE at B 4 and the
# ODE-RNN at T 16 (their solves are host loops of small launches). The
# ELECTRA library's nvcc build takes about 5 minutes here.
mkdir -p "$OUT/bf16train"
for m in ${BF16_TRAIN_MODELS:-bert_small reversible_dilated_bert reformer_lsh deep_mlp lstm_lm gru_forecaster neural_ode ode_rnn electra_reversible_dilated_bert}; do
  dims="--dim B=2 --dim T=128"
  case $m in
  deep_mlp | residual_mlp) dims="--dim N=16" ;;
  lstm_lm | gru_forecaster | bilstm_tagger | elman_lm) dims="--dim B=2 --dim T=32" ;;
  neural_ode) dims="--dim B=4" ;;
  ode_rnn) dims="--dim B=2 --dim T=16" ;;
  esac
  "$NNCC" compile "$ROOT/models/$m.nn" --grad --target cuda --precision bf16 \
    -o "$OUT/bf16train/$m" >/dev/null
  "$NNCC" compile "$ROOT/models/$m.nn" --grad --target cpu -o "$OUT/bf16train/$m.f32" >/dev/null
  "$NNCC" run "$ROOT/models/$m.nn" --random-inputs $dims --seed 0 --inputs-only \
    --save-inputs "$OUT/bf16train/$m.in.st" >/dev/null
  find "$OUT/bf16train/$m" "$OUT/bf16train/$m.f32" -type f ! -name "lib$m.so" -delete
  xz -T2 "$OUT/bf16train/$m/lib$m.so" "$OUT/bf16train/$m.f32/lib$m.so"
done

# The GPU benchmark against PyTorch (bench/gpu.py): libraries, weights, inputs.
/usr/bin/python3 "$ROOT/bench/gpu.py" --prepare "$OUT/bench" >/dev/null
find "$OUT/bench" -name '*.so' -exec xz -T2 {} \;
find "$OUT/bench" \( -name '*.cpp' -o -name '*.cu' -o -name '*.o' -o -name '*.h' \) -delete

# The memory table on the GPU (bench/memory_table.py --prepare-gpu): every
# model x sequence x budget library (xz, about 1 MB each) and the manifest;
# inputs are drawn there. T 128 (the seed configuration) by default
# (MEMTABLE_SEQS=128,512,2048 adds rows: check the size printed below;
# MEMTABLE_SEQS=none skips it). About 4 minutes per T on 2 cores, most of
# it bert_small's min-budget library, whose generated code is ten times the
# default's (compiled once per T, cached in NNCC_TEST_CACHE).
if [ "${MEMTABLE_SEQS:-}" != none ]; then
  NNCC="$NNCC" /usr/bin/python3 "$ROOT/bench/memory_table.py" --prepare-gpu "$OUT/memtable" \
    --seqs "${MEMTABLE_SEQS:-128}" --target cuda >/dev/null ||
    echo "device_prep: some memory-table configurations did not compile (their rows will say why)" >&2
  du -sh "$OUT/memtable" >&2
fi

cat > "$OUT/device_env.sh" <<'EOS'
# Sourced by run.sh and memtable.sh on the GPU machine (argument: the
# script's name, for messages), with HERE, WORK and LOGS set: a fresh WORK
# with the runtime and kernel libraries unpacked, the folders of cuBLAS and
# cuBLASLt (which the model libraries link) on LD_LIBRARY_PATH, and the GPU
# and the date into LOGS/gpu.txt.
rm -rf "$WORK" && mkdir -p "$WORK/lib" "$LOGS"
cp "$HERE"/lib/*.so* "$WORK/lib/" && xz -d "$WORK/lib/libopenblas.so.0.xz"
# The folder of a CUDA library the model libraries link (ldconfig, else a search).
cuda_lib_dir() {
  local at
  at=$(ldconfig -p | awk -v n="$1" '$1 == n { print $NF; exit }')
  [ -n "$at" ] ||
    at=$(find / \( -path /proc -o -path /sys \) -prune -o -name "$1" -print 2>/dev/null | head -1)
  [ -n "$at" ] || { echo "$ENV_FOR: $1 not found" >&2; exit 1; }
  dirname "$at"
}
ENV_FOR="$1"
CUBLAS_DIR=$(cuda_lib_dir libcublas.so.13) || exit 1
CUBLASLT_DIR=$(cuda_lib_dir libcublasLt.so.13) || exit 1
export LD_LIBRARY_PATH="$WORK/lib:$CUBLAS_DIR:$CUBLASLT_DIR:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$LOGS/gpu.txt" || true
date -u | tee -a "$LOGS/gpu.txt"
EOS

cat > "$OUT/memtable.sh" <<'EOS'
#!/usr/bin/env bash
# On the GPU machine, a device call of its own (after run.sh):
#   run(command="bash build-device/memtable.sh", carry=["build-device"], timeout_s=540)
# bench/memory_table.py --run-gpu over memtable/: issue 9's Table 1 on this
# GPU, each nncc model x sequence x memory budget and torch's plain and
# checkpointed BERT-small, every configuration in a fresh process, the seed
# configuration (T 128) first; it starts no configuration once too little of
# RUN_BUDGET_S (default 480 s) is left. memory_table_gpu.csv (rewritten after
# every row), memory_table_gpu.png and memtable.txt go to $OUT (the device
# runner's folder that comes back) when set.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="${TMPDIR:-/tmp}/nncc-memtable"
LOGS="${OUT:-$WORK/logs}"
BUDGET="${RUN_BUDGET_S:-480}"
T0=$SECONDS
[ -f "$HERE/memtable/manifest.json" ] ||
  { echo "memtable.sh: no memtable/manifest.json (device_prep.sh with MEMTABLE_SEQS=none?)"; exit 1; }
. "$HERE/device_env.sh" memtable.sh
TMPDIR="$WORK" timeout $((BUDGET - (SECONDS - T0))) python3 "$HERE/../bench/memory_table.py" \
  --run-gpu "$HERE/memtable" -o "$LOGS" --budget-s $((BUDGET - 15 - (SECONDS - T0))) \
  2>&1 | tee "$LOGS/memtable.txt"
rc=${PIPESTATUS[0]}
[ -f "$LOGS/memory_table_gpu.csv" ] && cat "$LOGS/memory_table_gpu.csv"
echo "=== memtable.sh: exit $rc after $((SECONDS - T0)) s"
exit $rc
EOS
chmod +x "$OUT/memtable.sh"

cat > "$OUT/run.sh" <<'EOS'
#!/usr/bin/env bash
# On the GPU machine, in order of value per second (one device call must
# hold it all): CPU against CUDA for every prepared model (forward, and the
# training step where the model trains on CUDA), TRAIN_STEPS (default 50)
# training steps on each target and a resume on CUDA for every model that
# trains there (utils/device_train_check.py), bench/gpu.py (nncc against
# PyTorch on the same GPU) and nncc's per-launch device times there
# (NNCC_PROFILE) and Nsight Compute's DRAM / SM throughput per kernel
# (bench/ncu_summary.py), nncc.torch on CUDA, then compute-sanitizer over
# the training step of $SANITIZE (default: bert_small, reformer_lsh and
# reversible_dilated_bert where they train on CUDA, else the first two that
# do). Each stage is skipped, saying so, once less than its share of
# RUN_BUDGET_S (default 480 s) is left. Logs and bench.json go to $OUT
# (the device runner's folder that comes back) when set. SKIP (words of
# "parity train bf16 bench profile ncu torch bundle sanitize") leaves those
# stages out. Exit status
# 1 if anything failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="${TMPDIR:-/tmp}/nncc-device"
LOGS="${OUT:-$WORK/logs}"
BUDGET="${RUN_BUDGET_S:-480}"
T0=$SECONDS
left() { echo $((BUDGET - (SECONDS - T0))); }
skipped() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
. "$HERE/device_env.sh" run.sh
fails=0
trainers=()
# run_logged NAME SECONDS CMD...: CMD under a timeout, output in $LOGS/NAME.
run_logged() {
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" > "$LOGS/$name" 2>&1
  local rc=$?
  [ $rc -eq 124 ] && echo "run.sh: $name timed out after $limit s" | tee -a "$LOGS/$name"
  return $rc
}
while read -r m reason; do
  mkdir -p "$WORK/$m"
  xz -dc "$HERE/models/$m/lib$m.so.xz" > "$WORK/$m/lib$m.so"
  lib="$WORK/$m/lib$m.so"
  echo "=== $m: forward"
  run_logged "$m.forward.txt" 60 "$HERE/bin/cuda_parity" "$lib" 3 16 || fails=$((fails + 1))
  tail -n 8 "$LOGS/$m.forward.txt"
  if [ "$reason" = "NULL" ]; then
    trainers+=("$m")
    echo "=== $m: training step"
    run_logged "$m.train.txt" 90 "$HERE/bin/cuda_parity" "$lib" 3 16 train || fails=$((fails + 1))
    grep -E "FAIL|worst|error|mismatch" "$LOGS/$m.train.txt" | head -n 8
    tail -n 3 "$LOGS/$m.train.txt"
  else
    echo "=== $m: trains on the CPU only: $reason"
  fi
done < <(skipped parity || cat "$HERE/models/train-support.txt")
echo "=== parity done at $((SECONDS - T0)) s"
for inp in "$HERE"/train/*.in.st; do
  [ -e "$inp" ] && ! skipped train || continue
  m=$(basename "$inp" .in.st)
  lib="$WORK/$m/lib$m.so"
  [ -f "$lib" ] || { mkdir -p "$WORK/$m" && xz -dc "$HERE/models/$m/lib$m.so.xz" > "$lib"; }
  echo "=== $m: ${TRAIN_STEPS:-50} training steps on CUDA against the CPU, then resumed"
  mkdir -p "$WORK/train/$m"
  run_logged "$m.loop.txt" 90 env PYTHONPATH="$HERE/../python" python3 \
    "$HERE/../utils/device_train_check.py" "$lib" "$inp" "$WORK/train/$m" \
    "${TRAIN_STEPS:-50}" || fails=$((fails + 1))
  grep -E "^cuda vs|: loss|resume|TRAIN|Error|error" "$LOGS/$m.loop.txt"
done
echo "=== training loops done at $((SECONDS - T0)) s"
for lib in "$HERE"/bf16/*/lib*.so.xz; do
  [ -e "$lib" ] && ! skipped bf16 || continue
  m=$(basename "$(dirname "$lib")")
  xz -dc "$lib" > "$WORK/lib$m.bf16.so"
  echo "=== $m: --precision bf16 forward on CUDA against the f32 CPU library"
  run_logged "$m.bf16.txt" 60 "$HERE/bin/nncc-runner" "$WORK/lib$m.bf16.so" --target cuda \
    --inputs "$HERE/bf16/$m.in.st" --seed 1 --expect "$HERE/bf16/$m.ref.st" --tol 3e-2 \
    --repeat 5 || fails=$((fails + 1))
  cat "$LOGS/$m.bf16.txt"
done
for d in "$HERE"/bf16train/*.f32; do
  [ -d "$d" ] && ! skipped bf16 || continue
  m=$(basename "$d" .f32)
  mkdir -p "$WORK/bf16train/$m"
  xz -dc "$HERE/bf16train/$m/lib$m.so.xz" > "$WORK/bf16train/lib$m.bf16.so"
  xz -dc "$d/lib$m.so.xz" > "$WORK/bf16train/lib$m.f32.so"
  echo "=== $m: --precision bf16 training on CUDA against the f32 CPU library"
  run_logged "$m.bf16train.txt" 120 env PYTHONPATH="$HERE/../python:$HERE/../test/Target/Inputs" \
    python3 "$HERE/../test/Target/Inputs/bf16_training.py" "$WORK/bf16train/lib$m.f32.so" \
    "$WORK/bf16train/lib$m.bf16.so" "$HERE/bf16train/$m.in.st" 0.5 5e-2 2e-2 3 \
    "$WORK/bf16train/$m" || fails=$((fails + 1))
  cat "$LOGS/$m.bf16train.txt"
done
if [ "$(left)" -gt 120 ] && ! skipped bench && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "=== bench/gpu.py: nncc against PyTorch on this GPU"
  rm -rf "$WORK/bench" && cp -r "$HERE/bench" "$WORK/bench"
  find "$WORK/bench" -name '*.so.xz' -exec xz -d {} \;
  run_logged bench.txt $(( $(left) - 60 )) python3 "$HERE/../bench/gpu.py" --run "$WORK/bench" \
    --markdown --json "$LOGS/bench.json" || fails=$((fails + 1))
  cat "$LOGS/bench.txt"
  if [ "$(left)" -gt 150 ] && ! skipped profile; then
    echo "=== per-launch device time of nncc's cases (NNCC_PROFILE, slowest first)"
    NNCC_PROFILE="$LOGS/profile.tsv" NNCC_PROFILE_SKIP=1 run_logged profile.txt 90 \
      python3 "$HERE/../bench/gpu.py" --run "$WORK/bench" --nncc-only --reps 3 || fails=$((fails + 1))
    grep -v '^#' "$LOGS/profile.tsv" 2>/dev/null | sort -t$'\t' -k1,1 -g -r | head -n 40
  fi
  if [ "$(left)" -gt 150 ] && ! skipped ncu && command -v ncu >/dev/null; then
    echo "=== DRAM / SM throughput per kernel of nncc's cases (ncu, bench/ncu_summary.py)"
    run_logged ncu.csv 100 ncu --csv --print-kernel-base function --launch-count 400 \
      --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed \
      python3 "$HERE/../bench/gpu.py" --run "$WORK/bench" --nncc-only --reps 1
    # A profile that could not be taken (no counter permission in the
    # container: ERR_NVGPUCTRPERM) is reported, not counted as a failure.
    if python3 "$HERE/../bench/ncu_summary.py" "$LOGS/ncu.csv" > "$LOGS/ncu.md" 2>&1; then
      head -n 30 "$LOGS/ncu.md"
      tail -n 1 "$LOGS/ncu.md"
    else
      cat "$LOGS/ncu.md"
      grep -m 3 -E "==ERROR==|ERR_NVGPUCTRPERM" "$LOGS/ncu.csv"
    fi
  fi
else
  echo "=== bench/gpu.py skipped ($(left) s left, or no CUDA torch)"
fi
if [ "$(left)" -gt 60 ] && ! skipped torch && python3 -c 'import torch' 2>/dev/null; then
  echo "=== nncc.torch on CUDA (utils/device_torch_check.py)"
  xz -dc "$HERE/torch/libgru_forecaster.so.xz" > "$WORK/libgru_forecaster.so"
  run_logged torch.txt 60 python3 "$HERE/../utils/device_torch_check.py" \
    "$WORK/libgru_forecaster.so" || fails=$((fails + 1))
  tail -n 20 "$LOGS/torch.txt"
  echo "=== the DDP script with NCCL and one rank (test/Python/ddp_gru.py)"
  PYTHONPATH="$HERE/../python" run_logged ddp_nccl.txt 60 python3 \
    "$HERE/../test/Python/ddp_gru.py" "$HERE/../models/gru_forecaster.nn" "$WORK/ddp" \
    --backend nccl --world 1 --lib "$WORK/libgru_forecaster.so" || fails=$((fails + 1))
  tail -n 1 "$LOGS/ddp_nccl.txt"
fi
if [ "$(left)" -gt 30 ] && ! skipped bundle && [ -f "$HERE/bundle.tar.xz" ]; then
  # The bundle sees the driver and cuBLAS only (no LD_LIBRARY_PATH of ours).
  echo "=== a deploy bundle on CUDA (nncc-runner --target cuda, against the CPU's outputs)"
  mkdir -p "$WORK/b" && tar xJf "$HERE/bundle.tar.xz" -C "$WORK/b"
  run_logged bundle.txt 30 env -i LD_LIBRARY_PATH="$CUBLAS_DIR:$CUBLASLT_DIR" \
    "$WORK/b/bundle/nncc-runner" --inputs "$WORK/b/bundle/in.st" --seed 0 --target cuda \
    --expect "$WORK/b/bundle/expected.st" --tol 1e-5 --repeat 3 || fails=$((fails + 1))
  cat "$LOGS/bundle.txt"
fi
# Default: the attention encoders that train on CUDA (the tile kernels,
# forward and backward, dense, banded and LSH), else the first two trainers.
if [ -z "${SANITIZE:-}" ]; then
  for m in bert_small reformer_lsh reversible_dilated_bert; do
    [[ " ${trainers[*]} " == *" $m "* ]] && SANITIZE="${SANITIZE:-} $m"
  done
  SANITIZE="${SANITIZE:-${trainers[*]:0:2}}"
fi
skipped sanitize && SANITIZE=
for m in $SANITIZE; do
  for tool in memcheck racecheck synccheck; do
    if [ "$(left)" -lt 45 ]; then
      echo "=== compute-sanitizer --tool $tool: $m skipped ($(left) s left)"
      continue
    fi
    # racecheck instruments every shared-memory access: over cuBLAS's GEMMs
    # too it did not finish a training step in 38 s on the H100, so it
    # checks nncc's own kernels (names with "nncc": the kernel library's
    # namespace and the generated nncc_* kernels) where the tool can filter.
    filter=()
    if [ "$tool" = racecheck ] && compute-sanitizer --help 2>&1 | grep -q -- "--kernel-name "; then
      filter=(--kernel-name kns=nncc)
    fi
    echo "=== compute-sanitizer --tool $tool ${filter[*]}: $m training step"
    run_logged "$m.$tool.txt" $(( $(left) - 15 )) compute-sanitizer --tool "$tool" "${filter[@]}" \
      --error-exitcode 9 "$HERE/bin/cuda_parity" "$WORK/$m/lib$m.so" 2 8 train
    rc=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Race reported|Invalid|hazard" "$LOGS/$m.$tool.txt" | head -n 12
    [ $rc -eq 0 ] || fails=$((fails + 1))
  done
done
echo "=== $fails failure(s) in $((SECONDS - T0)) s"
[ $fails -eq 0 ]
EOS
chmod +x "$OUT/run.sh"
du -sh "$OUT" >&2
# The runner carries this folder with the working tree: 64 MiB in all.
tree=$(git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
total=$(( $(du -sb "$OUT" | cut -f1) + tree ))
[ "$total" -le $((64 * 1024 * 1024)) ] ||
  echo "device_prep: $OUT and the working tree come to $((total / 1048576)) MiB, over the" \
       "runner's 64 MiB: prepare less (BUNDLE=0, BF16_TRAIN_MODELS, fewer models)" >&2
