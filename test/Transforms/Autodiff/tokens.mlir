// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s

// Token masking and sampling pass no adjoint; stop_gradient cuts the path
// through frozen * frozen, so the adjoint of the sum reaches the axial
// position and the embedding unchanged; the axial tables get
// nn.axial_position_grad.
module {
  nn.parameter @table : !nn.tensor<[13, 8], f32>
  nn.parameter @rows : !nn.tensor<[4, 1, 3], f32>
  nn.parameter @cols : !nn.tensor<[1, 4, 5], f32>
  nn.parameter @head : !nn.tensor<[13, 8], f32>
  func.func @forward(%x: !nn.tensor<[B, T], i32> {nn.name = "tokens"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %table = nn.get_parameter @table : !nn.tensor<[13, 8], f32>
    %rows = nn.get_parameter @rows : !nn.tensor<[4, 1, 3], f32>
    %cols = nn.get_parameter @cols : !nn.tensor<[1, 4, 5], f32>
    %head = nn.get_parameter @head : !nn.tensor<[13, 8], f32>
    %masked, %mask = nn.mask_tokens %x {p = 0.25 : f64, mask_id = 1 : i64, seed = 1 : i64} : (!nn.tensor<[B, T], i32>) -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i1>)
    %e = nn.embedding %masked, %table : (!nn.tensor<[B, T], i32>, !nn.tensor<[13, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %h = nn.axial_position %e, %rows, %cols : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[4, 1, 3], f32>, !nn.tensor<[1, 4, 5], f32>) -> !nn.tensor<[B, T, 8], f32>
    %frozen = nn.stop_gradient %h : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %sq = nn.mul %frozen, %frozen : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %z = nn.add %h, %sq : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %logits = nn.linear %z, %head : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[13, 8], f32>) -> !nn.tensor<[B, T, 13], f32>
    %s = nn.sample %logits, %mask {seed = 2 : i64} : (!nn.tensor<[B, T, 13], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
    %t = nn.select %mask, %s, %x : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
    %loss = nn.cross_entropy %logits, %t : (!nn.tensor<[B, T, 13], f32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[MASKED:.*]], %[[MASK:.*]] = nn.mask_tokens
// CHECK: %[[SUM:.*]] = nn.add
// CHECK: nn.sample %{{.*}}, %[[MASK]] {seed = 2 : i64}
// Saved: the masked ids (embedding), the sum (linear), logits and targets.
// CHECK: %[[SM:.*]] = nn.save %[[MASKED]] {rule = "nn.embedding"}
// CHECK-NEXT: nn.save %[[SUM]] {index = 1 : i64, rule = "nn.linear"}
// CHECK-NEXT: nn.save
// CHECK-NEXT: nn.save
// CHECK-NOT: nn.save
// CHECK: %[[DCE:.*]] = nn.cross_entropy_grad
// CHECK: %[[DSUM:.*]] = nn.matmul %[[DCE]]
// CHECK-NOT: nn.mul
// CHECK: %[[DR:.*]], %[[DC:.*]] = nn.axial_position_grad %[[DSUM]] {d1 = 3 : i64, shape = array<i64: 4, 4>}
// CHECK: %[[DT:.*]] = nn.embedding_grad %[[SM]], %[[DSUM]]
// CHECK: return %{{.*}}, %[[DT]], %[[DR]], %[[DC]], %{{.*}}
