// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per error path of the nn verifiers and type inference.

//===----------------------------------------------------------------------===//
// Structural ops
//===----------------------------------------------------------------------===//

func.func @get_parameter_missing() {
  // expected-error @+1 {{'nn.get_parameter' op 'w' does not name an nn.parameter}}
  %w = nn.get_parameter @w : !nn.tensor<[2], f32>
  return
}

// -----

nn.parameter @w : !nn.tensor<[2], f32>
func.func @get_parameter_type() {
  // expected-error @+1 {{result type '!nn.tensor<[3], f32>' does not match the type '!nn.tensor<[2], f32>' of parameter 'w'}}
  %w = nn.get_parameter @w : !nn.tensor<[3], f32>
  return
}

// -----

func.func @parameter_not_in_module() {
  // expected-error @+1 {{'nn.parameter' op expects parent op 'builtin.module'}}
  nn.parameter @w : !nn.tensor<[2], f32>
  return
}

// -----

// expected-error @+1 {{'nn.parameter' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor whose dims are static, symbolic or unknown}}
nn.parameter @w : f32

// -----

func.func @constant_type() {
  // expected-error @+1 {{'nn.constant' op value type must be one of f32, f64, bf16, f16, i32, i64, i1, got 'i8'}}
  %c = nn.constant 1 : i8
  return
}

// -----

func.func @constant_kind() {
  // expected-error @+1 {{'nn.constant' op value must be a float or integer attribute}}
  %c = nn.constant "one"
  return
}

// -----

func.func @constant_result() {
  // expected-error @+2 {{'nn.constant' op inferred type(s) '!nn.tensor<[], f32>' are incompatible with return type(s) of operation '!nn.tensor<[1], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %c = "nn.constant"() <{value = 1.0 : f32}> : () -> !nn.tensor<[1], f32>
  return
}

// -----

func.func @yield_parent(%x: !nn.tensor<[2], f32>) {
  // expected-error @+1 {{'nn.yield' op expects parent op to be one of 'nn.reversible, nn.odesolve, nn.ode_rnn, nn.odesolve_grad, nn.ode_rnn_grad'}}
  nn.yield %x : !nn.tensor<[2], f32>
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// -----

func.func @add_element_type(%x: !nn.tensor<[2], f32>, %y: !nn.tensor<[2], f64>) {
  // expected-error @+2 {{'nn.add' op expected rhs to have element type 'f32', got 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.add %x, %y : (!nn.tensor<[2], f32>, !nn.tensor<[2], f64>) -> !nn.tensor<[2], f32>
  return
}

// -----

func.func @sub_broadcast(%x: !nn.tensor<[B, 3], f32>, %y: !nn.tensor<[T, 3], f32>) {
  // expected-error @+2 {{'nn.sub' op operands of shapes [B, 3] and [T, 3] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.sub %x, %y : (!nn.tensor<[B, 3], f32>, !nn.tensor<[T, 3], f32>) -> !nn.tensor<[B, 3], f32>
  return
}

// -----

func.func @mul_static_broadcast(%x: !nn.tensor<[2, 3], f32>, %y: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.mul' op operands of shapes [2, 3] and [4] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.mul %x, %y : (!nn.tensor<[2, 3], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[2, 3], f32>
  return
}

// -----

func.func @div_result(%x: !nn.tensor<[B, 3], f32>) {
  // expected-error @+2 {{'nn.div' op inferred type(s) '!nn.tensor<[B, 3], f32>' are incompatible with return type(s) of operation '!nn.tensor<[T, 3], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.div %x, %x : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>) -> !nn.tensor<[T, 3], f32>
  return
}

// -----

func.func @relu_integer(%x: !nn.tensor<[2], i32>) {
  // expected-error @+1 {{'nn.relu' op operand #0 must be nn tensor of floating-point values}}
  %0 = nn.relu %x : (!nn.tensor<[2], i32>) -> !nn.tensor<[2], i32>
  return
}

// -----

func.func @tanh_result(%x: !nn.tensor<[2], f32>) {
  // expected-error @+2 {{'nn.tanh' op inferred type(s) '!nn.tensor<[2], f32>' are incompatible with return type(s) of operation '!nn.tensor<[2], f64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.tanh %x : (!nn.tensor<[2], f32>) -> !nn.tensor<[2], f64>
  return
}

// -----

func.func @softmax_axis(%x: !nn.tensor<[2, 3], f32>) {
  // expected-error @+1 {{'nn.softmax' op axis 2 is out of range for '!nn.tensor<[2, 3], f32>'}}
  %0 = nn.softmax %x {axis = 2 : i64} : (!nn.tensor<[2, 3], f32>) -> !nn.tensor<[2, 3], f32>
  return
}

// -----

func.func @gelu_approx(%x: !nn.tensor<[2], f32>) {
  // expected-error @+2 {{expected ::nncc::nn::GeluApproximation to be one of: none, tanh}}
  // expected-error @+1 {{failed to parse NN_GeluApproximationAttr parameter 'value'}}
  %0 = nn.gelu %x {approximate = #nn<gelu_approx erf>} : (!nn.tensor<[2], f32>) -> !nn.tensor<[2], f32>
  return
}

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_rank(%x: !nn.tensor<[4], f32>, %y: !nn.tensor<[4, 2], f32>) {
  // expected-error @+2 {{'nn.matmul' op expected lhs of rank >= 2, got '!nn.tensor<[4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %x, %y : (!nn.tensor<[4], f32>, !nn.tensor<[4, 2], f32>) -> !nn.tensor<[2], f32>
  return
}

// -----

func.func @matmul_contracting(%x: !nn.tensor<[B, 3, 4], f32>, %y: !nn.tensor<[5, 2], f32>) {
  // expected-error @+2 {{'nn.matmul' op contracting dims differ: lhs [B, 3, 4] has K = 4, rhs [5, 2] has K = 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %x, %y : (!nn.tensor<[B, 3, 4], f32>, !nn.tensor<[5, 2], f32>) -> !nn.tensor<[B, 3, 2], f32>
  return
}

// -----

func.func @matmul_batch(%x: !nn.tensor<[B, 3, 4], f32>, %y: !nn.tensor<[T, 4, 2], f32>) {
  // expected-error @+2 {{'nn.matmul' op batch dims of [B, 3, 4] and [T, 4, 2] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %x, %y : (!nn.tensor<[B, 3, 4], f32>, !nn.tensor<[T, 4, 2], f32>) -> !nn.tensor<[B, 3, 2], f32>
  return
}

// -----

func.func @matmul_element_type(%x: !nn.tensor<[3, 4], f32>, %y: !nn.tensor<[4, 2], f16>) {
  // expected-error @+2 {{'nn.matmul' op expected rhs to have element type 'f32', got 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %x, %y : (!nn.tensor<[3, 4], f32>, !nn.tensor<[4, 2], f16>) -> !nn.tensor<[3, 2], f32>
  return
}

// -----

func.func @linear_weight_rank(%x: !nn.tensor<[B, 4], f32>, %w: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.linear' op expected weight of rank 2, got '!nn.tensor<[4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.linear %x, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @linear_in(%x: !nn.tensor<[B, 4], f32>, %w: !nn.tensor<[3, 5], f32>) {
  // expected-error @+2 {{'nn.linear' op expected weight [out, in] with in = the last dim of x of shape [3, 4], got [3, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.linear %x, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[3, 5], f32>) -> !nn.tensor<[B, 3], f32>
  return
}

// -----

func.func @linear_bias(%x: !nn.tensor<[B, 4], f32>, %w: !nn.tensor<[3, 4], f32>, %b: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.linear' op expected bias of shape [3], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.linear %x, %w, %b : (!nn.tensor<[B, 4], f32>, !nn.tensor<[3, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 3], f32>
  return
}

// -----

func.func @embedding_indices(%i: !nn.tensor<[B], f32>, %t: !nn.tensor<[10, 4], f32>) {
  // expected-error @+1 {{'nn.embedding' op operand #0 must be nn tensor of i32 or i64 values}}
  %0 = nn.embedding %i, %t : (!nn.tensor<[B], f32>, !nn.tensor<[10, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @embedding_table(%i: !nn.tensor<[B], i64>, %t: !nn.tensor<[10], f32>) {
  // expected-error @+2 {{'nn.embedding' op expected table of rank 2, got '!nn.tensor<[10], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.embedding %i, %t : (!nn.tensor<[B], i64>, !nn.tensor<[10], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @layer_norm_weight(%x: !nn.tensor<[B, 4], f32>, %w: !nn.tensor<[5], f32>) {
  // expected-error @+2 {{'nn.layer_norm' op expected weight of shape [4], got [5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.layer_norm %x weight %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[5], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @layer_norm_eps(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.layer_norm' op eps must be > 0, got 0}}
  %0 = nn.layer_norm %x {eps = 0.0 : f64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @dropout_p(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.dropout' op p must be in [0, 1), got 1}}
  %0 = nn.dropout %x {p = 1.0 : f64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @zoneout_states(%x: !nn.tensor<[B, 4], f32>, %y: !nn.tensor<[B, 5], f32>) {
  // expected-error @+2 {{'nn.zoneout' op states have incompatible types '!nn.tensor<[B, 4], f32>' and '!nn.tensor<[B, 5], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.zoneout %x, %y : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @zoneout_p(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.zoneout' op p must be in [0, 1), got -5.000000e-01}}
  %0 = nn.zoneout %x, %x {p = -0.5 : f64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @sinusoidal_odd(%x: !nn.tensor<[B, T, 5], f32>) {
  // expected-error @+2 {{'nn.sinusoidal_position' op embedding size E must be even, got 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.sinusoidal_position %x : (!nn.tensor<[B, T, 5], f32>) -> !nn.tensor<[B, T, 5], f32>
  return
}

// -----

func.func @sinusoidal_rank(%x: !nn.tensor<[T, 4], f32>) {
  // expected-error @+2 {{'nn.sinusoidal_position' op expected x [B, T, E] of rank 3, got '!nn.tensor<[T, 4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.sinusoidal_position %x : (!nn.tensor<[T, 4], f32>) -> !nn.tensor<[T, 4], f32>
  return
}

// -----

func.func @learned_length(%x: !nn.tensor<[B, 20, 4], f32>, %t: !nn.tensor<[16, 4], f32>) {
  // expected-error @+2 {{'nn.learned_position' op sequence length 20 exceeds the 16 positions of the table}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.learned_position %x, %t : (!nn.tensor<[B, 20, 4], f32>, !nn.tensor<[16, 4], f32>) -> !nn.tensor<[B, 20, 4], f32>
  return
}

// -----

func.func @learned_embed(%x: !nn.tensor<[B, T, 4], f32>, %t: !nn.tensor<[16, 8], f32>) {
  // expected-error @+2 {{'nn.learned_position' op expected table [P, E] of shape [16, 4], got [16, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.learned_position %x, %t : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[16, 8], f32>) -> !nn.tensor<[B, T, 4], f32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+2 {{'nn.concat' op expected at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "nn.concat"() : () -> !nn.tensor<[2], f32>
  return
}

// -----

func.func @concat_axis(%x: !nn.tensor<[2], f32>) {
  // expected-error @+2 {{'nn.concat' op axis 1 is out of range for '!nn.tensor<[2], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat %x, %x {axis = 1 : i64} : (!nn.tensor<[2], f32>, !nn.tensor<[2], f32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @concat_rank(%x: !nn.tensor<[2], f32>, %y: !nn.tensor<[2, 2], f32>) {
  // expected-error @+2 {{'nn.concat' op expected input #1 of rank 1, got '!nn.tensor<[2, 2], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat %x, %y : (!nn.tensor<[2], f32>, !nn.tensor<[2, 2], f32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @concat_dims(%x: !nn.tensor<[B, 2], f32>, %y: !nn.tensor<[T, 2], f32>) {
  // expected-error @+2 {{'nn.concat' op input #1 has shape [T, 2], incompatible with [B, 2] outside axis 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat %x, %y {axis = 1 : i64} : (!nn.tensor<[B, 2], f32>, !nn.tensor<[T, 2], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @concat_element_type(%x: !nn.tensor<[2], f32>, %y: !nn.tensor<[2], i32>) {
  // expected-error @+2 {{'nn.concat' op expected input #1 to have element type 'f32', got 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat %x, %y : (!nn.tensor<[2], f32>, !nn.tensor<[2], i32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @split_axis(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.split' op axis -2 is out of range for '!nn.tensor<[4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.split %x {axis = -2 : i64, sizes = array<i64: 2, 2>} : (!nn.tensor<[4], f32>) -> (!nn.tensor<[2], f32>, !nn.tensor<[2], f32>)
  return
}

// -----

func.func @split_negative(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.split' op sizes must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.split %x {sizes = array<i64: 5, -1>} : (!nn.tensor<[4], f32>) -> (!nn.tensor<[5], f32>, !nn.tensor<[2], f32>)
  return
}

// -----

func.func @split_sum(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.split' op sizes add up to 5 but dim 0 of '!nn.tensor<[4], f32>' is 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.split %x {sizes = array<i64: 2, 3>} : (!nn.tensor<[4], f32>) -> (!nn.tensor<[2], f32>, !nn.tensor<[3], f32>)
  return
}

// -----

func.func @split_symbolic(%x: !nn.tensor<[T], f32>) {
  // expected-error @+2 {{'nn.split' op cannot split the symbolic dim T into static sizes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.split %x {sizes = array<i64: 2, 3>} : (!nn.tensor<[T], f32>) -> (!nn.tensor<[2], f32>, !nn.tensor<[3], f32>)
  return
}

// -----

func.func @split_empty(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.split' op expected at least one size}}
  // expected-error @+1 {{failed to infer returned types}}
  "nn.split"(%x) <{axis = 0 : i64, sizes = array<i64>}> : (!nn.tensor<[4], f32>) -> ()
  return
}

// -----

func.func @split_results(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.split' op inferred type(s) '!nn.tensor<[2], f32>', '!nn.tensor<[2], f32>' are incompatible with return type(s) of operation '!nn.tensor<[4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "nn.split"(%x) <{axis = 0 : i64, sizes = array<i64: 2, 2>}> : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @slice_count(%x: !nn.tensor<[4, 4], f32>) {
  // expected-error @+2 {{'nn.slice' op expected 2 starts, stops and steps (one per dim of '!nn.tensor<[4, 4], f32>'), got 1, 2 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0>, stops = array<i64: 4, 4>, steps = array<i64: 1, 1>} : (!nn.tensor<[4, 4], f32>) -> !nn.tensor<[4, 4], f32>
  return
}

// -----

func.func @slice_step(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.slice' op steps must be >= 1, got 0 for dim 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0>, stops = array<i64: 4>, steps = array<i64: 0>} : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @slice_squeeze_range(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.slice' op squeezed dim 1 is out of range for '!nn.tensor<[4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0>, stops = array<i64: 1>, steps = array<i64: 1>, squeeze = array<i64: 1>} : (!nn.tensor<[4], f32>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @slice_squeeze_twice(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.slice' op dim 0 is squeezed twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0>, stops = array<i64: 1>, steps = array<i64: 1>, squeeze = array<i64: 0, -1>} : (!nn.tensor<[4], f32>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @slice_squeeze_length(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.slice' op squeezed dim 0 must select one element, but 0:2:1 selects 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0>, stops = array<i64: 2>, steps = array<i64: 1>, squeeze = array<i64: 0>} : (!nn.tensor<[4], f32>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @transpose_perm(%x: !nn.tensor<[2, 3], f32>) {
  // expected-error @+2 {{'nn.transpose' op perm must be a permutation of [0, 2) for '!nn.tensor<[2, 3], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.transpose %x {perm = array<i64: 0, 0>} : (!nn.tensor<[2, 3], f32>) -> !nn.tensor<[2, 2], f32>
  return
}

// -----

func.func @reduce_axis(%x: !nn.tensor<[2, 3], f32>) {
  // expected-error @+2 {{'nn.reduce_mean' op axis 3 is out of range for '!nn.tensor<[2, 3], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.reduce_mean %x {axes = array<i64: 3>} : (!nn.tensor<[2, 3], f32>) -> !nn.tensor<[2], f32>
  return
}

// -----

func.func @reduce_twice(%x: !nn.tensor<[2, 3], f32>) {
  // expected-error @+2 {{'nn.reduce_sum' op axis 1 is reduced twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.reduce_sum %x {axes = array<i64: 1, -1>} : (!nn.tensor<[2, 3], f32>) -> !nn.tensor<[2], f32>
  return
}

//===----------------------------------------------------------------------===//
// Recurrent ops
//===----------------------------------------------------------------------===//

// -----

func.func @rnn_hidden_size(%x: !nn.tensor<[B, T, 3], f32>) {
  // expected-error @+2 {{'nn.rnn' op hidden_size must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.rnn %x weights() {hidden_size = 0 : i64} : (!nn.tensor<[B, T, 3], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @rnn_num_layers(%x: !nn.tensor<[B, T, 3], f32>) {
  // expected-error @+2 {{'nn.rnn' op num_layers must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.rnn %x weights() {hidden_size = 4 : i64, num_layers = 0 : i64} : (!nn.tensor<[B, T, 3], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @rnn_rank(%x: !nn.tensor<[T, 3], f32>, %w: !nn.tensor<[4, 3], f32>) {
  // expected-error @+2 {{'nn.rnn' op expected x [B, T, I] of rank 3, got '!nn.tensor<[T, 3], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.rnn %x weights(%w, %w) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 3], f32>) -> (!nn.tensor<[T, 4], f32>, !nn.tensor<[1, 4], f32>)
  return
}

// -----

func.func @rnn_weight_count(%x: !nn.tensor<[B, T, 3], f32>, %w: !nn.tensor<[4, 3], f32>) {
  // expected-error @+2 {{'nn.rnn' op expected 8 weights (num_layers * directions * 4), got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.rnn %x weights(%w, %w) {hidden_size = 4 : i64, bidirectional = true} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 3], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[2, B, 4], f32>)
  return
}

// -----

func.func @rnn_weight_hh(%x: !nn.tensor<[B, T, 3], f32>, %w: !nn.tensor<[4, 3], f32>) {
  // expected-error @+2 {{'nn.rnn' op expected weight_hh_l0 of shape [4, 4], got [4, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.rnn %x weights(%w, %w) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 3], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @rnn_h0(%x: !nn.tensor<[B, T, 3], f32>, %h0: !nn.tensor<[1, T, 4], f32>, %wi: !nn.tensor<[4, 3], f32>, %wh: !nn.tensor<[4, 4], f32>) {
  // expected-error @+2 {{'nn.rnn' op expected h0 [L*D, B, H] of shape [1, B, 4], got [1, T, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.rnn %x h0 %h0 weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, T, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @rnn_lengths(%x: !nn.tensor<[B, T, 3], f32>, %len: !nn.tensor<[T], i32>, %wi: !nn.tensor<[4, 3], f32>, %wh: !nn.tensor<[4, 4], f32>) {
  // expected-error @+2 {{'nn.rnn' op expected lengths [B] of shape [B], got [T]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.rnn %x lengths %len weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[T], i32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @lstm_second_layer(%x: !nn.tensor<[B, T, 3], f32>, %wi: !nn.tensor<[16, 3], f32>, %wh: !nn.tensor<[16, 4], f32>) {
  // expected-error @+2 {{'nn.lstm' op expected weight_ih_l1 of shape [16, 4], got [16, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = nn.lstm %x weights(%wi, %wh, %wi, %wh) {hidden_size = 4 : i64, num_layers = 2 : i64, has_bias = false}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
      -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[2, B, 4], f32>)
  return
}

// -----

func.func @lstm_reverse_bias(%x: !nn.tensor<[B, T, 3], f32>, %wi: !nn.tensor<[16, 3], f32>, %wh: !nn.tensor<[16, 4], f32>, %b: !nn.tensor<[16], f32>, %bad: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.lstm' op expected bias_hh_l0_reverse of shape [16], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = nn.lstm %x weights(%wi, %wh, %b, %b, %wi, %wh, %b, %bad) {hidden_size = 4 : i64, bidirectional = true}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[4], f32>)
      -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[2, B, 4], f32>, !nn.tensor<[2, B, 4], f32>)
  return
}

// -----

func.func @lstm_c0(%x: !nn.tensor<[B, T, 3], f32>, %c0: !nn.tensor<[1, B, 5], f32>, %wi: !nn.tensor<[16, 3], f32>, %wh: !nn.tensor<[16, 4], f32>) {
  // expected-error @+2 {{'nn.lstm' op expected c0 [L*D, B, H] of shape [1, B, 4], got [1, B, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = nn.lstm %x c0 %c0 weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 5], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
      -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @lstm_zoneout(%x: !nn.tensor<[B, T, 3], f32>, %wi: !nn.tensor<[16, 3], f32>, %wh: !nn.tensor<[16, 4], f32>) {
  // expected-error @+1 {{'nn.lstm' op zoneout must be in [0, 1), got 1.5}}
  %0:3 = nn.lstm %x weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false, zoneout = 1.5 : f64}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
      -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @gru_gates(%x: !nn.tensor<[B, T, 3], f32>, %wi: !nn.tensor<[16, 3], f32>, %wh: !nn.tensor<[16, 4], f32>) {
  // expected-error @+2 {{'nn.gru' op expected weight_ih_l0 of shape [12, 3], got [16, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.gru %x weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
      -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @gru_weight_type(%x: !nn.tensor<[B, T, 3], f32>, %wi: !nn.tensor<[12, 3], f64>, %wh: !nn.tensor<[12, 4], f32>) {
  // expected-error @+2 {{'nn.gru' op expected weight_ih_l0 to have element type 'f32', got 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.gru %x weights(%wi, %wh) {hidden_size = 4 : i64, has_bias = false}
      : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f64>, !nn.tensor<[12, 4], f32>)
      -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @rnn_cell_batch(%x: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[T, 4], f32>, %wi: !nn.tensor<[4, 3], f32>, %wh: !nn.tensor<[4, 4], f32>) {
  // expected-error @+2 {{'nn.rnn_cell' op batch dims of x '!nn.tensor<[B, 3], f32>' and h '!nn.tensor<[T, 4], f32>' differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.rnn_cell %x, %h, %wi, %wh : (!nn.tensor<[B, 3], f32>, !nn.tensor<[T, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @rnn_cell_bias(%x: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 4], f32>, %wi: !nn.tensor<[4, 3], f32>, %wh: !nn.tensor<[4, 4], f32>, %b: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.rnn_cell' op expected both biases b_ih and b_hh or neither}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "nn.rnn_cell"(%x, %h, %wi, %wh, %b) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>}> : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @lstm_cell_state(%x: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 4], f32>, %c: !nn.tensor<[B, 5], f32>, %wi: !nn.tensor<[16, 3], f32>, %wh: !nn.tensor<[16, 4], f32>) {
  // expected-error @+2 {{'nn.lstm_cell' op expected c [B, H] of shape [B, 4], got [B, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.lstm_cell %x, %h, %c, %wi, %wh : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 5], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>)
  return
}

// -----

func.func @gru_cell_weight(%x: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 4], f32>, %wi: !nn.tensor<[12, 3], f32>, %wh: !nn.tensor<[12, 3], f32>) {
  // expected-error @+2 {{'nn.gru_cell' op expected w_hh [G*H, H] of shape [12, 4], got [12, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.gru_cell %x, %h, %wi, %wh : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 3], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// -----

func.func @attention_heads(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>) {
  // expected-error @+2 {{'nn.attention' op num_heads 4 does not divide the heads' width 6 (the embedding size)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 4 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_heads_positive(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>) {
  // expected-error @+2 {{'nn.attention' op num_heads must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 0 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_lsh_projection(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>) {
  // expected-error @+2 {{'nn.attention' op expected in_proj_weight [2A, E] of shape [12, 6], got [18, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_in_bias(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %bi: !nn.tensor<[6], f32>, %wo: !nn.tensor<[6, 6], f32>) {
  // expected-error @+2 {{'nn.attention' op expected in_proj_bias [3A] of shape [18], got [6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi in_bias %bi out %wo {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6], f32>, !nn.tensor<[6, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_out(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[5, 6], f32>) {
  // expected-error @+2 {{'nn.attention' op expected out_proj_weight [E, A] of shape [6, 6], got [5, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[5, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

// The heads' width A comes from out_proj_weight [E, A]: A = 8 here, so the
// in-projection must be [3A, E] = [24, 6].
func.func @attention_heads_width(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 8], f32>) {
  // expected-error @+2 {{'nn.attention' op expected in_proj_weight [3A, E] of shape [24, 6], got [18, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 8], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_heads_width_heads(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[21, 6], f32>, %wo: !nn.tensor<[6, 7], f32>) {
  // expected-error @+2 {{'nn.attention' op num_heads 2 does not divide the heads' width 7}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[21, 6], f32>, !nn.tensor<[6, 7], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_out_bias(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>, %bo: !nn.tensor<[5], f32>) {
  // expected-error @+2 {{'nn.attention' op expected out_proj_bias [E] of shape [6], got [5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo out_bias %bo {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>, !nn.tensor<[5], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_mask(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>, %m: !nn.tensor<[T, B], i1>) {
  // expected-error @+2 {{'nn.attention' op expected key_padding_mask [B, T] of shape [B, T], got [T, B]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo mask %m {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>, !nn.tensor<[T, B], i1>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_rotations_kind(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>, %r: !nn.tensor<[2, 3, 4], f32>) {
  // expected-error @+2 {{'nn.attention' op rotations are only allowed with #nn.lsh attention}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo rotations %r {kind = #nn.dilated<window = 4, dilation = 1>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>, !nn.tensor<[2, 3, 4], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_rotations_shape(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[12, 6], f32>, %wo: !nn.tensor<[6, 6], f32>, %r: !nn.tensor<[2, 6, 4], f32>) {
  // expected-error @+2 {{'nn.attention' op expected rotations [hashes, A / num_heads, buckets / 2] (convention nncc) of shape [2, 3, ?], got [2, 6, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo rotations %r {kind = #nn.lsh<hashes = 2, chunk = 4, convention = "nncc">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[12, 6], f32>, !nn.tensor<[6, 6], f32>, !nn.tensor<[2, 6, 4], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_rotations_shape_hf(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[12, 6], f32>, %wo: !nn.tensor<[6, 6], f32>, %r: !nn.tensor<[2, 3, 4], f32>) {
  // expected-error @+2 {{'nn.attention' op expected rotations [num_heads, A / num_heads, hashes, buckets / 2] (convention hf) of shape [2, 3, 2, ?], got [2, 3, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo rotations %r {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[12, 6], f32>, !nn.tensor<[6, 6], f32>, !nn.tensor<[2, 3, 4], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_rotations_heads_hf(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[12, 6], f32>, %wo: !nn.tensor<[6, 6], f32>, %r: !nn.tensor<[3, 3, 2, 4], f32>) {
  // expected-error @+2 {{'nn.attention' op expected rotations [num_heads, A / num_heads, hashes, buckets / 2] (convention hf) of shape [2, 3, 2, ?], got [3, 3, 2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %x, %wi out %wo rotations %r {kind = #nn.lsh<hashes = 2, chunk = 4, convention = "hf">, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[12, 6], f32>, !nn.tensor<[6, 6], f32>, !nn.tensor<[3, 3, 2, 4], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_dropout(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>) {
  // expected-error @+1 {{'nn.attention' op dropout must be in [0, 1), got 1}}
  %0 = nn.attention %x, %wi out %wo {dropout = 1.0 : f64, kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

// -----

func.func @attention_kind(%x: !nn.tensor<[B, T, 6], f32>, %wi: !nn.tensor<[18, 6], f32>, %wo: !nn.tensor<[6, 6], f32>) {
  // expected-error @+1 {{'nn.attention' op attribute 'kind' failed to satisfy constraint: AttentionKindAttrInterface instance}}
  %0 = nn.attention %x, %wi out %wo {kind = 1 : i64, num_heads = 2 : i64} : (!nn.tensor<[B, T, 6], f32>, !nn.tensor<[18, 6], f32>, !nn.tensor<[6, 6], f32>) -> !nn.tensor<[B, T, 6], f32>
  return
}

//===----------------------------------------------------------------------===//
// Composite control ops
//===----------------------------------------------------------------------===//

// -----

func.func @reversible_odd(%x: !nn.tensor<[B, 5], f32>) {
  // expected-error @+2 {{'nn.reversible' op the last dim of x must be even, got 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.reversible %x : (!nn.tensor<[B, 5], f32>) -> !nn.tensor<[B, 5], f32> f {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }
  return
}

// -----

func.func @reversible_arg_count(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.reversible' op region 'f' must have 1 block argument(s), got 2}}
  %0 = nn.reversible %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> f {
  ^bb0(%a: !nn.tensor<[B, 2], f32>, %b: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }
  return
}

// -----

func.func @reversible_arg_type(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.reversible' op region 'g' argument #0 has type '!nn.tensor<[B, 4], f32>', expected '!nn.tensor<[B, 2], f32>'}}
  %0 = nn.reversible %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> f {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    nn.yield %a : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @reversible_yield_count(%x: !nn.tensor<[B, 4], f32>) {
  %0 = nn.reversible %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> f {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    // expected-error @+1 {{'nn.yield' op yields 2 value(s), region 'f' of nn.reversible expects 1}}
    nn.yield %a, %a : !nn.tensor<[B, 2], f32>, !nn.tensor<[B, 2], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }
  return
}

// -----

func.func @reversible_yield_type(%x: !nn.tensor<[B, 4], f32>, %y: !nn.tensor<[T, 2], f32>) {
  %0 = nn.reversible %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> f {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    // expected-error @+1 {{'nn.yield' op value #0 has type '!nn.tensor<[T, 2], f32>', region 'f' of nn.reversible expects '!nn.tensor<[B, 2], f32>'}}
    nn.yield %y : !nn.tensor<[T, 2], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }
  return
}

// -----

func.func @reversible_empty_block(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{empty block: expect at least a terminator}}
  %0 = "nn.reversible"(%x) ({
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }, {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
  }) : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @reversible_no_terminator(%x: !nn.tensor<[B, 4], f32>) {
  %0 = "nn.reversible"(%x) ({
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }, {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    // expected-error @+1 {{block with no terminator}}
    %r = nn.relu %a : (!nn.tensor<[B, 2], f32>) -> !nn.tensor<[B, 2], f32>
  }) : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @reversible_blocks(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.reversible' op region #0 ('f') failed to verify constraint: region with 1 blocks}}
  %0 = "nn.reversible"(%x) ({
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  ^bb1:
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }, {
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }) : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @reversible_regions(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+1 {{'nn.reversible' op expected 2 regions}}
  %0 = "nn.reversible"(%x) ({
  ^bb0(%a: !nn.tensor<[B, 2], f32>):
    nn.yield %a : !nn.tensor<[B, 2], f32>
  }) : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @odesolve_t0(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[1], f32>, %t1: !nn.tensor<[], f32>) {
  // expected-error @+2 {{'nn.odesolve' op expected t0 (a scalar) of rank 0, got '!nn.tensor<[1], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.odesolve euler %h, %t0, %t1 {steps = 1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[1], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_t1(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f64>) {
  // expected-error @+2 {{'nn.odesolve' op expected t1 to have element type 'f32', got 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.odesolve euler %h, %t0, %t1 {steps = 1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f64>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_steps(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>) {
  // expected-error @+1 {{'nn.odesolve' op fixed-step method 'rk4' needs steps >= 1, got 0}}
  %0 = nn.odesolve rk4 %h, %t0, %t1 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_negative_steps(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>) {
  // expected-error @+1 {{'nn.odesolve' op steps must be >= 0, got -1}}
  %0 = nn.odesolve dopri5 %h, %t0, %t1 {steps = -1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_max_steps(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>) {
  // expected-error @+1 {{'nn.odesolve' op max_steps must be >= 1, got 0}}
  %0 = nn.odesolve dopri5 %h, %t0, %t1 {max_steps = 0 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_tolerance(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>) {
  // expected-error @+1 {{'nn.odesolve' op rtol and atol must be > 0, got 0.000000e+00 and 1.000000e-09}}
  %0 = nn.odesolve dopri5 %h, %t0, %t1 {rtol = 0.0 : f64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_method(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>) {
  // expected-error @+2 {{expected ::nncc::nn::ODEMethod to be one of: euler, rk4, dopri5}}
  // expected-error @+1 {{failed to parse NN_ODEMethodAttr parameter 'value'}}
  %0 = nn.odesolve heun %h, %t0, %t1 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_time_arg(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>) {
  // expected-error @+1 {{'nn.odesolve' op region 'dynamics' argument #0 has type '!nn.tensor<[B, 4], f32>', expected '!nn.tensor<[], f32>'}}
  %0 = nn.odesolve euler %h, %t0, %t1 {steps = 1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%s: !nn.tensor<[B, 4], f32>, %t: !nn.tensor<[], f32>):
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return
}

// -----

func.func @odesolve_yield(%h: !nn.tensor<[B, 4], f32>, %t0: !nn.tensor<[], f32>, %t1: !nn.tensor<[], f32>) {
  %0 = nn.odesolve euler %h, %t0, %t1 {steps = 1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
  ^bb0(%t: !nn.tensor<[], f32>, %s: !nn.tensor<[B, 4], f32>):
    // expected-error @+1 {{'nn.yield' op value #0 has type '!nn.tensor<[], f32>', region 'dynamics' of nn.odesolve expects '!nn.tensor<[B, 4], f32>'}}
    nn.yield %t : !nn.tensor<[], f32>
  }
  return
}

// -----

func.func @ode_rnn_hidden(%x: !nn.tensor<[B, T, 3], f32>, %ts: !nn.tensor<[B, T], f32>) {
  // expected-error @+2 {{'nn.ode_rnn' op hidden_size must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.ode_rnn dopri5 %x, %ts {hidden_size = 0 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

// -----

func.func @ode_rnn_times(%x: !nn.tensor<[B, T, 3], f32>, %ts: !nn.tensor<[T], f32>) {
  // expected-error @+2 {{'nn.ode_rnn' op expected times [B, T] of shape [B, T], got [T]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.ode_rnn dopri5 %x, %ts {hidden_size = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

// -----

func.func @ode_rnn_h0(%x: !nn.tensor<[B, T, 3], f32>, %ts: !nn.tensor<[B, T], f32>, %h0: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.ode_rnn' op expected h0 [B, H] of shape [B, 5], got [B, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.ode_rnn dopri5 %x, %ts, %h0 {hidden_size = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

// -----

// ode_rnn dynamics see each row's own time [B, 1], not a scalar.
func.func @ode_rnn_scalar_time(%x: !nn.tensor<[B, T, 3], f32>, %ts: !nn.tensor<[B, T], f32>) {
  // expected-error @+1 {{'nn.ode_rnn' op region 'dynamics' argument #0 has type '!nn.tensor<[], f32>', expected '!nn.tensor<[B, 1], f32>'}}
  %0 = nn.ode_rnn euler %x, %ts {hidden_size = 5 : i64, steps = 1 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

// -----

func.func @ode_rnn_steps(%x: !nn.tensor<[B, T, 3], f32>, %ts: !nn.tensor<[B, T], f32>) {
  // expected-error @+1 {{'nn.ode_rnn' op fixed-step method 'euler' needs steps >= 1, got 0}}
  %0 = nn.ode_rnn euler %x, %ts {hidden_size = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

// -----

func.func @ode_rnn_dynamics(%x: !nn.tensor<[B, T, 3], f32>, %ts: !nn.tensor<[B, T], f32>) {
  // expected-error @+1 {{'nn.ode_rnn' op region 'dynamics' argument #1 has type '!nn.tensor<[B, 4], f32>', expected '!nn.tensor<[B, 5], f32>'}}
  %0 = nn.ode_rnn dopri5 %x, %ts {hidden_size = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 4], f32>):
    nn.yield %h : !nn.tensor<[B, 4], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

// -----

func.func @ode_rnn_cell(%x: !nn.tensor<[B, T, 3], f32>, %ts: !nn.tensor<[B, T], f32>) {
  // expected-error @+1 {{'nn.ode_rnn' op region 'cell' argument #0 has type '!nn.tensor<[B, T, 3], f32>', expected '!nn.tensor<[B, 3], f32>'}}
  %0 = nn.ode_rnn dopri5 %x, %ts {hidden_size = 5 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T, 5], f32> dynamics {
  ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  } cell {
  ^bb0(%xt: !nn.tensor<[B, T, 3], f32>, %h: !nn.tensor<[B, 5], f32>):
    nn.yield %h : !nn.tensor<[B, 5], f32>
  }
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

func.func @mse_shapes(%p: !nn.tensor<[B, 3], f32>, %q: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.mse' op pred '!nn.tensor<[B, 3], f32>' and target '!nn.tensor<[B, 4], f32>' have incompatible types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.mse %p, %q : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @cross_entropy_target(%l: !nn.tensor<[B, T, 10], f32>, %y: !nn.tensor<[B], i64>) {
  // expected-error @+2 {{'nn.cross_entropy' op expected target (the logits' shape without C) of shape [B, T], got [B]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.cross_entropy %l, %y : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B], i64>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @cross_entropy_scalar(%l: !nn.tensor<[], f32>, %y: !nn.tensor<[], i64>) {
  // expected-error @+2 {{'nn.cross_entropy' op expected logits [..., C] of rank >= 1, got '!nn.tensor<[], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.cross_entropy %l, %y : (!nn.tensor<[], f32>, !nn.tensor<[], i64>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @bce_types(%l: !nn.tensor<[B, 3], f32>, %y: !nn.tensor<[B, 3], f64>) {
  // expected-error @+2 {{'nn.bce_with_logits' op logits '!nn.tensor<[B, 3], f32>' and target '!nn.tensor<[B, 3], f64>' have incompatible types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.bce_with_logits %l, %y : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f64>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @bce_pos_weight(%l: !nn.tensor<[B, 3], f32>, %w: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.bce_with_logits' op expected pos_weight [C] of shape [3], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.bce_with_logits %l, %l, %w : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[], f32>
  return
}

// -----

func.func @bce_pos_weight_scalar(%l: !nn.tensor<[], f32>, %w: !nn.tensor<[1], f32>) {
  // expected-error @+2 {{'nn.bce_with_logits' op pos_weight needs logits with a class dim, got '!nn.tensor<[], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.bce_with_logits %l, %l, %w : (!nn.tensor<[], f32>, !nn.tensor<[], f32>, !nn.tensor<[1], f32>) -> !nn.tensor<[], f32>
  return
}

//===----------------------------------------------------------------------===//
// Type parser
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{dims must be non-negative, got -1}}
func.func private @negative_dim(!nn.tensor<[-1], f32>)

// -----

// expected-error @+1 {{expected a dim: an integer, a symbol name or '?'}}
func.func private @float_dim(!nn.tensor<[2.5], f32>)

// -----

// expected-error @+1 {{expected a dim: an integer, a symbol name or '?'}}
func.func private @trailing_comma(!nn.tensor<[2, ], f32>)

// -----

// expected-error @+1 {{expected '['}}
func.func private @no_brackets(!nn.tensor<2, f32>)

// -----

// expected-error @+1 {{expected ','}}
func.func private @no_element_type(!nn.tensor<[2]>)

// -----

// expected-error @+1 {{element type must be one of f32, f64, bf16, f16, i32, i64, i1, got 'i8'}}
func.func private @bad_element_type(!nn.tensor<[2], i8>)

// -----

// expected-error @+1 {{element type must be one of f32, f64, bf16, f16, i32, i64, i1, got '!nn.tensor<[2], f32>'}}
func.func private @nested(!nn.tensor<[2], !nn.tensor<[2], f32>>)

// -----

// expected-error @+1 {{unbalanced '<' character in pretty dialect name}}
func.func private @unterminated(!nn.tensor<[2], f32)

// -----

// expected-error @+1 {{expected '<'}}
func.func private @no_params(!nn.tensor)

// -----

// expected-error @+1 {{unknown  type `matrix` in dialect `nn`}}
func.func private @unknown_type(!nn.matrix<[2], f32>)

//===----------------------------------------------------------------------===//
// Attribute parsers
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{unknown init kind 'xavier', expected uniform, normal, constant, zeros or ones}}
nn.parameter @w : !nn.tensor<[2], f32> init #nn.init<xavier>

// -----

// expected-error @+1 {{'uniform' init takes 2 value(s), got 1}}
nn.parameter @w : !nn.tensor<[2], f32> init #nn.init<uniform, 1.0>

// -----

// expected-error @+1 {{'zeros' init takes 0 value(s), got 1}}
nn.parameter @w : !nn.tensor<[2], f32> init #nn.init<zeros, 1.0>

// -----

// expected-error @+1 {{uniform init needs lo <= hi}}
nn.parameter @w : !nn.tensor<[2], f32> init #nn.init<uniform, 1.0, -1.0>

// -----

// expected-error @+1 {{normal init needs std >= 0}}
nn.parameter @w : !nn.tensor<[2], f32> init #nn.init<normal, 0.0, -1.0>

// -----

// expected-error @+1 {{expected floating point literal}}
nn.parameter @w : !nn.tensor<[2], f32> init #nn.init<constant, one>

// -----

// expected-error @+1 {{dilated attention window must be >= 1, got 0}}
func.func private @f() attributes {kind = #nn.dilated<window = 0, dilation = 1>}

// -----

// expected-error @+1 {{dilated attention dilation must be >= 1, got 0}}
func.func private @f() attributes {kind = #nn.dilated<window = 4, dilation = 0>}

// -----

// expected-error @+1 {{dilated attention global positions must be >= 0, got -1}}
func.func private @f() attributes {kind = #nn.dilated<window = 4, dilation = 1, global = [0, -1]>}

// -----

// expected-error @+2 {{expected '['}}
// expected-error @+1 {{failed to parse NN_DilatedAttentionAttr parameter 'global'}}
func.func private @f() attributes {kind = #nn.dilated<window = 4, dilation = 1, global = 0>}

// -----

// expected-error @+1 {{lsh attention hashes must be >= 1, got 0}}
func.func private @f() attributes {kind = #nn.lsh<hashes = 0, chunk = 4>}

// -----

// expected-error @+1 {{lsh attention chunk must be >= 1, got -4}}
func.func private @f() attributes {kind = #nn.lsh<hashes = 2, chunk = -4>}

// -----

// expected-error @+1 {{lsh attention convention must be "hf" or "nncc", got "trax"}}
func.func private @f() attributes {kind = #nn.lsh<hashes = 2, chunk = 4, convention = "trax">}

// -----

// expected-error @+1 {{struct is missing required parameter: chunk}}
func.func private @f() attributes {kind = #nn.lsh<hashes = 2>}

// -----

// expected-error @+1 {{local attention chunk must be >= 1, got 0}}
func.func private @f() attributes {kind = #nn.local<chunk = 0, before = 1, after = 0>}

// -----

// expected-error @+1 {{local attention before and after must be >= 0, got 1 and -1}}
func.func private @f() attributes {kind = #nn.local<chunk = 4, before = 1, after = -1>}

// -----

// expected-error @+2 {{expected ::nncc::nn::GRUVariant to be one of: pytorch, cho2014}}
// expected-error @+1 {{failed to parse NN_GRUVariantAttr parameter 'value'}}
func.func private @f() attributes {variant = #nn<gru_variant keras>}
