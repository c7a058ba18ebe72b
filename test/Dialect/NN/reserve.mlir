// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt %s --mlir-print-op-generic | nncc-opt | FileCheck %s

// Reserves round-trip: the optional `reserve` result of the recurrent stacks
// and attention (!nn.reserve) and the `reserve` operand of their gradients.

// CHECK-LABEL: func.func @recurrent
// CHECK: %[[Y:.*]], %{{.*}}, %[[R:.*]] = nn.rnn %arg0 weights(%arg1, %arg2) {has_bias = false, hidden_size = 4 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
// CHECK: nn.rnn_grad %arg0 weights(%arg1, %arg2) dy %arg3 reserve %[[R]] {has_bias = false, hidden_size = 4 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[LR:.*]] = nn.lstm %arg0 weights(%arg4, %arg5) {has_bias = false, hidden_size = 4 : i64, seed = 3 : i64, zoneout = 1.000000e-01 : f64} : {{.*}} -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
// CHECK: nn.lstm_grad %arg0 weights(%arg4, %arg5) dy %arg3 dh_n %{{.*}} reserve %[[LR]] {
// CHECK: %{{.*}}, %{{.*}}, %[[GR:.*]] = nn.gru %arg0 weights(%arg6, %arg7) {has_bias = false, hidden_size = 4 : i64} : {{.*}} -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
// CHECK: nn.gru_grad %arg0 weights(%arg6, %arg7) dy %arg3 reserve %[[GR]] {
// An inference stack has no reserve.
// CHECK: nn.gru %arg0 weights(%arg6, %arg7) {has_bias = false, hidden_size = 4 : i64} : {{.*}} -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>){{$}}
func.func @recurrent(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>,
                     %lih: !nn.tensor<[16, 3], f32>, %lhh: !nn.tensor<[16, 4], f32>, %gih: !nn.tensor<[12, 3], f32>, %ghh: !nn.tensor<[12, 4], f32>) {
  %y, %h, %r = nn.rnn %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %dx, %dh0, %dw:2 = nn.rnn_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>)
  %ly, %lh, %lc, %lr = nn.lstm %x weights(%lih, %lhh) {hidden_size = 4 : i64, has_bias = false, zoneout = 0.1 : f64, seed = 3 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %ldx, %ldh0, %ldc0, %ldw:2 = nn.lstm_grad %x weights(%lih, %lhh) dy %dy dh_n %lh reserve %lr {hidden_size = 4 : i64, has_bias = false, zoneout = 0.1 : f64, seed = 3 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
  %gy, %gh, %gr = nn.gru %x weights(%gih, %ghh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %gdx, %gdh0, %gdw:2 = nn.gru_grad %x weights(%gih, %ghh) dy %dy reserve %gr {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  %iy, %ih = nn.gru %x weights(%gih, %ghh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// CHECK-LABEL: func.func @attention
// CHECK: %{{.*}}, %[[R:.*]] = nn.attention %arg0, %arg1 out %arg2 {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64, seed = 9 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.reserve)
// CHECK: nn.attention_grad %arg0, %arg1 out %arg2 grad %arg3 reserve %[[R]] {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64, seed = 9 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.reserve) -> (
func.func @attention(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[16, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>) {
  %a, %r = nn.attention %x, %wi out %wo {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64, seed = 9 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.reserve)
  %dx, %dwi, %dwo = nn.attention_grad %x, %wi out %wo grad %dy reserve %r {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64, seed = 9 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>)
  return
}
