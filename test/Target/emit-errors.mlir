// RUN: not nncc compile %s --emit cuda 2>&1 | FileCheck %s
// What the CUDA kernels cannot serve is a located error, not a crash: here a
// head size beyond the attention kernels' 256.
module attributes {nn.dims = ["B", "T"], nn.model = "bad"} {
  func.func @forward(%x: !nnk.buffer<[B, T, 3072], f32> {nn.name = "x"},
                     %y: !nnk.buffer<[B, T, 1024], f32> {nnk.output, nn.name = "y"}) {
    // CHECK: emit-errors.mlir:[[@LINE+1]]:5: error: the CUDA attention kernels serve head sizes up to 256, got 512
    nnk.flash_attention ins(%x) outs(%y) {num_heads = 2 : i64} : !nnk.buffer<[B, T, 3072], f32>, !nnk.buffer<[B, T, 1024], f32>
    return
  }
}
