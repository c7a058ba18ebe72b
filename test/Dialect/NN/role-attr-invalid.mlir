// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{unknown input role 'tokens'}}
func.func @f(%x: !nn.tensor<[2], i32> {nn.role = #nn.role<tokens>}) {
  return
}

// -----

// expected-error @+1 {{role: 'mask' takes no limit}}
func.func @f(%x: !nn.tensor<[2], i1> {nn.role = #nn.role<mask, limit = 4>}) {
  return
}

// -----

// expected-error @+1 {{role: limit must be > 0, got 0}}
func.func @f(%x: !nn.tensor<[2], i32> {nn.role = #nn.role<token_ids, limit = 0>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'nn.role' must be an #nn.role<...>, got "ids"}}
func.func @f(%x: !nn.tensor<[2], i32> {nn.role = "ids"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op unknown nn dialect result attribute 'nn.role'}}
func.func @f(%x: !nn.tensor<[2], f32>) -> (!nn.tensor<[2], f32> {nn.role = #nn.role<times>}) {
  return %x : !nn.tensor<[2], f32>
}

// -----

// expected-error @+1 {{'builtin.module' op unknown nn dialect attribute 'nn.role'}}
module attributes {nn.role = #nn.role<times>} {
}
