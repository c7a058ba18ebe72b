// RUN: nncc-opt %s | nncc-opt | FileCheck %s

// Round-trips the nn types and attributes.

// CHECK-LABEL: func.func private @element_types
// CHECK-SAME: !nn.tensor<[2], f32>, !nn.tensor<[2], f64>, !nn.tensor<[2], bf16>, !nn.tensor<[2], f16>, !nn.tensor<[2], i32>, !nn.tensor<[2], i64>, !nn.tensor<[2], i1>
func.func private @element_types(!nn.tensor<[2], f32>, !nn.tensor<[2], f64>, !nn.tensor<[2], bf16>,
                                 !nn.tensor<[2], f16>, !nn.tensor<[2], i32>, !nn.tensor<[2], i64>,
                                 !nn.tensor<[2], i1>)

// CHECK-LABEL: func.func private @dims
// CHECK-SAME: !nn.tensor<[], f32>
// CHECK-SAME: !nn.tensor<[0], f32>
// CHECK-SAME: !nn.tensor<[B, T, 256], f32>
// CHECK-SAME: !nn.tensor<[?, 10], i64>
// CHECK-SAME: !nn.tensor<[seq_len, _x, n.heads, 9223372036854775807], f32>
func.func private @dims(!nn.tensor<[], f32>, !nn.tensor<[0], f32>,
                        !nn.tensor<[B,T,256],f32>, !nn.tensor<[?, 10], i64>,
                        !nn.tensor<[seq_len, _x, n.heads, 9223372036854775807], f32>)

// CHECK-LABEL: func.func private @attributes
// CHECK-SAME: dense = #nn.dense
// CHECK-SAME: dilated = #nn.dilated<window = 64, dilation = 2, global = [0]>
// CHECK-SAME: dilated_local = #nn.dilated<window = 8, dilation = 1>
// CHECK-SAME: gelu = #nn<gelu_approx none>
// CHECK-SAME: gru = #nn<gru_variant pytorch>
// CHECK-SAME: init_constant = #nn.init<constant, -2.000000e+00>
// CHECK-SAME: init_normal = #nn.init<normal, 0.000000e+00, 2.000000e-02>
// CHECK-SAME: init_ones = #nn.init<ones>
// CHECK-SAME: init_uniform = #nn.init<uniform, -1.000000e+00, 1.000000e+00>
// CHECK-SAME: init_zeros = #nn.init<zeros>
// CHECK-SAME: lsh = #nn.lsh<hashes = 4, chunk = 64>
// CHECK-SAME: method = #nn<ode_method dopri5>
// CHECK-SAME: nonlinearity = #nn<nonlinearity relu>
func.func private @attributes() attributes {
  dense = #nn.dense,
  dilated = #nn.dilated<window = 64, dilation = 2, global = [0]>,
  dilated_local = #nn.dilated<window = 8, dilation = 1, global = []>,
  gelu = #nn<gelu_approx none>,
  gru = #nn<gru_variant pytorch>,
  init_constant = #nn.init<constant, -2.0>,
  init_normal = #nn.init<normal, 0.0, 0.02>,
  init_ones = #nn.init<ones>,
  init_uniform = #nn.init<uniform, -1.0, 1.0>,
  init_zeros = #nn.init<zeros>,
  lsh = #nn.lsh<hashes = 4, chunk = 64>,
  method = #nn<ode_method dopri5>,
  nonlinearity = #nn<nonlinearity relu>
}
