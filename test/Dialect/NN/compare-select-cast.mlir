// RUN: nncc-opt %s | nncc-opt | FileCheck %s
// RUN: nncc-opt %s --mlir-print-op-generic | nncc-opt | FileCheck %s

// nn.compare, nn.select and nn.cast round-trip; their types are inferred
// (broadcast shapes, i1 results, the cast's element type).

// CHECK-LABEL: func.func @electra_labels
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, T], i32>, %[[P:.*]]: !nn.tensor<[B, T], i32>, %[[M:.*]]: !nn.tensor<[B, T], i1>)
func.func @electra_labels(%x: !nn.tensor<[B, T], i32>, %post: !nn.tensor<[B, T], i32>,
                          %mask: !nn.tensor<[B, T], i1>)
    -> (!nn.tensor<[B, T], f32>, !nn.tensor<[B, T], i32>) {
  // CHECK: %[[NE:.*]] = nn.compare %[[P]], %[[X]] {predicate = #nn<cmp ne>} : (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i1>
  %ne = nn.compare %post, %x {predicate = #nn<cmp ne>} : (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i1>
  // CHECK: %[[F:.*]] = nn.cast %[[NE]] {to = f32} : (!nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], f32>
  %f = nn.cast %ne {to = f32} : (!nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], f32>
  // CHECK: %[[IGN:.*]] = nn.constant -100 : i32
  %ignore = nn.constant -100 : i32
  // CHECK: %[[T:.*]] = nn.select %[[M]], %[[X]], %[[IGN]] : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[], i32>) -> !nn.tensor<[B, T], i32>
  %t = nn.select %mask, %x, %ignore : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[], i32>) -> !nn.tensor<[B, T], i32>
  // CHECK: return %[[F]], %[[T]]
  return %f, %t : !nn.tensor<[B, T], f32>, !nn.tensor<[B, T], i32>
}

// CHECK-LABEL: func.func @float_broadcast
func.func @float_broadcast(%a: !nn.tensor<[B, 4], f32>, %b: !nn.tensor<[4], f32>)
    -> !nn.tensor<[B, 4], f64> {
  // CHECK: %[[C:.*]] = nn.compare %{{.*}}, %{{.*}} {predicate = #nn<cmp ge>} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], i1>
  %c = nn.compare %a, %b {predicate = #nn<cmp ge>} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], i1>
  // CHECK: %[[S:.*]] = nn.select %[[C]], %{{.*}}, %{{.*}} : (!nn.tensor<[B, 4], i1>, !nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  %s = nn.select %c, %a, %b : (!nn.tensor<[B, 4], i1>, !nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
  // CHECK: nn.cast %[[S]] {to = f64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f64>
  %d = nn.cast %s {to = f64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f64>
  return %d : !nn.tensor<[B, 4], f64>
}
