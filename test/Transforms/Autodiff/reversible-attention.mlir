// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s

// A chain of two reversible blocks whose F is attention (dense, then LSH)
// and G an MLP: the backward reconstructs each block's input from its
// output, so only the chain's final output is saved.
module {
  nn.parameter @a.in : !nn.tensor<[24, 8], f32>
  nn.parameter @a.out : !nn.tensor<[8, 8], f32>
  nn.parameter @l.in : !nn.tensor<[16, 8], f32>
  nn.parameter @l.out : !nn.tensor<[8, 8], f32>
  nn.parameter @g.weight : !nn.tensor<[8, 8], f32>
  func.func @forward(%x: !nn.tensor<[B, T, 16], f32> {nn.name = "x"}, %t: !nn.tensor<[B, T, 16], f32> {nn.name = "t"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %y1 = nn.reversible %x : (!nn.tensor<[B, T, 16], f32>) -> !nn.tensor<[B, T, 16], f32> f {
    ^bb0(%x2: !nn.tensor<[B, T, 8], f32>):
      %wi = nn.get_parameter @a.in : !nn.tensor<[24, 8], f32>
      %wo = nn.get_parameter @a.out : !nn.tensor<[8, 8], f32>
      %a = nn.attention %x2, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
      nn.yield %a : !nn.tensor<[B, T, 8], f32>
    } g {
    ^bb0(%y: !nn.tensor<[B, T, 8], f32>):
      %w = nn.get_parameter @g.weight : !nn.tensor<[8, 8], f32>
      %h = nn.linear %y, %w : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
      %r = nn.relu %h : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
      nn.yield %r : !nn.tensor<[B, T, 8], f32>
    }
    %y2 = nn.reversible %y1 : (!nn.tensor<[B, T, 16], f32>) -> !nn.tensor<[B, T, 16], f32> f {
    ^bb0(%x2: !nn.tensor<[B, T, 8], f32>):
      %wi = nn.get_parameter @l.in : !nn.tensor<[16, 8], f32>
      %wo = nn.get_parameter @l.out : !nn.tensor<[8, 8], f32>
      %a = nn.attention %x2, %wi out %wo {kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64, causal = true} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
      nn.yield %a : !nn.tensor<[B, T, 8], f32>
    } g {
    ^bb0(%y: !nn.tensor<[B, T, 8], f32>):
      %w = nn.get_parameter @g.weight : !nn.tensor<[8, 8], f32>
      %h = nn.linear %y, %w : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
      nn.yield %h : !nn.tensor<[B, T, 8], f32>
    }
    %loss = nn.mse %y2, %t : (!nn.tensor<[B, T, 16], f32>, !nn.tensor<[B, T, 16], f32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[Y1:.*]] = nn.reversible %arg0
// CHECK: %[[Y2:.*]] = nn.reversible %[[Y1]]
// CHECK: %[[S:.*]] = nn.save %[[Y2]] {rule = "nn.reversible"}
// CHECK-NOT: nn.save
// CHECK: %[[DY:.*]] = nn.mse_grad %[[S]]
// Block 2: split y and dy, x2 = y2 - G(y1), G's VJP, x1 = y1 - F(x2), F's VJP.
// CHECK: %[[YS:.*]]:2 = nn.split %[[S]] {axis = 2 : i64, sizes = array<i64: 8, 8>}
// CHECK: %[[DYS:.*]]:2 = nn.split %[[DY]]
// CHECK: %[[GW:.*]] = nn.get_parameter @g.weight
// CHECK: %[[G:.*]] = nn.linear %[[YS]]#0, %[[GW]]
// CHECK: %[[X2:.*]] = nn.sub %[[YS]]#1, %[[G]]
// CHECK: %[[GDX:.*]] = nn.matmul %[[DYS]]#1, %[[GW]]
// CHECK: %[[GDW2:.*]] = nn.linear_weight_grad %[[DYS]]#1, %[[YS]]#0
// CHECK: %[[DY1:.*]] = nn.add %[[DYS]]#0, %[[GDX]]
// The reconstruction's attention keeps a reserve for its gradient: the
// gradient reads its projection, output and log-sum-exp.
// CHECK: %[[F:.*]], %[[RES:.*]] = nn.attention %[[X2]], {{.*}} {causal = true, kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64} : {{.*}} -> (!nn.tensor<[B, T, 8], f32>, !nn.reserve)
// CHECK: %[[X1:.*]] = nn.sub %[[YS]]#0, %[[F]]
// The LSH backward recomputes buckets and probabilities from x.
// CHECK: %[[ADX:.*]], %[[LDP:.*]]:2 = nn.attention_grad %[[X2]], %{{.*}} out %{{.*}} grad %[[DY1]] reserve %[[RES]] {causal = true, kind = #nn.lsh<hashes = 2, chunk = 4>, num_heads = 2 : i64}
// CHECK: %[[DX2:.*]] = nn.add %[[DYS]]#1, %[[ADX]]
// The reconstructed input of block 2 is block 1's output.
// CHECK: %[[X:.*]] = nn.concat %[[X1]], %[[X2]] {axis = 2 : i64}
// CHECK: %[[DX:.*]] = nn.concat %[[DY1]], %[[DX2]] {axis = 2 : i64}
// CHECK: %[[YS1:.*]]:2 = nn.split %[[X]]
// CHECK: %[[DYS1:.*]]:2 = nn.split %[[DX]]
// CHECK: %[[H:.*]] = nn.linear %[[YS1]]#0
// CHECK: nn.relu %[[H]]
// CHECK: nn.activation_grad %[[H]], %[[DYS1]]#1 {kind = "relu"}
// CHECK: %[[GDW1:.*]] = nn.linear_weight_grad
// The shared G weight: gradients of both blocks summed.
// CHECK: %[[GWSUM:.*]] = nn.add %[[GDW2]], %[[GDW1]]
// Block 1's input is the saved model input: its reconstruction would only
// live for the reserve, so it goes and the gradient recomputes.
// CHECK-NOT: nn.attention {{.*}}#nn.dense
// CHECK: %{{.*}}, %[[DDP:.*]]:2 = nn.attention_grad {{.*}} grad %{{[^ ]*}} {kind = #nn.dense, num_heads = 2 : i64}
// CHECK: return %{{.*}}, %[[DDP]]#0, %[[DDP]]#1, %[[LDP]]#0, %[[LDP]]#1, %[[GWSUM]] :
