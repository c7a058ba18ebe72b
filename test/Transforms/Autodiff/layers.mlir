// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s

// linear, embedding, layer_norm, matmul, softmax, dropout, zoneout,
// learned positions and a cross-entropy loss.
module {
  nn.parameter @emb.weight : !nn.tensor<[100, 8], f32>
  nn.parameter @pos.weight : !nn.tensor<[16, 8], f32>
  nn.parameter @ln.weight : !nn.tensor<[8], f32>
  nn.parameter @ln.bias : !nn.tensor<[8], f32>
  nn.parameter @fc.weight : !nn.tensor<[10, 8], f32>
  nn.parameter @fc.bias : !nn.tensor<[10], f32>
  func.func @forward(%ids: !nn.tensor<[B, T], i64> {nn.name = "ids"}, %target: !nn.tensor<[B, T], i64> {nn.name = "target"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %e = nn.get_parameter @emb.weight : !nn.tensor<[100, 8], f32>
    %x = nn.embedding %ids, %e : (!nn.tensor<[B, T], i64>, !nn.tensor<[100, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %p = nn.get_parameter @pos.weight : !nn.tensor<[16, 8], f32>
    %xp = nn.learned_position %x, %p : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[16, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %g = nn.get_parameter @ln.weight : !nn.tensor<[8], f32>
    %bb = nn.get_parameter @ln.bias : !nn.tensor<[8], f32>
    %n = nn.layer_norm %xp weight %g bias %bb {eps = 1.0e-12 : f64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8], f32>, !nn.tensor<[8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %d = nn.dropout %n {p = 0.1 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %z = nn.zoneout %d, %n {p = 0.2 : f64, seed = 3 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %zt = nn.transpose %z {perm = array<i64: 0, 2, 1>} : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, 8, T], f32>
    %s = nn.matmul %z, %zt : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, 8, T], f32>) -> !nn.tensor<[B, T, T], f32>
    %a = nn.softmax %s : (!nn.tensor<[B, T, T], f32>) -> !nn.tensor<[B, T, T], f32>
    %c = nn.matmul %a, %z : (!nn.tensor<[B, T, T], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %w = nn.get_parameter @fc.weight : !nn.tensor<[10, 8], f32>
    %b = nn.get_parameter @fc.bias : !nn.tensor<[10], f32>
    %logits = nn.linear %c, %w, %b : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[10, 8], f32>, !nn.tensor<[10], f32>) -> !nn.tensor<[B, T, 10], f32>
    %loss = nn.cross_entropy %logits, %target : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T], i64>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[XP:.*]] = nn.learned_position
// CHECK: nn.layer_norm %[[XP]]
// CHECK: %[[Z:.*]] = nn.zoneout
// CHECK: %[[ZT:.*]] = nn.transpose %[[Z]]
// CHECK: %[[A:.*]] = nn.softmax
// CHECK: %[[C:.*]] = nn.matmul %[[A]], %[[Z]]
// CHECK: %[[LOGITS:.*]] = nn.linear %[[C]]
// CHECK: %[[S_LN:.*]] = nn.save %[[XP]] {rule = "nn.layer_norm"}
// CHECK: %[[S_Z:.*]] = nn.save %[[Z]] {index = 1 : i64, rule = "nn.matmul"}
// CHECK: %[[S_ZT:.*]] = nn.save %[[ZT]] {index = 2 : i64, rule = "nn.matmul"}
// CHECK: %[[S_A:.*]] = nn.save %[[A]] {index = 3 : i64, rule = "nn.softmax"}
// CHECK: %[[S_C:.*]] = nn.save %[[C]] {index = 4 : i64, rule = "nn.linear"}
// CHECK: %[[S_L:.*]] = nn.save %[[LOGITS]] {index = 5 : i64, rule = "nn.cross_entropy"}
// CHECK: %[[ONE:.*]] = nn.constant 1.0
// CHECK: %[[DL:.*]] = nn.cross_entropy_grad %[[S_L]], %arg1, %[[ONE]]
// linear: dx = dy W, dW = sum dy^T x, db = sum dy
// CHECK: %[[W:.*]] = nn.get_parameter @fc.weight
// CHECK: %[[DC:.*]] = nn.matmul %[[DL]], %[[W]]
// CHECK: %[[DW:.*]] = nn.linear_weight_grad %[[DL]], %[[S_C]] : (!nn.tensor<[B, T, 10], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[10, 8], f32>
// CHECK: %[[DB:.*]] = nn.reduce_sum %[[DL]] {axes = array<i64: 0, 1>}
// matmul: dA = dC Z^T, dZ = A^T dC
// CHECK: %[[T1:.*]] = nn.transpose %[[S_Z]] {perm = array<i64: 0, 2, 1>}
// CHECK: %[[DA:.*]] = nn.matmul %[[DC]], %[[T1]]
// CHECK: %[[AT:.*]] = nn.transpose %[[S_A]]
// CHECK: nn.matmul %[[AT]], %[[DC]]
// softmax: y * (dy - sum(dy * y))
// CHECK: %[[P:.*]] = nn.mul %[[DA]], %[[S_A]]
// CHECK: %[[SUM:.*]] = nn.reduce_sum %[[P]] {axes = array<i64: 2>, keepdim = true}
// CHECK: %[[DIFF:.*]] = nn.sub %[[DA]], %[[SUM]]
// CHECK: %[[DS:.*]] = nn.mul %[[S_A]], %[[DIFF]]
// CHECK: nn.matmul %[[DS]], %{{.*}}
// CHECK: nn.matmul %{{.*}}, %[[DS]]
// transpose: inverse permutation
// CHECK: nn.transpose %{{.*}} {perm = array<i64: 0, 2, 1>} : (!nn.tensor<[B, 8, T], f32>) -> !nn.tensor<[B, T, 8], f32>
// CHECK: %[[DZ:.*]] = nn.add
// zoneout: the seeded mask recomputed between dy and zeros
// CHECK: %[[ZERO:.*]] = nn.zeros !nn.tensor<[B, T, 8], f32>
// CHECK: %[[DNEW:.*]] = nn.zoneout %[[DZ]], %[[ZERO]] {p = 2.000000e-01 : f64, seed = 3 : i64}
// CHECK: %[[DPREV:.*]] = nn.zoneout %[[ZERO]], %[[DZ]] {p = 2.000000e-01 : f64, seed = 3 : i64}
// dropout: the same op (same seed) on the adjoint
// CHECK: %[[DD:.*]] = nn.dropout %[[DNEW]] {p = 1.000000e-01 : f64, seed = 7 : i64}
// CHECK: %[[DN:.*]] = nn.add %[[DPREV]], %[[DD]]
// CHECK: %[[G:.*]] = nn.get_parameter @ln.weight
// CHECK: %[[DX:.*]], %[[DG:.*]] = nn.layer_norm_grad %[[S_LN]] weight %[[G]] grad %[[DN]] {eps = 9.9999999999999998E-13 : f64}
// CHECK: %[[DBETA:.*]] = nn.reduce_sum %[[DN]] {axes = array<i64: 0, 1>}
// learned positions: rows 0..T of the table get the batch sum
// CHECK: %[[ROWS:.*]] = nn.reduce_sum %[[DX]] {axes = array<i64: 0>}
// CHECK: %[[DPOS:.*]] = nn.slice_grad %[[ROWS]] {{.*}}type = !nn.tensor<[16, 8], f32>} : (!nn.tensor<[T, 8], f32>) -> !nn.tensor<[16, 8], f32>
// CHECK: %[[DEMB:.*]] = nn.embedding_grad %arg0, %[[DX]] {num_embeddings = 100 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[100, 8], f32>
// CHECK: return %{{.*}}, %[[DEMB]], %[[DPOS]], %[[DG]], %[[DBETA]], %[[DW]], %[[DB]] :
