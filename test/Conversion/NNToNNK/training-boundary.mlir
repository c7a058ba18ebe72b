// RUN: nncc-opt --pass-pipeline='builtin.module(func.func(nn-insert-training-boundary))' %s | FileCheck %s

// A training function gets one nnk.boundary after its last residual (where
// forward_train ends and backward begins); without residuals, before the
// return. Other functions get none.

// CHECK-LABEL: func.func @train
// CHECK: %[[T:.*]] = nn.tanh
// CHECK: nn.save %[[T]] {rule = "nn.tanh"}
// CHECK: %[[S:.*]] = nn.save %{{.*}} {index = 1 : i64, rule = "nn.sigmoid"}
// CHECK-NEXT: nnk.boundary
// CHECK-NEXT: nn.mul %[[S]]
// CHECK-NOT: nnk.boundary
// CHECK: return
func.func @train(%x: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> attributes {nn.training} {
  %t = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %s0 = nn.save %t {rule = "nn.tanh"} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %g = nn.sigmoid %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %s1 = nn.save %g {index = 1 : i64, rule = "nn.sigmoid"} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  %m = nn.mul %s1, %s0 : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %m : !nn.tensor<[B, 4], f32>
}

// CHECK-LABEL: func.func @train_no_residuals
// CHECK: %[[T:.*]] = nn.tanh
// CHECK-NEXT: nnk.boundary
// CHECK-NEXT: return %[[T]]
func.func @train_no_residuals(%x: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> attributes {nn.training} {
  %t = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %t : !nn.tensor<[B, 4], f32>
}

// CHECK-LABEL: func.func @infer
// CHECK-NOT: nnk.boundary
// CHECK: return
func.func @infer(%x: !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32> {
  %t = nn.tanh %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
  return %t : !nn.tensor<[B, 4], f32>
}
