// RUN: nncc-opt %s | FileCheck %s
// RUN: nncc-opt %s | nncc-opt | FileCheck %s

// CHECK-LABEL: func.func @roles
// CHECK-SAME: nn.role = #nn.role<token_ids, limit = 30522>
// CHECK-SAME: nn.role = #nn.role<lengths, limit = T>
// CHECK-SAME: nn.role = #nn.role<class_targets>
// CHECK-SAME: nn.role = #nn.role<binary_targets>
// CHECK-SAME: nn.role = #nn.role<times>
// CHECK-SAME: nn.role = #nn.role<mask>
func.func @roles(%ids: !nn.tensor<[B, T], i32> {nn.role = #nn.role<token_ids, limit = 30522>},
                 %len: !nn.tensor<[B], i32> {nn.role = #nn.role<lengths, limit = T>},
                 %tags: !nn.tensor<[B, T], i32> {nn.role = #nn.role<class_targets>},
                 %y: !nn.tensor<[B, 1], f32> {nn.role = #nn.role<binary_targets>},
                 %t: !nn.tensor<[B, T], f32> {nn.role = #nn.role<times>},
                 %m: !nn.tensor<[B, T], i1> {nn.role = #nn.role<mask>}) {
  return
}
