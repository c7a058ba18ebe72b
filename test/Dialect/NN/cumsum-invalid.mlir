// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// nn.cumsum's type inference and operand constraints.

func.func @axis(%x: !nn.tensor<[B, 4], f32>) {
  // expected-error @+2 {{'nn.cumsum' op axis 2 is out of range for '!nn.tensor<[B, 4], f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.cumsum %x {axis = 2 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return
}

// -----

func.func @bool(%x: !nn.tensor<[B, 4], i1>) {
  // expected-error @+1 {{'nn.cumsum' op operand #0 must be}}
  %0 = nn.cumsum %x {axis = 1 : i64} : (!nn.tensor<[B, 4], i1>) -> !nn.tensor<[B, 4], i1>
  return
}
