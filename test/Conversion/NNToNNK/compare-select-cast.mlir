// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// Comparisons, selects, casts and integer arithmetic fuse into one
// nnk.elementwise whose body is typed: arith.cmpi / cmpf on the operands'
// types, arith.select, and the casts (uitofp from i1, extui, fptosi).

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: !nnk.buffer<[B, T], i32> {{.*}}, %[[P:.*]]: !nnk.buffer<[B, T], i32> {{.*}}, %[[M:.*]]: !nnk.buffer<[B, T], i1> {{.*}}, %[[H:.*]]: !nnk.buffer<[B, T], f32> {{.*}}, %[[LAB:.*]]: !nnk.buffer<[B, T], f32> {{.*}}, %[[TGT:.*]]: !nnk.buffer<[B, T], i64> {{.*}}, %[[CNT:.*]]: !nnk.buffer<[B, T], i32> {{.*}})
func.func @forward(%x: !nn.tensor<[B, T], i32> {nn.name = "x"}, %post: !nn.tensor<[B, T], i32> {nn.name = "post"},
                   %mask: !nn.tensor<[B, T], i1> {nn.name = "mask"}, %h: !nn.tensor<[B, T], f32> {nn.name = "h"})
    -> (!nn.tensor<[B, T], f32> {nn.name = "labels"}, !nn.tensor<[B, T], i64> {nn.name = "target"},
        !nn.tensor<[B, T], i32> {nn.name = "count"}) {
  // CHECK: nnk.elementwise ins(%[[P]], %[[X]] : {{.*}}) outs(%[[LAB]] : !nnk.buffer<[B, T], f32>)
  // CHECK-NEXT: ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32):
  // CHECK-NEXT: %[[NE:.*]] = arith.cmpi ne, %[[A]], %[[B]] : i32
  // CHECK-NEXT: %[[F:.*]] = arith.uitofp %[[NE]] : i1 to f32
  // CHECK-NEXT: nnk.yield %[[F]] : f32
  %ne = nn.compare %post, %x {predicate = #nn<cmp ne>} : (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i1>
  %labels = nn.cast %ne {to = f32} : (!nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], f32>
  // CHECK: nnk.elementwise ins(%[[M]], %[[X]], %[[H]] : {{.*}}) outs(%[[TGT]] : !nnk.buffer<[B, T], i64>)
  // CHECK-NEXT: ^bb0(%[[MM:.*]]: i1, %[[XX:.*]]: i32, %[[HH:.*]]: f32):
  // CHECK: %[[I:.*]] = arith.fptosi %[[HH]] : f32 to i32
  // CHECK: %[[S:.*]] = arith.select %[[MM]], %[[XX]], %[[I]] : i32
  // CHECK: %[[W:.*]] = arith.extsi %[[S]] : i32 to i64
  // CHECK: nnk.yield %[[W]] : i64
  %hi = nn.cast %h {to = i32} : (!nn.tensor<[B, T], f32>) -> !nn.tensor<[B, T], i32>
  %sel = nn.select %mask, %x, %hi : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
  %target = nn.cast %sel {to = i64} : (!nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i64>
  // CHECK: nnk.elementwise ins(%[[M]], %[[H]] : {{.*}}) outs(%[[CNT]] : !nnk.buffer<[B, T], i32>)
  // CHECK: arith.cmpf oge
  // CHECK: arith.extui %{{.*}} : i1 to i32
  // CHECK: arith.extui %{{.*}} : i1 to i32
  // CHECK: arith.addi
  // CHECK: arith.muli
  %zero = nn.constant 0.0 : f32
  %pos = nn.compare %h, %zero {predicate = #nn<cmp ge>} : (!nn.tensor<[B, T], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, T], i1>
  %pi = nn.cast %pos {to = i32} : (!nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
  %mi = nn.cast %mask {to = i32} : (!nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
  %sum = nn.add %mi, %pi : (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
  %three = nn.constant 3 : i32
  %count = nn.mul %sum, %three : (!nn.tensor<[B, T], i32>, !nn.tensor<[], i32>) -> !nn.tensor<[B, T], i32>
  return %labels, %target, %count : !nn.tensor<[B, T], f32>, !nn.tensor<[B, T], i64>, !nn.tensor<[B, T], i32>
}
