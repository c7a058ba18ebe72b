// RUN: nncc-opt %s -split-input-file -verify-diagnostics

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case0() {
  // expected-error @+1 {{dims must be static or symbolic}}
  %t = nnk.alloc : !nnk.buffer<[?, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case1() {
  // expected-error @+1 {{does not name an nn.parameter}}
  %w = nnk.weight @nope : !nnk.buffer<[4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case2() {
  // expected-error @+1 {{does not match the parameter}}
  %w = nnk.weight @p : !nnk.buffer<[5], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case3(%a: !nnk.buffer<[4], f32>, %b: !nnk.buffer<[5], f32>) {
  // expected-error @+1 {{must be compatible}}
  nnk.copy ins(%a) outs(%b) : !nnk.buffer<[4], f32>, !nnk.buffer<[5], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case4(%a: !nnk.buffer<[5], f32>, %b: !nnk.buffer<[4], f32>) {
  // expected-error @+1 {{does not broadcast to the output shape}}
  nnk.elementwise ins(%a : !nnk.buffer<[5], f32>) outs(%b : !nnk.buffer<[4], f32>) {
  ^bb0(%x: f32):
    nnk.yield %x : f32
  }
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case5(%a: !nnk.buffer<[4], f32>, %b: !nnk.buffer<[4], f32>) {
  // expected-error @+1 {{one argument per input}}
  nnk.elementwise ins(%a : !nnk.buffer<[4], f32>) outs(%b : !nnk.buffer<[4], f32>) {
  ^bb0(%x: f32, %y: f32):
    nnk.yield %x : f32
  }
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case6(%a: !nnk.buffer<[4], f32>, %b: !nnk.buffer<[4], f32>) {
  // expected-error @+1 {{must have the element type of its input}}
  nnk.elementwise ins(%a : !nnk.buffer<[4], f32>) outs(%b : !nnk.buffer<[4], f32>) {
  ^bb0(%x: f64):
    nnk.yield %x : f64
  }
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case7(%a: !nnk.buffer<[4], f32>, %b: !nnk.buffer<[4], f32>) {
  // expected-error @+1 {{must yield one value of the output element type}}
  nnk.elementwise ins(%a : !nnk.buffer<[4], f32>) outs(%b : !nnk.buffer<[4], f32>) {
  ^bb0(%x: f32):
    %c = arith.constant 1 : i32
    nnk.yield %c : i32
  }
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case8(%x: !nnk.buffer<[B, 8], f32>, %w: !nnk.buffer<[4, 7], f32>, %y: !nnk.buffer<[B, 4], f32>) {
  // expected-error @+1 {{must equal the weight's in-features}}
  nnk.gemm ins(%x, %w) outs(%y) : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[4, 7], f32>, !nnk.buffer<[B, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case9(%x: !nnk.buffer<[B, 8], f32>, %w: !nnk.buffer<[4, 8], f32>, %y: !nnk.buffer<[B, 5], f32>) {
  // expected-error @+1 {{out must have shape [B, 4]}}
  nnk.gemm ins(%x, %w) outs(%y) : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[4, 8], f32>, !nnk.buffer<[B, 5], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case10(%x: !nnk.buffer<[B, 8], f32>, %w: !nnk.buffer<[4, 8], f64>, %y: !nnk.buffer<[B, 4], f32>) {
  // expected-error @+1 {{share one element type}}
  nnk.gemm ins(%x, %w) outs(%y) : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[4, 8], f64>, !nnk.buffer<[B, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case11(%x: !nnk.buffer<[3, 8], f32>, %w: !nnk.buffer<[7, 2], f32>, %y: !nnk.buffer<[3, 2], f32>) {
  // expected-error @+1 {{contraction dims}}
  nnk.matmul ins(%x, %w) outs(%y) : !nnk.buffer<[3, 8], f32>, !nnk.buffer<[7, 2], f32>, !nnk.buffer<[3, 2], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case12(%x: !nnk.buffer<[B, 8], f32>, %w: !nnk.buffer<[7], f32>) {
  // expected-error @+1 {{weight must have shape [8]}}
  nnk.layer_norm ins(%x) weight(%w) outs(%x) : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[7], f32>, !nnk.buffer<[B, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case13(%x: !nnk.buffer<[B, 8], f32>) {
  // expected-error @+1 {{eps must be positive}}
  nnk.layer_norm ins(%x) outs(%x) {eps = 0.0 : f64} : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[B, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case14(%x: !nnk.buffer<[B, 8], f32>) {
  // expected-error @+1 {{out of range}}
  nnk.softmax ins(%x) outs(%x) {axis = 2 : i64} : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[B, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case15(%x: !nnk.buffer<[B, 8], f32>, %y: !nnk.buffer<[], f32>) {
  // expected-error @+1 {{sorted and distinct}}
  nnk.reduce ins(%x) outs(%y) {axes = array<i64: 1, 0>, kind = #nnk<reduce sum>} : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case16(%i: !nnk.buffer<[B], i32>, %t: !nnk.buffer<[10, 4], f32>, %y: !nnk.buffer<[B, 5], f32>) {
  // expected-error @+1 {{out must have shape [B, 4]}}
  nnk.embedding ins(%i, %t) outs(%y) : !nnk.buffer<[B], i32>, !nnk.buffer<[10, 4], f32>, !nnk.buffer<[B, 5], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case17(%x: !nnk.buffer<[B, T, 5], f32>) {
  // expected-error @+1 {{must be even}}
  nnk.sinusoidal_position ins(%x) outs(%x) : !nnk.buffer<[B, T, 5], f32>, !nnk.buffer<[B, T, 5], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case18(%x: !nnk.buffer<[4], f32>) {
  // expected-error @+1 {{p must be in [0, 1)}}
  nnk.dropout ins(%x) outs(%x) {p = 1.0 : f64} : !nnk.buffer<[4], f32>, !nnk.buffer<[4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case19(%a: !nnk.buffer<[4], f32>, %b: !nnk.buffer<[9], f32>) {
  // expected-error @+1 {{pieces sum to 8}}
  nnk.concat ins(%a, %a) outs(%b) {axis = 0 : i64} : !nnk.buffer<[4], f32>, !nnk.buffer<[4], f32>, !nnk.buffer<[9], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case20(%b: !nnk.buffer<[8], f32>, %a: !nnk.buffer<[4], f32>, %c: !nnk.buffer<[4], f32>) {
  // expected-error @+1 {{out of range}}
  nnk.split ins(%b) outs(%a, %c) {axis = 1 : i64} : !nnk.buffer<[8], f32>, !nnk.buffer<[4], f32>, !nnk.buffer<[4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case21(%a: !nnk.buffer<[4], f32>, %b: !nnk.buffer<[4], f32>) {
  // expected-error @+1 {{steps must be >= 1}}
  nnk.slice ins(%a) outs(%b) {starts = array<i64: 0>, steps = array<i64: 0>} : !nnk.buffer<[4], f32>, !nnk.buffer<[4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case22(%a: !nnk.buffer<[4, 4], f32>, %b: !nnk.buffer<[4, 4], f32>) {
  // expected-error @+1 {{must be a permutation}}
  nnk.transpose ins(%a) outs(%b) {perm = array<i64: 0, 0>} : !nnk.buffer<[4, 4], f32>, !nnk.buffer<[4, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case23(%p: !nnk.buffer<[B, T, 12], f32>, %w: !nnk.buffer<[16, 4], f32>, %y: !nnk.buffer<[B, T, 4], f32>) {
  // expected-error @+1 {{xproj must have shape [B, T, 16]}}
  nnk.recurrent_scan ins(%p, %w) outs(%y) {cell = #nnk<cell lstm>, hidden_size = 4 : i64} : !nnk.buffer<[B, T, 12], f32>, !nnk.buffer<[16, 4], f32>, !nnk.buffer<[B, T, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case24(%p: !nnk.buffer<[B, T, 12], f32>, %w: !nnk.buffer<[12, 4], f32>, %y: !nnk.buffer<[B, T, 4], f32>) {
  // expected-error @+1 {{reverse requires num_directions = 2}}
  nnk.recurrent_scan ins(%p, %w) outs(%y) {cell = #nnk<cell gru>, hidden_size = 4 : i64, reverse = true} : !nnk.buffer<[B, T, 12], f32>, !nnk.buffer<[12, 4], f32>, !nnk.buffer<[B, T, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case25(%p: !nnk.buffer<[B, T, 12], f32>, %w: !nnk.buffer<[12, 4], f32>, %y: !nnk.buffer<[B, T, 4], f32>, %h: !nnk.buffer<[1, B, 4], f32>) {
  // expected-error @+1 {{state_index is 1}}
  nnk.recurrent_scan ins(%p, %w) outs(%y) h_n(%h) {cell = #nnk<cell gru>, hidden_size = 4 : i64, state_index = 1 : i64} : !nnk.buffer<[B, T, 12], f32>, !nnk.buffer<[12, 4], f32>, !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[1, B, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case26(%p: !nnk.buffer<[B, 16], f32>, %h: !nnk.buffer<[B, 4], f32>, %w: !nnk.buffer<[16, 4], f32>) {
  // expected-error @+1 {{c and c_out are required for lstm}}
  nnk.recurrent_cell ins(%p, %h, %w) outs(%h) {cell = #nnk<cell lstm>} : !nnk.buffer<[B, 16], f32>, !nnk.buffer<[B, 4], f32>, !nnk.buffer<[16, 4], f32>, !nnk.buffer<[B, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case27(%q: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{not divisible by num_heads}}
  nnk.flash_attention ins(%q) outs(%o) {num_heads = 3 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case28(%q: !nnk.buffer<[B, T, 16], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{qkv must have shape [B, T, 24]}}
  nnk.flash_attention ins(%q) outs(%o) {num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case29(%q: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{window and dilation must be >= 1}}
  nnk.banded_attention ins(%q) outs(%o) {num_heads = 2 : i64, window = 0 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30(%q: !nnk.buffer<[B, T, 16], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{hashes and chunk must be >= 1}}
  nnk.lsh_attention ins(%q) outs(%o) {chunk = 0 : i64, hashes = 2 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30_dropout(%q: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{dropout must be in [0, 1), got 1.000000e+00}}
  nnk.flash_attention ins(%q) outs(%o) {dropout = 1.0 : f64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30_convention(%q: !nnk.buffer<[B, T, 16], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{convention must be "hf" or "nncc", got "trax"}}
  nnk.lsh_attention ins(%q) outs(%o) {chunk = 4 : i64, convention = "trax", hashes = 2 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30_rotations_hf(%q: !nnk.buffer<[B, T, 16], f32>, %r: !nnk.buffer<[2, 4, 2], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{rotations must have rank 4, got 3}}
  nnk.lsh_attention ins(%q) rotations(%r) outs(%o) {chunk = 4 : i64, hashes = 2 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[2, 4, 2], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30_rotations_heads_hf(%q: !nnk.buffer<[B, T, 16], f32>, %r: !nnk.buffer<[1, 4, 2, 2], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{rotations must have shape [2, 4, 2, 2], got [1, 4, 2, 2]}}
  nnk.lsh_attention ins(%q) rotations(%r) outs(%o) {chunk = 4 : i64, hashes = 2 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[1, 4, 2, 2], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30_grad_convention(%qkv: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>, %d: !nnk.buffer<[B, T, 24], f32>) {
  // expected-error @+1 {{convention applies only to kind lsh}}
  nnk.attention_grad ins(%qkv, %o) outs(%d) {convention = "nncc", kind = #nnk<attention dense>, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 24], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30_dropout_lsh(%q: !nnk.buffer<[B, T, 16], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{dropout must be in [0, 1), got -5.000000e-01}}
  nnk.lsh_attention ins(%q) outs(%o) {chunk = 4 : i64, dropout = -0.5 : f64, hashes = 2 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 16], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case30_lse(%q: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>, %l: !nnk.buffer<[B, T, 2], f32>) {
  // expected-error @+1 {{lse must have shape [B, 2, T]}}
  nnk.flash_attention ins(%q) outs(%o) lse(%l) {num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 2], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case31(%l: !nnk.buffer<[B, 5], f32>, %t: !nnk.buffer<[B], f32>, %o: !nnk.buffer<[], f32>) {
  // expected-error @+1 {{targets must be i32 or i64}}
  nnk.loss ins(%l, %t) outs(%o) {kind = #nnk<loss cross_entropy>} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B], f32>, !nnk.buffer<[], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case32(%l: !nnk.buffer<[B, 5], f32>) {
  // expected-error @+1 {{out must have rank 0}}
  nnk.loss ins(%l, %l) outs(%l) {kind = #nnk<loss mse>} : !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 5], f32>, !nnk.buffer<[B, 5], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case33(%h: !nnk.buffer<[B, 4], f32>, %t: !nnk.buffer<[], f32>, %w: !nnk.buffer<[2, B, 4], f32>) {
  // expected-error @+1 {{work must have shape [5, B, 4]}}
  nnk.ode_solve ins(%h, %t, %t) outs(%h) work(%w) {method = #nnk<ode_method rk4>, steps = 2 : i64} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[B, 4], f32>, !nnk.buffer<[2, B, 4], f32> {
  ^bb0(%a: !nnk.buffer<[], f32>, %b: !nnk.buffer<[B, 4], f32>, %c: !nnk.buffer<[B, 4], f32>):
    nnk.yield
  }
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case34(%h: !nnk.buffer<[B, 4], f32>, %t: !nnk.buffer<[], f32>, %w: !nnk.buffer<[2, B, 4], f32>) {
  // expected-error @+1 {{fixed-step methods need steps >= 1}}
  nnk.ode_solve ins(%h, %t, %t) outs(%h) work(%w) {method = #nnk<ode_method euler>} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[B, 4], f32>, !nnk.buffer<[2, B, 4], f32> {
  ^bb0(%a: !nnk.buffer<[], f32>, %b: !nnk.buffer<[B, 4], f32>, %c: !nnk.buffer<[B, 4], f32>):
    nnk.yield
  }
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case35(%h: !nnk.buffer<[B, 4], f32>, %t: !nnk.buffer<[], f32>, %w: !nnk.buffer<[2, B, 4], f32>) {
  // expected-error @+1 {{region 'dynamics' must have 3 arguments}}
  nnk.ode_solve ins(%h, %t, %t) outs(%h) work(%w) {method = #nnk<ode_method euler>, steps = 1 : i64} : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[], f32>, !nnk.buffer<[B, 4], f32>, !nnk.buffer<[2, B, 4], f32> {
  ^bb0(%a: !nnk.buffer<[], f32>, %b: !nnk.buffer<[B, 4], f32>):
    nnk.yield
  }
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @case36(%x: !nnk.buffer<[B, T, 3], f32>, %ts: !nnk.buffer<[B, T], f32>, %hs: !nnk.buffer<[B, T, 4], f32>, %w: !nnk.buffer<[3, B, 4], f32>, %xt: !nnk.buffer<[B, 3], f32>) {
  // expected-error @+1 {{work must have shape [4, B, 4]}}
  nnk.ode_rnn ins(%x, %ts) outs(%hs) work(%w, %xt) {hidden_size = 4 : i64, method = #nnk<ode_method euler>, steps = 1 : i64} : !nnk.buffer<[B, T, 3], f32>, !nnk.buffer<[B, T], f32>, !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[3, B, 4], f32>, !nnk.buffer<[B, 3], f32> dynamics {
  ^bb0(%a: !nnk.buffer<[B, 1], f32>, %b: !nnk.buffer<[B, 4], f32>, %c: !nnk.buffer<[B, 4], f32>):
    nnk.yield
  } cell {
  ^bb0(%a: !nnk.buffer<[B, 3], f32>, %b: !nnk.buffer<[B, 4], f32>, %c: !nnk.buffer<[B, 4], f32>):
    nnk.yield
  }
  return
}

// -----

// nnk.ode_rnn's dynamics take each row's time [B, 1], not a scalar.
nn.parameter @p : !nn.tensor<[4], f32>
func.func @ode_rnn_scalar_time(%x: !nnk.buffer<[B, T, 3], f32>, %ts: !nnk.buffer<[B, T], f32>, %hs: !nnk.buffer<[B, T, 4], f32>, %w: !nnk.buffer<[4, B, 4], f32>, %xt: !nnk.buffer<[B, 3], f32>) {
  // expected-error @+1 {{region 'dynamics' argument #0 must be '!nnk.buffer<[B, 1], f32>', got '!nnk.buffer<[], f32>'}}
  nnk.ode_rnn ins(%x, %ts) outs(%hs) work(%w, %xt) {hidden_size = 4 : i64, method = #nnk<ode_method euler>, steps = 1 : i64} : !nnk.buffer<[B, T, 3], f32>, !nnk.buffer<[B, T], f32>, !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[4, B, 4], f32>, !nnk.buffer<[B, 3], f32> dynamics {
  ^bb0(%a: !nnk.buffer<[], f32>, %b: !nnk.buffer<[B, 4], f32>, %c: !nnk.buffer<[B, 4], f32>):
    nnk.yield
  } cell {
  ^bb0(%a: !nnk.buffer<[B, 3], f32>, %b: !nnk.buffer<[B, 4], f32>, %c: !nnk.buffer<[B, 4], f32>):
    nnk.yield
  }
  return
}

// -----

func.func @recurrent_grad_ckpt_without_reserve(%x: !nnk.buffer<[2, 5, 3], f32>, %wih: !nnk.buffer<[12, 3], f32>, %whh: !nnk.buffer<[12, 4], f32>, %dx: !nnk.buffer<[2, 5, 3], f32>, %dh0: !nnk.buffer<[1, 2, 4], f32>, %dwih: !nnk.buffer<[12, 3], f32>, %dwhh: !nnk.buffer<[12, 4], f32>) {
  // expected-error @+1 {{'nnk.recurrent_grad' op 'checkpoint_every' needs the 'reserve' of a checkpointed 'nnk.recurrent_forward'}}
  nnk.recurrent_grad ins(%x) weights(%wih, %whh) outs(%dx, %dh0) dweights(%dwih, %dwhh) {cell = #nnk<cell gru>, hidden_size = 4 : i64, has_bias = false, checkpoint_every = 2 : i64} : !nnk.buffer<[2, 5, 3], f32>, !nnk.buffer<[12, 3], f32>, !nnk.buffer<[12, 4], f32>, !nnk.buffer<[2, 5, 3], f32>, !nnk.buffer<[1, 2, 4], f32>, !nnk.buffer<[12, 3], f32>, !nnk.buffer<[12, 4], f32>
  return
}

// -----

func.func @recurrent_forward_ckpt_zero(%x: !nnk.buffer<[2, 5, 3], f32>, %wih: !nnk.buffer<[12, 3], f32>, %whh: !nnk.buffer<[12, 4], f32>, %y: !nnk.buffer<[2, 5, 4], f32>, %r: !nnk.buffer<[2, 5, 4], f32>) {
  // expected-error @+1 {{'nnk.recurrent_forward' op 'checkpoint_every' must be at least 1, got 0}}
  nnk.recurrent_forward ins(%x) weights(%wih, %whh) outs(%y) reserve(%r) {cell = #nnk<cell gru>, hidden_size = 4 : i64, has_bias = false, checkpoint_every = 0 : i64} : !nnk.buffer<[2, 5, 3], f32>, !nnk.buffer<[12, 3], f32>, !nnk.buffer<[12, 4], f32>, !nnk.buffer<[2, 5, 4], f32>, !nnk.buffer<[2, 5, 4], f32>
  return
}

// -----

func.func @recurrent_grad_snapshots_without_reserve(%x: !nnk.buffer<[2, 5, 3], f32>, %wih: !nnk.buffer<[12, 3], f32>, %whh: !nnk.buffer<[12, 4], f32>, %dx: !nnk.buffer<[2, 5, 3], f32>, %dh0: !nnk.buffer<[1, 2, 4], f32>, %dwih: !nnk.buffer<[12, 3], f32>, %dwhh: !nnk.buffer<[12, 4], f32>) {
  // expected-error @+1 {{'nnk.recurrent_grad' op 'checkpoint_snapshots' needs the 'reserve' of a checkpointed 'nnk.recurrent_forward'}}
  nnk.recurrent_grad ins(%x) weights(%wih, %whh) outs(%dx, %dh0) dweights(%dwih, %dwhh) {cell = #nnk<cell gru>, hidden_size = 4 : i64, has_bias = false, checkpoint_snapshots = 2 : i64} : !nnk.buffer<[2, 5, 3], f32>, !nnk.buffer<[12, 3], f32>, !nnk.buffer<[12, 4], f32>, !nnk.buffer<[2, 5, 3], f32>, !nnk.buffer<[1, 2, 4], f32>, !nnk.buffer<[12, 3], f32>, !nnk.buffer<[12, 4], f32>
  return
}

// -----

func.func @recurrent_forward_snapshots_zero(%x: !nnk.buffer<[2, 5, 3], f32>, %wih: !nnk.buffer<[12, 3], f32>, %whh: !nnk.buffer<[12, 4], f32>, %y: !nnk.buffer<[2, 5, 4], f32>, %r: !nnk.buffer<[2, 5, 4], f32>) {
  // expected-error @+1 {{'nnk.recurrent_forward' op 'checkpoint_snapshots' must be at least 1, got 0}}
  nnk.recurrent_forward ins(%x) weights(%wih, %whh) outs(%y) reserve(%r) {cell = #nnk<cell gru>, hidden_size = 4 : i64, has_bias = false, checkpoint_snapshots = 0 : i64} : !nnk.buffer<[2, 5, 3], f32>, !nnk.buffer<[12, 3], f32>, !nnk.buffer<[12, 4], f32>, !nnk.buffer<[2, 5, 4], f32>, !nnk.buffer<[2, 5, 4], f32>
  return
}

// -----

func.func @recurrent_forward_snapshots_and_every(%x: !nnk.buffer<[2, 5, 3], f32>, %wih: !nnk.buffer<[12, 3], f32>, %whh: !nnk.buffer<[12, 4], f32>, %y: !nnk.buffer<[2, 5, 4], f32>, %r: !nnk.buffer<[2, 5, 4], f32>) {
  // expected-error @+1 {{'nnk.recurrent_forward' op 'checkpoint_every' and 'checkpoint_snapshots' are exclusive}}
  nnk.recurrent_forward ins(%x) weights(%wih, %whh) outs(%y) reserve(%r) {cell = #nnk<cell gru>, hidden_size = 4 : i64, has_bias = false, checkpoint_every = 2 : i64, checkpoint_snapshots = 2 : i64} : !nnk.buffer<[2, 5, 3], f32>, !nnk.buffer<[12, 3], f32>, !nnk.buffer<[12, 4], f32>, !nnk.buffer<[2, 5, 4], f32>, !nnk.buffer<[2, 5, 4], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @local_chunk(%q: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{chunk must be >= 1, got 0}}
  nnk.local_attention ins(%q) outs(%o) {chunk = 0 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @local_window(%q: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>) {
  // expected-error @+1 {{chunks_before and chunks_after must be >= 0, got -1 and 0}}
  nnk.local_attention ins(%q) outs(%o) {chunk = 4 : i64, chunks_before = -1 : i64, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @local_grad_window(%qkv: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>, %d: !nnk.buffer<[B, T, 24], f32>) {
  // expected-error @+1 {{chunk must be >= 1, got 0}}
  nnk.attention_grad ins(%qkv, %o) outs(%d) {kind = #nnk<attention local>, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 24], f32>
  return
}

// -----

nn.parameter @p : !nn.tensor<[4], f32>
func.func @local_grad_other_kind(%qkv: !nnk.buffer<[B, T, 24], f32>, %o: !nnk.buffer<[B, T, 8], f32>, %d: !nnk.buffer<[B, T, 24], f32>) {
  // expected-error @+1 {{chunks_before and chunks_after apply only to kind local}}
  nnk.attention_grad ins(%qkv, %o) outs(%d) {chunks_after = 1 : i64, kind = #nnk<attention dense>, num_heads = 2 : i64} : !nnk.buffer<[B, T, 24], f32>, !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 24], f32>
  return
}
