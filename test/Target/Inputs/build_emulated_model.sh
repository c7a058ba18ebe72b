#!/bin/sh
# build_emulated_model.sh MODEL.nn OUT_DIR RUNTIME_INCLUDE LIB_DIR
#
# Builds OUT_DIR/lib<name>.so from MODEL.nn (--grad) with its CUDA half
# running under the host emulation of CUDA (test/Kernels/Emulation): the
# generated host C++ (CPU target, tables) as nncc compiles it, and the
# generated .cu rewritten by rewrite_cuda.py --file and compiled by the host
# compiler against the emulated cudart / cuBLAS and the rewritten kernel
# headers. Linked like a real library (libnncc_model_support, kernels,
# runtime), so libnncc_model_support's CUDA path drives it on the fake
# driver (NNCC_CUDA_DRIVER=LIB_DIR/libnncc_fake_cuda.so).
set -e
model=$1 out=$2 inc=$3 lib=$4
emu=$(cd "$(dirname "$0")/../../Kernels/Emulation" && pwd)
name=$(basename "$model" .nn)
mkdir -p "$out"
[ -d "$out/inc" ] || python3 "$emu/rewrite_cuda.py" "$inc" "$out/inc" > /dev/null
nncc compile "$model" --grad --target cuda --emit cpp -o "$out/$name.cpp"
nncc compile "$model" --grad --emit cuda -o "$out/$name.cu"
python3 "$emu/rewrite_cuda.py" --file "$out/$name.cu" "$out/${name}_emu.cpp"
${CXX:-c++} -std=c++20 -O1 -fPIC -shared -fopenmp -fvisibility=hidden -Wno-unknown-pragmas \
  -I"$out/inc" -I"$emu" -I"$inc" "$out/$name.cpp" "$out/${name}_emu.cpp" \
  -o "$out/lib$name.so" -L"$lib" -Wl,--exclude-libs,ALL -lnncc_model_support \
  -lnncc_kernels -lnncc_runtime -Wl,-rpath,"$lib"
