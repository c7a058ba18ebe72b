// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// A recurrent stack whose `reserve` result (built by nncc-autodiff) its
// gradient reads becomes one nnk.recurrent_forward that keeps the layer
// outputs and gates in a reserve [B, T, L·D·H·(1 + slots)]: the buffer the
// !nn.reserve value maps to, which the gradient reads. Without the edge
// (or with an unused reserve) the gradient recomputes the forward.

// CHECK-LABEL: func.func @paired
// CHECK: %[[R:.*]] = nnk.alloc : !nnk.buffer<[B, T, 24], f32>
// CHECK: nnk.recurrent_forward ins(%{{.*}}) weights(%{{.*}}, %{{.*}}) outs(%{{.*}}) reserve(%[[R]]) {cell = #nnk<cell lstm>, has_bias = false, hidden_size = 4 : i64, seed = 7 : i64, zoneout = 2.500000e-01 : f64}
// CHECK-NOT: nnk.recurrent_scan
// CHECK: nnk.recurrent_grad ins(%{{.*}}) weights(%{{.*}}, %{{.*}}) reserve(%[[R]]) dy(%{{.*}})
func.func @paired(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[16, 3], f32>) attributes {nn.training} {
  %y, %h, %c, %r = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %dx, %dh0, %dc0, %dw:2 = nn.lstm_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
  return %y, %dw#0 : !nn.tensor<[B, T, 4], f32>, !nn.tensor<[16, 3], f32>
}

// CHECK-LABEL: func.func @unpaired
// CHECK: nnk.recurrent_scan
// CHECK-NOT: nnk.recurrent_forward
// CHECK: nnk.recurrent_grad
// CHECK-NOT: reserve(
// CHECK: return
func.func @unpaired(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[12, 3], f32>) attributes {nn.training} {
  %y, %h, %r = nn.gru %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %dx, %dh0, %dw:2 = nn.gru_grad %x weights(%wih, %whh) dy %dy {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  return %y, %dw#0 : !nn.tensor<[B, T, 4], f32>, !nn.tensor<[12, 3], f32>
}

// BPTT checkpointing: checkpoint_every travels to both nnk ops; the reserve
// holds the layer outputs plus, for the LSTM, ⌈L·D·H / k⌉ per (b, t) for the
// cell-state checkpoints: 2 layers × 2 directions × 4 = 16 + ⌈16 / 3⌉ = 22.
// CHECK-LABEL: func.func @checkpointed
// CHECK: %[[R:.*]] = nnk.alloc : !nnk.buffer<[B, T, 22], f32>
// CHECK: nnk.recurrent_forward {{.*}} reserve(%[[R]]) {bidirectional = true, cell = #nnk<cell lstm>, checkpoint_every = 3 : i64, has_bias = false, hidden_size = 4 : i64, num_layers = 2 : i64}
// CHECK: nnk.recurrent_grad {{.*}} reserve(%[[R]]) dy(%{{.*}}) {{.*}}checkpoint_every = 3 : i64
func.func @checkpointed(%x: !nn.tensor<[B, T, 3], f32>, %w0: !nn.tensor<[16, 3], f32>, %u0: !nn.tensor<[16, 4], f32>, %w1: !nn.tensor<[16, 3], f32>, %u1: !nn.tensor<[16, 4], f32>, %w2: !nn.tensor<[16, 8], f32>, %u2: !nn.tensor<[16, 4], f32>, %w3: !nn.tensor<[16, 8], f32>, %u3: !nn.tensor<[16, 4], f32>, %dy: !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 3], f32>) attributes {nn.training} {
  %y, %h, %c, %r = nn.lstm %x weights(%w0, %u0, %w1, %u1, %w2, %u2, %w3, %u3) {hidden_size = 4 : i64, num_layers = 2 : i64, bidirectional = true, has_bias = false, checkpoint_every = 3 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[4, B, 4], f32>, !nn.tensor<[4, B, 4], f32>, !nn.reserve)
  %dx, %dh0, %dc0, %dw:8 = nn.lstm_grad %x weights(%w0, %u0, %w1, %u1, %w2, %u2, %w3, %u3) dy %dy reserve %r {hidden_size = 4 : i64, num_layers = 2 : i64, bidirectional = true, has_bias = false, checkpoint_every = 3 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 8], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, B, 4], f32>, !nn.tensor<[4, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>)
  return %y, %dw#0 : !nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 3], f32>
}

// A GRU's checkpointed reserve is its layer outputs only (its state is h).
// CHECK-LABEL: func.func @checkpointed_gru
// CHECK: %[[R:.*]] = nnk.alloc : !nnk.buffer<[B, T, 4], f32>
// CHECK: nnk.recurrent_forward {{.*}} reserve(%[[R]]) {{.*}}checkpoint_every = 5 : i64
// CHECK: nnk.recurrent_grad {{.*}} reserve(%[[R]]) {{.*}}checkpoint_every = 5 : i64
func.func @checkpointed_gru(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[12, 3], f32>) attributes {nn.training} {
  %y, %h, %r = nn.gru %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %dx, %dh0, %dw:2 = nn.gru_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  return %y, %dw#0 : !nn.tensor<[B, T, 4], f32>, !nn.tensor<[12, 3], f32>
}
