// RUN: not nncc compile %s --emit cuda 2>&1 | FileCheck %s
// Ops without a CUDA lowering are located errors, not crashes.
module attributes {nn.dims = ["B"], nn.model = "bad"} {
  func.func @forward(%x: !nnk.buffer<[B, 4], f32> {nn.name = "x"},
                     %y: !nnk.buffer<[4, B], f32> {nnk.output, nn.name = "y"}) {
    // CHECK: emit-errors.mlir:[[@LINE+1]]:5: error: the CUDA emitter cannot handle 'nnk.transpose' yet
    nnk.transpose ins(%x) outs(%y) {perm = array<i64: 1, 0>} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[4, B], f32>
    return
  }
}
