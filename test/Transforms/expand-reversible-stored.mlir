// RUN: nncc-opt --nn-expand-reversible=stored-last=1 %s | FileCheck %s

// stored-last=1: only the last top-level block is inlined, its ops marked
// nn.stored (nncc-remat's form with that block stored); the first stays.
// CHECK-LABEL: func.func @stored_last
// CHECK: %[[R:.*]] = nn.reversible
// CHECK: %[[S:.*]]:2 = nn.split %[[R]] {axis = 1 : i64, nn.stored, sizes = array<i64: 4, 4>}
// CHECK: %[[F:.*]] = nn.tanh %[[S]]#1 {nn.stored}
// CHECK: %[[Y1:.*]] = nn.add %[[F]], %[[S]]#0 {nn.stored}
// CHECK: %[[G:.*]] = nn.sigmoid %[[Y1]] {nn.stored}
// CHECK: %[[Y2:.*]] = nn.add %[[G]], %[[S]]#1 {nn.stored}
// CHECK: %[[Y:.*]] = nn.concat %[[Y1]], %[[Y2]] {axis = 1 : i64, nn.stored}
// CHECK: return %[[Y]]
func.func @stored_last(%x: !nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> {
  %0 = nn.reversible %x : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %t = nn.tanh %a : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %t : !nn.tensor<[B, 4], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %s = nn.sigmoid %a : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  %1 = nn.reversible %0 : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %t = nn.tanh %a : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %t : !nn.tensor<[B, 4], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 4], f32>):
    %s = nn.sigmoid %a : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    nn.yield %s : !nn.tensor<[B, 4], f32>
  }
  return %1 : !nn.tensor<[B, 8], f32>
}
