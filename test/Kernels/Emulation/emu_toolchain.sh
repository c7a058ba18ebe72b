#!/usr/bin/env bash
# Test-only: emu_toolchain.sh DIR RUNTIME_INCLUDE LIBDIR
# Makes DIR/bin/nvcc (emu_nvcc.py: generated CUDA sources built for the host
# emulation), DIR/lib64 with the empty libcublas.so, libcublasLt.so and
# libcudart_static.a that nncc's link names (the emulated runtime, cuBLAS
# and cuBLASLt are inline), and
# DIR/cuda_parity (test/Target/Inputs/cuda_parity.c). Then
#   NNCC_NVCC=DIR/bin/nvcc nncc compile M.nn --target all [--grad] -o OUT
#   NNCC_CUDA_DRIVER=<libnncc_fake_cuda.so> DIR/cuda_parity OUT/libM.so B T [train]
# runs the model's CUDA functions on the CPU against its CPU functions.
set -euo pipefail
DIR=$1 INC=$2 LIB=$3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$DIR/bin" "$DIR/lib64"
ln -sf "$HERE/emu_nvcc.py" "$DIR/bin/nvcc"
for l in cublas cublasLt; do cc -shared -o "$DIR/lib64/lib$l.so" -x c /dev/null; done
rm -f "$DIR/lib64/libcudart_static.a" && ar rc "$DIR/lib64/libcudart_static.a"
cc -std=c99 -Wall -Werror -I"$INC" "$HERE/../../Target/Inputs/cuda_parity.c" -L"$LIB" \
  -lnncc_runtime -Wl,-rpath,"$LIB" -ldl -lm -o "$DIR/cuda_parity"
