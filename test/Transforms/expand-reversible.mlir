// RUN: nncc-opt --nn-expand-reversible -split-input-file -verify-diagnostics %s | FileCheck %s

// A reversible block becomes x1, x2 = split(x); y1 = F(x2) + x1;
// y2 = G(y1) + x2; concat(y1, y2), the branch output first in each add.
// Between two blocks the concat/split pair is folded away.

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: !nn.tensor<[B, 8], f32>)
// CHECK: %[[X1:.*]]:2 = nn.split %[[X]] {axis = 1 : i64, sizes = array<i64: 4, 4>}
// CHECK: %[[F:.*]] = nn.tanh %[[X1]]#1
// CHECK: %[[Y1:.*]] = nn.add %[[F]], %[[X1]]#0
// CHECK: %[[G:.*]] = nn.sigmoid %[[Y1]]
// CHECK: %[[Y2:.*]] = nn.add %[[G]], %[[X1]]#1
// CHECK-NOT: nn.concat
// CHECK-NOT: nn.split
// CHECK: %[[F2:.*]] = nn.tanh %[[Y2]]
// CHECK: %[[Z1:.*]] = nn.add %[[F2]], %[[Y1]]
// CHECK: %[[G2:.*]] = nn.sigmoid %[[Z1]]
// CHECK: %[[Z2:.*]] = nn.add %[[G2]], %[[Y2]]
// CHECK: %[[Y:.*]] = nn.concat %[[Z1]], %[[Z2]] {axis = 1 : i64}
// CHECK-NOT: nn.reversible
// CHECK: return %[[Y]]
func.func @chain(%x: !nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> {
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

// -----

// A block nested in another's branch is expanded too.
// CHECK-LABEL: func.func @nested
// CHECK: %[[O:.*]]:2 = nn.split %{{.*}} {axis = 1 : i64, sizes = array<i64: 8, 8>}
// CHECK: %[[I:.*]]:2 = nn.split %[[O]]#1 {axis = 1 : i64, sizes = array<i64: 4, 4>}
// CHECK: %[[F:.*]] = nn.concat
// CHECK: nn.add %[[F]], %[[O]]#0
// CHECK-NOT: nn.reversible
// CHECK: return
func.func @nested(%x: !nn.tensor<[B, 16], f32>) -> !nn.tensor<[B, 16], f32> {
  %0 = nn.reversible %x : (!nn.tensor<[B, 16], f32>) -> !nn.tensor<[B, 16], f32> f {
  ^bb0(%a: !nn.tensor<[B, 8], f32>):
    %r = nn.reversible %a : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
    ^bb0(%b: !nn.tensor<[B, 4], f32>):
      nn.yield %b : !nn.tensor<[B, 4], f32>
    } g {
    ^bb0(%b: !nn.tensor<[B, 4], f32>):
      nn.yield %b : !nn.tensor<[B, 4], f32>
    }
    nn.yield %r : !nn.tensor<[B, 8], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, 8], f32>):
    nn.yield %a : !nn.tensor<[B, 8], f32>
  }
  return %0 : !nn.tensor<[B, 16], f32>
}

// -----

// Any split(concat(a, b)) along the same axis with pieces of the inputs'
// types is (a, b); other splits stay.

// CHECK-LABEL: func.func @split_of_concat
// CHECK-SAME: (%[[A:.*]]: !nn.tensor<[B, 4], f32>, %[[B:.*]]: !nn.tensor<[B, 4], f32>)
// CHECK-NEXT: %[[S:.*]] = nn.sub %[[B]], %[[A]]
// CHECK-NEXT: return %[[S]]
func.func @split_of_concat(%a: !nn.tensor<[B, 4], f32>, %b: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> {
  %c = nn.concat %a, %b {axis = -1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 8], f32>
  %x:2 = nn.split %c {axis = 1 : i64, sizes = array<i64: 4, 4>} : (!nn.tensor<[B, 8], f32>) -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>)
  %s = nn.sub %x#1, %x#0 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %s : !nn.tensor<[B, 4], f32>
}

// Other pieces than the concat's inputs: kept.
// CHECK-LABEL: func.func @other_pieces
// CHECK: %[[C:.*]] = nn.concat
// CHECK: nn.split %[[C]] {axis = 1 : i64, sizes = array<i64: 2, 6>}
func.func @other_pieces(%a: !nn.tensor<[B, 4], f32>, %b: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 2], f32> {
  %c = nn.concat %a, %b {axis = 1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 8], f32>
  %x:2 = nn.split %c {axis = 1 : i64, sizes = array<i64: 2, 6>} : (!nn.tensor<[B, 8], f32>) -> (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 6], f32>)
  return %x#0 : !nn.tensor<[B, 2], f32>
}

// Another axis: kept.
// CHECK-LABEL: func.func @other_axis
// CHECK: nn.concat
// CHECK: nn.split
func.func @other_axis(%a: !nn.tensor<[2, 4], f32>, %b: !nn.tensor<[2, 4], f32>) -> !nn.tensor<[4, 2], f32> {
  %c = nn.concat %a, %b {axis = 0 : i64} : (!nn.tensor<[2, 4], f32>, !nn.tensor<[2, 4], f32>) -> !nn.tensor<[4, 4], f32>
  %x:2 = nn.split %c {axis = 1 : i64, sizes = array<i64: 2, 2>} : (!nn.tensor<[4, 4], f32>) -> (!nn.tensor<[4, 2], f32>, !nn.tensor<[4, 2], f32>)
  return %x#0 : !nn.tensor<[4, 2], f32>
}

// -----

// The halves need a static last dim.
func.func @unknown_width(%x: !nn.tensor<[B, ?], f32>) -> !nn.tensor<[B, ?], f32> {
  // expected-error @+1 {{reversible blocks need a static, even last dim to split into halves, got ?}}
  %0 = nn.reversible %x : (!nn.tensor<[B, ?], f32>) -> !nn.tensor<[B, ?], f32> f {
  ^bb0(%a: !nn.tensor<[B, ?], f32>):
    nn.yield %a : !nn.tensor<[B, ?], f32>
  } g {
  ^bb0(%a: !nn.tensor<[B, ?], f32>):
    nn.yield %a : !nn.tensor<[B, ?], f32>
  }
  return %0 : !nn.tensor<[B, ?], f32>
}
