// RUN: nncc-opt %s --split-input-file --verify-diagnostics --nncc-autodiff

// expected-error @+1 {{function @forward has no result named 'loss' (nn.name): nncc-autodiff differentiates a declared loss}}
func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"}) {
  %y = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %y : !nn.tensor<[B, 4], f32>
}

// -----

// An ODE whose dynamics read a differentiable value computed outside.
module {
  nn.parameter @w : !nn.tensor<[4], f32>
  func.func @forward(%h0: !nn.tensor<[B, 4], f32> {nn.name = "h0"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %w = nn.get_parameter @w : !nn.tensor<[4], f32>
    // expected-error @+1 {{gradient through a value captured by a region that is differentiated on its own}}
    %w2 = nn.tanh %w : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
    %t0 = nn.constant 0.0 : f32
    %t1 = nn.constant 1.0 : f32
    %h1 = nn.odesolve euler %h0, %t0, %t1 {steps = 2 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
    ^bb0(%s: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 4], f32>):
      %dh = nn.mul %h, %w2 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
      nn.yield %dh : !nn.tensor<[B, 4], f32>
    }
    %l = nn.reduce_sum %h1 : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
    return %l : !nn.tensor<[], f32>
  }
}
