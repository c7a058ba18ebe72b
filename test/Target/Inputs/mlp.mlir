// A small model in the nnk dialect (what --nncc-pipeline produces):
// pred = softmax(LN(gelu(x W1^T + b1)) W2^T + b2 + 0.5 * bias2), loss = mse.
module attributes {nn.dims = ["N"], nn.model = "tiny_mlp"} {
  nn.parameter @fc1.weight : !nn.tensor<[16, 8], f32> init #nn.init<uniform, -0.35, 0.35>
  nn.parameter @fc1.bias : !nn.tensor<[16], f32> init #nn.init<uniform, -0.35, 0.35>
  nn.parameter @ln.weight : !nn.tensor<[16], f32> init #nn.init<ones>
  nn.parameter @ln.bias : !nn.tensor<[16], f32> init #nn.init<zeros>
  nn.parameter @fc2.weight : !nn.tensor<[4, 16], f32> init #nn.init<uniform, -0.25, 0.25>
  nn.parameter @fc2.bias : !nn.tensor<[4], f32> init #nn.init<constant, 0.1>
  func.func @forward(%x: !nnk.buffer<[N, 8], f32> {nn.name = "x"},
                     %y: !nnk.buffer<[N, 4], f32> {nn.name = "y"},
                     %pred: !nnk.buffer<[N, 4], f32> {nnk.output, nn.name = "pred"},
                     %loss: !nnk.buffer<[], f32> {nnk.output, nn.name = "loss"}) {
    %w1 = nnk.weight @fc1.weight : !nnk.buffer<[16, 8], f32>
    %b1 = nnk.weight @fc1.bias : !nnk.buffer<[16], f32>
    %h = nnk.alloc : !nnk.buffer<[N, 16], f32>
    nnk.gemm ins(%x, %w1) bias(%b1) outs(%h) {activation = #nnk<act gelu>} : !nnk.buffer<[N, 8], f32>, !nnk.buffer<[16, 8], f32>, !nnk.buffer<[16], f32>, !nnk.buffer<[N, 16], f32>
    %g = nnk.weight @ln.weight : !nnk.buffer<[16], f32>
    %be = nnk.weight @ln.bias : !nnk.buffer<[16], f32>
    %n = nnk.alloc : !nnk.buffer<[N, 16], f32>
    nnk.layer_norm ins(%h) weight(%g) bias(%be) outs(%n) : !nnk.buffer<[N, 16], f32>, !nnk.buffer<[16], f32>, !nnk.buffer<[16], f32>, !nnk.buffer<[N, 16], f32>
    %w2 = nnk.weight @fc2.weight : !nnk.buffer<[4, 16], f32>
    %b2 = nnk.weight @fc2.bias : !nnk.buffer<[4], f32>
    %z = nnk.alloc : !nnk.buffer<[N, 4], f32>
    nnk.gemm ins(%n, %w2) outs(%z) : !nnk.buffer<[N, 16], f32>, !nnk.buffer<[4, 16], f32>, !nnk.buffer<[N, 4], f32>
    %z2 = nnk.alloc : !nnk.buffer<[N, 4], f32>
    nnk.elementwise ins(%z, %b2 : !nnk.buffer<[N, 4], f32>, !nnk.buffer<[4], f32>) outs(%z2 : !nnk.buffer<[N, 4], f32>) {
    ^bb0(%a: f32, %b: f32):
      %c = arith.constant 0.5 : f32
      %s = arith.mulf %b, %c : f32
      %t = arith.addf %a, %b : f32
      %u = arith.addf %t, %s : f32
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %u, %zero : f32
      nnk.yield %r : f32
    }
    nnk.softmax ins(%z2) outs(%pred) {axis = 1 : i64} : !nnk.buffer<[N, 4], f32>, !nnk.buffer<[N, 4], f32>
    nnk.loss ins(%pred, %y) outs(%loss) {kind = #nnk<loss mse>} : !nnk.buffer<[N, 4], f32>, !nnk.buffer<[N, 4], f32>, !nnk.buffer<[], f32>
    return
  }
}
