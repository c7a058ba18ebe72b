// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// One case per error of the type inference of nn.compare, nn.select and nn.cast.

func.func @compare_element_types(%a: !nn.tensor<[4], i32>, %b: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.compare' op expected rhs to have element type 'i32', got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.compare %a, %b {predicate = #nn<cmp eq>} : (!nn.tensor<[4], i32>, !nn.tensor<[4], f32>) -> !nn.tensor<[4], i1>
  return
}

// -----

func.func @compare_shapes(%a: !nn.tensor<[4], i32>, %b: !nn.tensor<[3], i32>) {
  // expected-error @+2 {{'nn.compare' op operands of shapes [4] and [3] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.compare %a, %b {predicate = #nn<cmp lt>} : (!nn.tensor<[4], i32>, !nn.tensor<[3], i32>) -> !nn.tensor<[4], i1>
  return
}

// -----

func.func @compare_result(%a: !nn.tensor<[4], i32>) {
  // expected-error @+1 {{'nn.compare' op result #0 must be nn tensor of i1 values, but got '!nn.tensor<[4], i32>'}}
  %0 = nn.compare %a, %a {predicate = #nn<cmp lt>} : (!nn.tensor<[4], i32>, !nn.tensor<[4], i32>) -> !nn.tensor<[4], i32>
  return
}

// -----

func.func @compare_predicate(%a: !nn.tensor<[4], i32>) {
  // expected-error @+2 {{expected ::nncc::nn::ComparePredicate to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{failed to parse NN_ComparePredicateAttr parameter 'value'}}
  %0 = nn.compare %a, %a {predicate = #nn<cmp neq>} : (!nn.tensor<[4], i32>, !nn.tensor<[4], i32>) -> !nn.tensor<[4], i1>
  return
}

// -----

func.func @select_cond_type(%c: !nn.tensor<[4], i32>, %a: !nn.tensor<[4], f32>) {
  // expected-error @+1 {{'nn.select' op operand #0 must be nn tensor of i1 values, but got '!nn.tensor<[4], i32>'}}
  %0 = nn.select %c, %a, %a : (!nn.tensor<[4], i32>, !nn.tensor<[4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @select_value_types(%c: !nn.tensor<[4], i1>, %a: !nn.tensor<[4], f32>, %b: !nn.tensor<[4], i32>) {
  // expected-error @+2 {{'nn.select' op expected b to have element type 'f32', got 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.select %c, %a, %b : (!nn.tensor<[4], i1>, !nn.tensor<[4], f32>, !nn.tensor<[4], i32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @select_cond_shape(%c: !nn.tensor<[3], i1>, %a: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.select' op cond of shape [3] does not broadcast with values of shape [B, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.select %c, %a, %a : (!nn.tensor<[3], i1>, !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @cast_target(%x: !nn.tensor<[4], f32>) {
  // expected-error @+2 {{'nn.cast' op can only cast to f32, f64, i32, i64 or i1, got 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.cast %x {to = bf16} : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], bf16>
  return
}

// -----

func.func @select_value_shapes(%c: !nn.tensor<[4], i1>, %a: !nn.tensor<[4], f32>, %b: !nn.tensor<[2], f32>) {
  // expected-error @+2 {{'nn.select' op a of shape [4] and b of shape [2] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.select %c, %a, %b : (!nn.tensor<[4], i1>, !nn.tensor<[4], f32>, !nn.tensor<[2], f32>) -> !nn.tensor<[4], f32>
  return
}

// -----

func.func @integer_division(%a: !nn.tensor<[4], i32>) {
  // expected-error @+2 {{'nn.div' op division needs float operands, got 'i32' (cast them to a float type first)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.div %a, %a : (!nn.tensor<[4], i32>, !nn.tensor<[4], i32>) -> !nn.tensor<[4], i32>
  return
}
