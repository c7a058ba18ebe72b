// RUN: nncc-opt --pass-pipeline='builtin.module(func.func(nn-insert-training-boundary))' %s -split-input-file -verify-diagnostics

// No place for the boundary: an op that reads the cotangent comes before
// an op a forward result reads (nncc-autodiff never builds this).
func.func @interleaved(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}, %c: !nn.tensor<[B, 4], f32> {nn.name = "cotangent.y"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"}, !nn.tensor<[B, 4], f32> {nn.name = "grad.x"}) attributes {nn.training} {
  // expected-error @+1 {{reads a cotangent before the end of the forward part of the training function (the last op a forward result reads)}}
  %g = nn.mul %c, %x : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // expected-note @+1 {{the forward part ends here}}
  %y = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %y, %g : !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>
}

// -----

// The same with a residual saved after the op that reads the cotangent.
func.func @save_after_cotangent(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}, %c: !nn.tensor<[B, 4], f32> {nn.name = "cotangent.y"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"}, !nn.tensor<[B, 4], f32> {nn.name = "grad.x"}) attributes {nn.training} {
  %y = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // expected-error @+1 {{reads a cotangent before the end of the forward part of the training function (the last residual)}}
  %g = nn.mul %c, %x : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  // expected-note @+1 {{the forward part ends here}}
  %s = nn.save %y {rule = "nn.tanh"} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %m = nn.mul %g, %s : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %y, %m : !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>
}
