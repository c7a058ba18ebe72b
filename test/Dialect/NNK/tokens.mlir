// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt -mlir-print-op-generic %s | nncc-opt | FileCheck %s

nn.parameter @rows : !nn.tensor<[8, 1, 16], f32>

// CHECK-LABEL: func.func @tokens
func.func @tokens(%x: !nnk.buffer<[B, T], i32>, %logits: !nnk.buffer<[B, T, 100], f32>,
                  %h: !nnk.buffer<[B, T, 64], f32>, %cols: !nnk.buffer<[1, 16, 48], f32>) {
  %masked = nnk.alloc : !nnk.buffer<[B, T], i32>
  %mask = nnk.alloc : !nnk.buffer<[B, T], i1>
  %s = nnk.alloc : !nnk.buffer<[B, T], i32>
  %y = nnk.alloc : !nnk.buffer<[B, T, 64], f32>
  %dr = nnk.alloc : !nnk.buffer<[8, 1, 16], f32>
  %dc = nnk.alloc : !nnk.buffer<[1, 16, 48], f32>
  %rows = nnk.weight @rows : !nnk.buffer<[8, 1, 16], f32>
  // CHECK: nnk.mask_tokens ins(%{{.*}}) outs(%{{.*}}, %{{.*}}) {mask_id = 103 : i64, p = 1.500000e-01 : f64, seed = 3 : i64} : !nnk.buffer<[B, T], i32>, !nnk.buffer<[B, T], i32>, !nnk.buffer<[B, T], i1>
  nnk.mask_tokens ins(%x) outs(%masked, %mask) {p = 0.15 : f64, mask_id = 103 : i64, seed = 3 : i64} : !nnk.buffer<[B, T], i32>, !nnk.buffer<[B, T], i32>, !nnk.buffer<[B, T], i1>
  // CHECK: nnk.sample ins(%{{.*}}) outs(%{{.*}}) {seed = 4 : i64} : !nnk.buffer<[B, T, 100], f32>, !nnk.buffer<[B, T], i32>
  nnk.sample ins(%logits) outs(%s) {seed = 4 : i64} : !nnk.buffer<[B, T, 100], f32>, !nnk.buffer<[B, T], i32>
  // CHECK: nnk.sample ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {seed = 5 : i64} : !nnk.buffer<[B, T, 100], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i32>
  nnk.sample ins(%logits, %mask) outs(%s) {seed = 5 : i64} : !nnk.buffer<[B, T, 100], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i32>
  // CHECK: nnk.axial_position ins(%{{.*}}, %{{.*}}, %{{.*}}) outs(%{{.*}}) : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[8, 1, 16], f32>, !nnk.buffer<[1, 16, 48], f32>, !nnk.buffer<[B, T, 64], f32>
  nnk.axial_position ins(%h, %rows, %cols) outs(%y) : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[8, 1, 16], f32>, !nnk.buffer<[1, 16, 48], f32>, !nnk.buffer<[B, T, 64], f32>
  // CHECK: nnk.axial_position_grad ins(%{{.*}}) outs(%{{.*}}, %{{.*}}) : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[8, 1, 16], f32>, !nnk.buffer<[1, 16, 48], f32>
  nnk.axial_position_grad ins(%y) outs(%dr, %dc) : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[8, 1, 16], f32>, !nnk.buffer<[1, 16, 48], f32>
  %w = nnk.alloc : !nnk.buffer<[100, 64], f32>
  %bias = nnk.alloc : !nnk.buffer<[100], f32>
  // CHECK: nnk.linear_sample ins(%{{.*}}, %{{.*}}, bias %{{.*}}, rows %{{.*}}) outs(%{{.*}}) {seed = 6 : i64} : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[100, 64], f32>, !nnk.buffer<[100], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i32>
  nnk.linear_sample ins(%h, %w, bias %bias, rows %mask) outs(%s) {seed = 6 : i64} : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[100, 64], f32>, !nnk.buffer<[100], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i32>
  // CHECK: nnk.linear_sample ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[100, 64], f32>, !nnk.buffer<[B, T], i32>
  nnk.linear_sample ins(%h, %w) outs(%s) : !nnk.buffer<[B, T, 64], f32>, !nnk.buffer<[100, 64], f32>, !nnk.buffer<[B, T], i32>
  return
}
