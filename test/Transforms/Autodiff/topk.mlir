// RUN: nncc-opt %s --nncc-autodiff | FileCheck %s

// topk next to a loss: its values' adjoint is scattered to the saved
// indices by nn.topk_grad (the indices get none, and x is not saved).
module {
  nn.parameter @head : !nn.tensor<[5, 4], f32>
  func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[B, 2], i32> {nn.name = "idx"}, !nn.tensor<[], f32> {nn.name = "loss"}) {
    %head = nn.get_parameter @head : !nn.tensor<[5, 4], f32>
    %logits = nn.linear %x, %head : (!nn.tensor<[B, 4], f32>, !nn.tensor<[5, 4], f32>) -> !nn.tensor<[B, 5], f32>
    %v, %i = nn.topk %logits {k = 2 : i64} : (!nn.tensor<[B, 5], f32>) -> (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 2], i32>)
    %loss = nn.reduce_mean %v : (!nn.tensor<[B, 2], f32>) -> !nn.tensor<[], f32>
    return %i, %loss : !nn.tensor<[B, 2], i32>, !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[LOGITS:.*]] = nn.linear
// CHECK: %[[V:.*]], %[[I:.*]] = nn.topk %[[LOGITS]] {k = 2 : i64} : (!nn.tensor<[B, 5], f32>) -> (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 2], i32>)
// CHECK: %[[SAVED:.*]] = nn.save %[[I]] {rule = "nn.topk"}
// CHECK-NOT: nn.save {{.*}}"nn.topk"
// CHECK: nn.topk_grad %{{.*}}, %[[SAVED]] {size = 5 : i64} : (!nn.tensor<[B, 2], f32>, !nn.tensor<[B, 2], i32>) -> !nn.tensor<[B, 5], f32>
// CHECK: return %[[I]], %{{.*}}, %{{.*}} : !nn.tensor<[B, 2], i32>, !nn.tensor<[], f32>, !nn.tensor<[5, 4], f32>
