// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt %s --mlir-print-op-generic | nncc-opt | FileCheck %s

// Round-trips every nn op through the custom and the generic forms.

// CHECK: nn.parameter @fc.weight : !nn.tensor<[10, 20], f32> init #nn.init<uniform, -6.250000e-02, 6.250000e-02>
nn.parameter @fc.weight : !nn.tensor<[10, 20], f32> init #nn.init<uniform, -0.0625, 0.0625>
// CHECK: nn.parameter @emb.weight : !nn.tensor<[100, 8], f32> init #nn.init<normal, 0.000000e+00, 1.000000e+00>
nn.parameter @emb.weight : !nn.tensor<[100, 8], f32> init #nn.init<normal, 0.0, 1.0>
// CHECK: nn.parameter @ln.weight : !nn.tensor<[8], f32> init #nn.init<ones>
nn.parameter @ln.weight : !nn.tensor<[8], f32> init #nn.init<ones>
// CHECK: nn.parameter @ln.bias : !nn.tensor<[8], f32> init #nn.init<zeros>
nn.parameter @ln.bias : !nn.tensor<[8], f32> init #nn.init<zeros>
// CHECK: nn.parameter @scale : !nn.tensor<[], f32> init #nn.init<constant, 5.000000e-01>
nn.parameter @scale : !nn.tensor<[], f32> init #nn.init<constant, 0.5>
// CHECK: nn.parameter @loaded : !nn.tensor<[4], f64>{{$}}
nn.parameter @loaded : !nn.tensor<[4], f64>

// CHECK-LABEL: func.func @structural
func.func @structural() -> (!nn.tensor<[10, 20], f32>, !nn.tensor<[], f32>, !nn.tensor<[], i64>) {
  // CHECK: %[[W:.*]] = nn.get_parameter @fc.weight : !nn.tensor<[10, 20], f32>
  %w = nn.get_parameter @fc.weight : !nn.tensor<[10, 20], f32>
  // CHECK: %[[C:.*]] = nn.constant 2.500000e+00 : f32
  %c = nn.constant 2.5 : f32
  // CHECK: %[[I:.*]] = nn.constant 3 : i64
  %i = nn.constant 3 : i64
  // CHECK: return %[[W]], %[[C]], %[[I]]
  return %w, %c, %i : !nn.tensor<[10, 20], f32>, !nn.tensor<[], f32>, !nn.tensor<[], i64>
}

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, 4], f32>, %[[Y:.*]]: !nn.tensor<[4], f32>)
func.func @elementwise(%x: !nn.tensor<[B, 4], f32>, %y: !nn.tensor<[4], f32>) {
  // CHECK: nn.add %[[X]], %[[Y]] : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  %0 = nn.add %x, %y : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.sub %[[X]], %[[Y]]
  %1 = nn.sub %x, %y : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.mul %[[Y]], %[[X]]
  %2 = nn.mul %y, %x : (!nn.tensor<[4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // A `?` result dim is compatible with the inferred B.
  // CHECK: nn.div %[[X]], %[[X]] : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[?, 4], f32>
  %3 = nn.div %x, %x : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[?, 4], f32>
  // CHECK: nn.neg %[[X]] : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %4 = nn.neg %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.relu %[[X]]
  %5 = nn.relu %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.tanh %[[X]]
  %6 = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.sigmoid %[[X]]
  %7 = nn.sigmoid %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.exp %[[X]]
  %8 = nn.exp %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.log %[[X]]
  %9 = nn.log %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.leaky_relu %[[X]] {alpha = 2.000000e-01 : f64}
  %10 = nn.leaky_relu %x {alpha = 0.2 : f64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // Default-valued attributes are elided.
  // CHECK: nn.leaky_relu %[[X]] : (
  %11 = nn.leaky_relu %x {alpha = 0.01 : f64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.gelu %[[X]] {approximate = #nn<gelu_approx tanh>}
  %12 = nn.gelu %x {approximate = #nn<gelu_approx tanh>} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.gelu %[[X]] : (
  %13 = nn.gelu %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.softmax %[[X]] {axis = 0 : i64}
  %14 = nn.softmax %x {axis = 0 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.softmax %[[X]] : (
  %15 = nn.softmax %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// CHECK-LABEL: func.func @tensor_ops
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, T, 8], f32>, %[[M:.*]]: !nn.tensor<[8, 4], f32>, %[[IDS:.*]]: !nn.tensor<[B, T], i64>)
func.func @tensor_ops(%x: !nn.tensor<[B, T, 8], f32>, %m: !nn.tensor<[8, 4], f32>,
                      %ids: !nn.tensor<[B, T], i64>) {
  // CHECK: nn.matmul %[[X]], %[[M]] : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
  %0 = nn.matmul %x, %m : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
  %w = nn.get_parameter @fc.weight : !nn.tensor<[10, 20], f32>
  %t = nn.get_parameter @emb.weight : !nn.tensor<[100, 8], f32>
  // CHECK: %[[E:.*]] = nn.embedding %[[IDS]], %{{.*}} : (!nn.tensor<[B, T], i64>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %e = nn.embedding %ids, %t : (!nn.tensor<[B, T], i64>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %g = nn.get_parameter @ln.weight : !nn.tensor<[8], f32>
  %b = nn.get_parameter @ln.bias : !nn.tensor<[8], f32>
  // CHECK: nn.layer_norm %[[E]] weight %{{.*}} bias %{{.*}} {eps = 1.250000e-01 : f64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8], f32>, !nn.tensor<[8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %1 = nn.layer_norm %e weight %g bias %b {eps = 0.125 : f64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8], f32>, !nn.tensor<[8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.layer_norm %[[E]] : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %2 = nn.layer_norm %e : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.layer_norm %[[E]] bias %{{.*}} : (
  %3 = nn.layer_norm %e bias %b : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.dropout %[[X]] {p = 1.000000e-01 : f64, seed = 42 : i64}
  %4 = nn.dropout %x {p = 0.1 : f64, seed = 42 : i64} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.zoneout %[[X]], %[[E]] {p = 1.500000e-01 : f64, seed = 1 : i64}
  %5 = nn.zoneout %x, %e {p = 0.15 : f64, seed = 1 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.sinusoidal_position %[[X]] : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %6 = nn.sinusoidal_position %x : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.learned_position %[[X]], %{{.*}} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %7 = nn.learned_position %x, %t : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.concat %[[X]], %[[E]] {axis = -1 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 16], f32>
  %8 = nn.concat %x, %e {axis = -1 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 16], f32>
  // CHECK: nn.concat %[[X]], %[[X]] {axis = 1 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, ?, 8], f32>
  %9 = nn.concat %x, %x {axis = 1 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, ?, 8], f32>
  // CHECK: nn.split %[[X]] {axis = 2 : i64, sizes = array<i64: 2, 2, 4>} : (!nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 2], f32>, !nn.tensor<[B, T, 2], f32>, !nn.tensor<[B, T, 4], f32>)
  %10:3 = nn.split %x {axis = 2 : i64, sizes = array<i64: 2, 2, 4>} : (!nn.tensor<[B, T, 8], f32>) -> (!nn.tensor<[B, T, 2], f32>, !nn.tensor<[B, T, 2], f32>, !nn.tensor<[B, T, 4], f32>)
  // x[:, -1, 1:8:2]
  // CHECK: nn.slice %[[X]] {squeeze = array<i64: 1>, starts = array<i64: 0, -1, 1>, steps = array<i64: 1, 1, 2>, stops = array<i64: 9223372036854775807, 9223372036854775807, 8>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, 4], f32>
  %11 = nn.slice %x {starts = array<i64: 0, -1, 1>, stops = array<i64: 9223372036854775807, 9223372036854775807, 8>, steps = array<i64: 1, 1, 2>, squeeze = array<i64: 1>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.transpose %[[X]] {perm = array<i64: 1, 0, 2>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[T, B, 8], f32>
  %12 = nn.transpose %x {perm = array<i64: 1, 0, 2>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[T, B, 8], f32>
  // CHECK: nn.reduce_mean %[[X]] {axes = array<i64: -1>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T], f32>
  %13 = nn.reduce_mean %x {axes = array<i64: -1>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T], f32>
  // CHECK: nn.reduce_sum %[[X]] {axes = array<i64: 1>, keepdim = true} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, 1, 8], f32>
  %14 = nn.reduce_sum %x {axes = array<i64: 1>, keepdim = true} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, 1, 8], f32>
  // CHECK: nn.reduce_sum %[[X]] : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[], f32>
  %15 = nn.reduce_sum %x : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[], f32>
  return
}

// CHECK-LABEL: func.func @recurrent
// CHECK-SAME: (%[[X:[^:]*]]: !nn.tensor<[B, T, 3], f32>
func.func @recurrent(%x: !nn.tensor<[B, T, 3], f32>, %h0: !nn.tensor<[2, B, 4], f32>,
                     %c0: !nn.tensor<[2, B, 4], f32>, %len: !nn.tensor<[B], i32>,
                     %rih: !nn.tensor<[4, 3], f32>, %rhh: !nn.tensor<[4, 4], f32>,
                     %rb: !nn.tensor<[4], f32>,
                     %lih0: !nn.tensor<[16, 3], f32>,
                     %lhh: !nn.tensor<[16, 4], f32>, %lb: !nn.tensor<[16], f32>,
                     %gih: !nn.tensor<[12, 3], f32>, %ghh: !nn.tensor<[12, 4], f32>,
                     %gb: !nn.tensor<[12], f32>) {
  // CHECK: nn.rnn %[[X]] weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {hidden_size = 4 : i64, nonlinearity = #nn<nonlinearity relu>} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[4], f32>, !nn.tensor<[4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  %0:2 = nn.rnn %x weights(%rih, %rhh, %rb, %rb) {hidden_size = 4 : i64, nonlinearity = #nn<nonlinearity relu>} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[4], f32>, !nn.tensor<[4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  // Two layers without biases, with h0, c0 and lengths.
  // CHECK: nn.lstm %[[X]] h0 %{{.*}} c0 %{{.*}} lengths %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {has_bias = false, hidden_size = 4 : i64, num_layers = 2 : i64, zoneout = 1.000000e-01 : f64}
  %1:3 = nn.lstm %x h0 %h0 c0 %c0 lengths %len weights(%lih0, %lhh, %lhh, %lhh) {has_bias = false, hidden_size = 4 : i64, num_layers = 2 : i64, zoneout = 0.1 : f64}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[B], i32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 4], f32>)
      -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[2, B, 4], f32>)
  // Bidirectional, one layer.
  // CHECK: nn.lstm %[[X]] h0 %{{.*}} weights({{.*}}) {bidirectional = true, hidden_size = 4 : i64} : ({{.*}}) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[2, B, 4], f32>)
  %2:3 = nn.lstm %x h0 %h0 weights(%lih0, %lhh, %lb, %lb, %lih0, %lhh, %lb, %lb) {bidirectional = true, hidden_size = 4 : i64}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16], f32>)
      -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[2, B, 4], f32>)
  // CHECK: nn.gru %[[X]] lengths %{{.*}} weights({{.*}}) {hidden_size = 4 : i64, variant = #nn<gru_variant cho2014>}
  %3:2 = nn.gru %x lengths %len weights(%gih, %ghh, %gb, %gb) {hidden_size = 4 : i64, variant = #nn<gru_variant cho2014>}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B], i32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[12], f32>, !nn.tensor<[12], f32>)
      -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// CHECK-LABEL: func.func @cells
// CHECK-SAME: (%[[X:[^:]*]]: !nn.tensor<[B, 3], f32>, %[[H:[^:]*]]: !nn.tensor<[B, 4], f32>
func.func @cells(%x: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 4], f32>,
                 %rih: !nn.tensor<[4, 3], f32>, %rhh: !nn.tensor<[4, 4], f32>, %rb: !nn.tensor<[4], f32>,
                 %lih: !nn.tensor<[16, 3], f32>, %lhh: !nn.tensor<[16, 4], f32>,
                 %gih: !nn.tensor<[12, 3], f32>, %ghh: !nn.tensor<[12, 4], f32>, %gb: !nn.tensor<[12], f32>) {
  // CHECK: nn.rnn_cell %[[X]], %[[H]], %{{.*}}, %{{.*}} bias(%{{.*}}, %{{.*}}) {nonlinearity = #nn<nonlinearity relu>} : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  %0 = nn.rnn_cell %x, %h, %rih, %rhh bias(%rb, %rb) {nonlinearity = #nn<nonlinearity relu>} : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.lstm_cell %[[X]], %[[H]], %[[H]], %{{.*}}, %{{.*}} : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>)
  %1:2 = nn.lstm_cell %x, %h, %h, %lih, %lhh : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>)
  // CHECK: nn.gru_cell %[[X]], %[[H]], %{{.*}}, %{{.*}} bias(%{{.*}}, %{{.*}}) {variant = #nn<gru_variant cho2014>}
  %2 = nn.gru_cell %x, %h, %gih, %ghh bias(%gb, %gb) {variant = #nn<gru_variant cho2014>} : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[12], f32>, !nn.tensor<[12], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[X:[^:]*]]: !nn.tensor<[B, T, 8], f32>
func.func @attention(%x: !nn.tensor<[B, T, 8], f32>, %win: !nn.tensor<[24, 8], f32>,
                     %bin: !nn.tensor<[24], f32>, %wout: !nn.tensor<[8, 8], f32>,
                     %bout: !nn.tensor<[8], f32>, %mask: !nn.tensor<[B, T], i1>,
                     %wqk: !nn.tensor<[16, 8], f32>, %rot: !nn.tensor<[4, 4, 8], f32>,
                     %rothf: !nn.tensor<[2, 4, 4, 8], f32>) {
  // CHECK: nn.attention %[[X]], %{{.*}} in_bias %{{.*}} out %{{.*}} out_bias %{{.*}} mask %{{.*}} {causal = true, dropout = 1.000000e-01 : f64, kind = #nn.dense, num_heads = 2 : i64, seed = 3 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[24], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[8], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  %0 = nn.attention %x, %win in_bias %bin out %wout out_bias %bout mask %mask {causal = true, dropout = 0.1 : f64, kind = #nn.dense, num_heads = 2 : i64, seed = 3 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[24], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[8], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.attention %[[X]], %{{.*}} out %{{.*}} {kind = #nn.dilated<window = 64, dilation = 2, global = [0, 5]>, num_heads = 4 : i64}
  %1 = nn.attention %x, %win out %wout {kind = #nn.dilated<window = 64, dilation = 2, global = [0, 5]>, num_heads = 4 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.attention %[[X]], %{{.*}} out %{{.*}} {kind = #nn.dilated<window = 3, dilation = 1>, num_heads = 1 : i64}
  %2 = nn.attention %x, %win out %wout {kind = #nn.dilated<window = 3, dilation = 1>, num_heads = 1 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.attention %[[X]], %{{.*}} out %{{.*}} rotations %{{.*}} {kind = #nn.lsh<hashes = 4, chunk = 64, convention = "nncc">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[4, 4, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %3 = nn.attention %x, %wqk out %wout rotations %rot {kind = #nn.lsh<hashes = 4, chunk = 64, convention = "nncc">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[4, 4, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // Hugging Face's convention (the default, not printed): per-head rotations.
  // CHECK: nn.attention %[[X]], %{{.*}} out %{{.*}} rotations %{{.*}} {kind = #nn.lsh<hashes = 4, chunk = 64>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[2, 4, 4, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %4 = nn.attention %x, %wqk out %wout rotations %rothf {kind = #nn.lsh<hashes = 4, chunk = 64, convention = "hf">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[2, 4, 4, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  // CHECK: nn.attention %[[X]], %{{.*}} out %{{.*}} {causal = true, kind = #nn.local<chunk = 4, before = 1, after = 0>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  %local = nn.attention %x, %win out %wout {causal = true, kind = #nn.local<chunk = 4, before = 1, after = 0>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
  return
}

// CHECK-LABEL: func.func @control
// CHECK-SAME: (%[[X:[^:]*]]: !nn.tensor<[B, 8], f32>, %[[T0:[^:]*]]: !nn.tensor<[], f32>, %[[T1:[^:]*]]: !nn.tensor<[], f32>
func.func @control(%x: !nn.tensor<[B, 8], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>,
                   %seq: !nn.tensor<[B, T, 3], f32>, %times: !nn.tensor<[B, T], f32>,
                   %h0: !nn.tensor<[B, 5], f32>) {
  // CHECK: nn.reversible %[[X]] : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
  // CHECK-NEXT: ^bb0(%[[X2:.*]]: !nn.tensor<[B, 4], f32>):
  // CHECK-NEXT: %[[FX:.*]] = nn.relu %[[X2]]
  // CHECK-NEXT: nn.yield %[[FX]] : !nn.tensor<[B, 4], f32>
  // CHECK-NEXT: } g {
  // CHECK-NEXT: ^bb0(%[[Y1:.*]]: !nn.tensor<[B, 4], f32>):
  // CHECK-NEXT: nn.yield %[[Y1]] : !nn.tensor<[B, 4], f32>
  // CHECK-NEXT: }
  %0 = nn.reversible %x : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
  ^bb0(%x2: !nn.tensor<[B, 4], f32>):
    %f = nn.relu %x2 : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %f : !nn.tensor<[B, 4], f32>
  } g {
  ^bb0(%y1: !nn.tensor<[B, 4], f32>):
    nn.yield %y1 : !nn.tensor<[B, 4], f32>
  }
  // CHECK: nn.odesolve rk4 %[[X]], %[[T0]], %[[T1]] {adjoint = true, steps = 10 : i64} : (!nn.tensor<[B, 8], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 8], f32> {
  // CHECK-NEXT: ^bb0(%[[T:.*]]: !nn.tensor<[], f32>, %[[H:.*]]: !nn.tensor<[B, 8], f32>):
  // CHECK-NEXT: %[[DH:.*]] = nn.mul %[[H]], %[[T]]
  // CHECK-NEXT: nn.yield %[[DH]]
  %1 = nn.odesolve rk4 %x, %t0, %t1 {adjoint = true, steps = 10 : i64} : (!nn.tensor<[B, 8], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 8], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 8], f32>):
    %dh = nn.mul %h, %t : (!nn.tensor<[B, 8], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 8], f32>
    nn.yield %dh : !nn.tensor<[B, 8], f32>
  }
  // CHECK: nn.odesolve dopri5 %[[X]], %[[T0]], %[[T1]] {atol = 1.250000e-01 : f64, rtol = 2.500000e-01 : f64}
  %2 = nn.odesolve dopri5 %x, %t0, %t1 {rtol = 0.25 : f64, atol = 0.125 : f64} : (!nn.tensor<[B, 8], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 8], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 8], f32>):
    nn.yield %h : !nn.tensor<[B, 8], f32>
  }
  // CHECK: nn.ode_rnn euler %{{.*}}, %{{.*}}, %{{.*}} {hidden_size = 5 : i64, steps = 2 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>, !nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  // CHECK: } cell {
  // CHECK: ^bb0(%{{.*}}: !nn.tensor<[B, 3], f32>, %{{.*}}: !nn.tensor<[B, 5], f32>):
  %3 = nn.ode_rnn euler %seq, %times, %h0 {hidden_size = 5 : i64, steps = 2 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>, !nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    %dh = nn.tanh %h : (!nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 5], f32>
    nn.yield %dh : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  // CHECK: nn.ode_rnn dopri5 %{{.*}}, %{{.*}} {hidden_size = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32>
  %4 = nn.ode_rnn dopri5 %seq, %times {hidden_size = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[P:[^:]*]]: !nn.tensor<[B, 3], f32>, %[[Q:[^:]*]]: !nn.tensor<[B, 3], f32>, %[[L:[^:]*]]: !nn.tensor<[B, T, 10], f32>, %[[Y:[^:]*]]: !nn.tensor<[B, T], i64>, %[[W:[^:]*]]: !nn.tensor<[3], f32>)
func.func @losses(%p: !nn.tensor<[B, 3], f32>, %q: !nn.tensor<[B, 3], f32>,
                  %logits: !nn.tensor<[B, T, 10], f32>, %y: !nn.tensor<[B, T], i64>,
                  %w: !nn.tensor<[3], f32>) {
  // CHECK: nn.mse %[[P]], %[[Q]] : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>) -> !nn.tensor<[], f32>
  %0 = nn.mse %p, %q : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>) -> !nn.tensor<[], f32>
  // CHECK: nn.cross_entropy %[[L]], %[[Y]] {ignore_index = 0 : i64} : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T], i64>) -> !nn.tensor<[], f32>
  %1 = nn.cross_entropy %logits, %y {ignore_index = 0 : i64} : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T], i64>) -> !nn.tensor<[], f32>
  // CHECK: nn.cross_entropy %[[L]], %[[Y]] : (
  %2 = nn.cross_entropy %logits, %y : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T], i64>) -> !nn.tensor<[], f32>
  // CHECK: nn.bce_with_logits %[[P]], %[[Q]], %[[W]] : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>, !nn.tensor<[3], f32>) -> !nn.tensor<[], f32>
  %3 = nn.bce_with_logits %p, %q, %w : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>, !nn.tensor<[3], f32>) -> !nn.tensor<[], f32>
  // CHECK: nn.bce_with_logits %[[P]], %[[Q]] : (
  %4 = nn.bce_with_logits %p, %q : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>) -> !nn.tensor<[], f32>
  return
}
