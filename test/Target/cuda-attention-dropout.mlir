// RUN: not nncc compile %s --emit cuda 2>&1 | FileCheck %s
// Training-mode attention dropout has no CUDA kernel: a located error.
module attributes {nn.dims = ["B", "T"], nn.model = "bad"} {
  func.func @forward(%x: !nnk.buffer<[B, T, 24], f32> {nn.name = "x"},
                     %y: !nnk.buffer<[B, T, 8], f32> {nnk.output, nn.name = "y"}) {
    // CHECK: cuda-attention-dropout.mlir:[[@LINE+1]]:5: error: 'nnk.flash_attention' op attention dropout (training mode) is CPU-only
    nnk.flash_attention ins(%x) outs(%y) {dropout = 0.1 : f64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
    return
  }
}
