#!/usr/bin/env bash
# The main job: set up, build, then compile a seed model and print its `nn` IR.
set -euo pipefail
cd "$(dirname "$0")/.."
bash utils/setup.sh
cmake -S . -B build -G Ninja
cmake --build build
MODEL=${1:-models/lstm_lm.nn}
build/bin/nncc compile "$MODEL" --emit nn
