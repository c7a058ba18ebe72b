#!/usr/bin/env bash
# The main job: set up, build, then compile a seed model to lib<model>.so and
# run it on the CPU with generated inputs (deterministic from --seed 0; each
# symbolic dim gets a small size: T=32, others 4), printing one summary line
# per output (shape, min/max/mean).
set -euo pipefail
cd "$(dirname "$0")/.."
bash utils/setup.sh
cmake -S . -B build -G Ninja
cmake --build build
MODEL=${1:-models/lstm_lm.nn}
OUT=build/main-job
build/bin/nncc compile "$MODEL" -o "$OUT"
DIM_ARGS=()
for d in $(build/bin/nncc inspect "$MODEL" | sed -n '/"dims"/,/\]/p' | grep -o '"[A-Za-z_][A-Za-z0-9_]*"' | tr -d '"' | grep -vx dims); do
  if [ "$d" = T ]; then DIM_ARGS+=(--dim "$d=32"); else DIM_ARGS+=(--dim "$d=4"); fi
done
echo "running $MODEL on the CPU with generated inputs ${DIM_ARGS[*]}:"
build/bin/nncc run "$MODEL" --random-inputs "${DIM_ARGS[@]}" --seed 0 -o "$OUT/outputs.safetensors"
echo "outputs written to $OUT/outputs.safetensors"
