// RUN: nncc-opt --pass-pipeline='builtin.module(func.func(nn-inference-semantics))' %s | FileCheck %s

// Outside training, and in training functions marked nn.eval_mode, dropout
// and zoneout are the identity and the rates of LSTM zoneout and attention
// dropout become 0 (the default, so no longer printed). Training functions
// keep them.

// CHECK-LABEL: func.func @infer
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, 4], f32>, %[[PREV:.*]]: !nn.tensor<[B, 4], f32>)
// CHECK-NOT: nn.dropout
// CHECK-NOT: nn.zoneout
// CHECK: %[[T:.*]] = nn.tanh %[[X]]
// CHECK: %[[S:.*]] = nn.add %[[T]], %[[X]]
// CHECK: return %[[S]]
func.func @infer(%x: !nn.tensor<[B, 4], f32>, %prev: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> {
  %d = nn.dropout %x {p = 0.3 : f64, seed = 1 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %t = nn.tanh %d : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %z = nn.zoneout %t, %prev {p = 0.25 : f64, seed = 2 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %s = nn.add %z, %x : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %s : !nn.tensor<[B, 4], f32>
}

// CHECK-LABEL: func.func @attention_eval
// CHECK: nn.attention %{{.*}} {kind = #nn.dense, num_heads = 2 : i64, seed = 4 : i64}
// CHECK: nn.attention_grad %{{.*}} {kind = #nn.dense, num_heads = 2 : i64, seed = 4 : i64}
func.func @attention_eval(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32> attributes {nn.training, nn.eval_mode} {
  %a = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64, dropout = 0.1 : f64, seed = 4 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %dx, %dwi, %dwo = nn.attention_grad %x, %wi out %wo grad %dy {kind = #nn.dense, num_heads = 2 : i64, dropout = 0.1 : f64, seed = 4 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>)
  return %a : !nn.tensor<[B, T, 8], f32>
}

// CHECK-LABEL: func.func @lstm_infer
// CHECK: nn.lstm %{{.*}} {has_bias = false, hidden_size = 4 : i64, seed = 7 : i64}
func.func @lstm_infer(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>) -> !nn.tensor<[B, T, 4], f32> {
  %y, %h, %c = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return %y : !nn.tensor<[B, T, 4], f32>
}

// CHECK-LABEL: func.func @train
// CHECK: %[[D:.*]] = nn.dropout %{{.*}} {p = 3.000000e-01 : f64, seed = 1 : i64}
// CHECK: %[[Z:.*]] = nn.zoneout %[[D]]
// CHECK: return %[[Z]]
func.func @train(%x: !nn.tensor<[B, 4], f32>, %prev: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> attributes {nn.training} {
  %d = nn.dropout %x {p = 0.3 : f64, seed = 1 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %z = nn.zoneout %d, %prev {p = 0.25 : f64, seed = 2 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %z : !nn.tensor<[B, 4], f32>
}
