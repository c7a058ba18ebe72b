// RUN: nncc-opt %s --verify-diagnostics --nncc-autodiff="wrt-inputs=z"

// expected-error @+1 {{wrt-inputs: no input named 'z'}}
func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
  %l = nn.reduce_sum %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
  return %l : !nn.tensor<[], f32>
}
