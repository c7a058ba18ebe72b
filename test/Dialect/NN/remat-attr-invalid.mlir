// RUN: nncc-opt %s -split-input-file -verify-diagnostics
// The op attributes of nncc-remat: nn.recomputed (a clone in the backward)
// and nn.stored (an op of a stored reversible block) are unit attributes
// of ops inside functions.

func.func @f(%x: !nn.tensor<[2], f32>) -> !nn.tensor<[2], f32> {
  // expected-error @+1 {{'nn.relu' op 'nn.stored' is a unit attribute of an op in a function}}
  %y = nn.relu %x {nn.stored = 1 : i64} : (!nn.tensor<[2], f32>) -> !nn.tensor<[2], f32>
  return %y : !nn.tensor<[2], f32>
}

// -----

func.func @f(%x: !nn.tensor<[2], f32>) -> !nn.tensor<[2], f32> {
  // expected-error @+1 {{'nn.relu' op 'nn.recomputed' is a unit attribute of an op in a function}}
  %y = nn.relu %x {nn.recomputed = "yes"} : (!nn.tensor<[2], f32>) -> !nn.tensor<[2], f32>
  return %y : !nn.tensor<[2], f32>
}

// -----

// expected-error @+1 {{'func.func' op 'nn.stored' is a unit attribute of an op in a function}}
func.func @f() attributes {nn.stored} {
  return
}

// -----

// Valid: unit attributes on ops.
func.func @ok(%x: !nn.tensor<[2], f32>) -> !nn.tensor<[2], f32> {
  %y = nn.relu %x {nn.stored} : (!nn.tensor<[2], f32>) -> !nn.tensor<[2], f32>
  %z = nn.relu %y {nn.recomputed} : (!nn.tensor<[2], f32>) -> !nn.tensor<[2], f32>
  return %z : !nn.tensor<[2], f32>
}
