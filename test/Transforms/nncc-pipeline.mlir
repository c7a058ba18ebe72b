// RUN: nncc-opt --nncc-pipeline='grad=1 stop=nn' %s | FileCheck %s --check-prefix=GRAD
// RUN: nncc-opt --nncc-pipeline='grad=1 train-mode=0 stop=nn' %s | FileCheck %s --check-prefix=EVAL
// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s --check-prefix=NNK
// RUN: nncc-opt --nncc-pipeline='grad=1' %s | FileCheck %s --check-prefix=NNK-GRAD
// RUN: nncc-opt --nncc-pipeline='grad=1 stop=nn' --dump-pass-pipeline %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES-NN
// RUN: nncc-opt --nncc-pipeline --dump-pass-pipeline %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES

// The named pipeline: [nncc-autodiff], then the nn-level preparation, the
// conversion and the destination forwarding. nncc-opt registers the gradient
// rules (GradientOpInterface models) itself; the autodiff pass only uses them.

// GRAD-LABEL: func.func @forward(
// GRAD: nn.dropout
// GRAD-LABEL: func.func @forward_backward(
// GRAD-SAME: attributes {nn.training}
// GRAD: nn.dropout
// GRAD: nn.dropout

// EVAL-LABEL: func.func @forward_backward(
// EVAL-SAME: attributes {nn.eval_mode, nn.training}

// NNK-LABEL: func.func @forward(
// NNK-SAME: nnk.output}
// NNK-NOT: nn.dropout
// NNK-NOT: nnk.dropout
// NNK: return

// NNK-GRAD-LABEL: func.func @forward_backward(
// NNK-GRAD: nnk.dropout
// NNK-GRAD: nnk.boundary

// PASSES-NN: builtin.module(
// PASSES-NN-NEXT: nncc-autodiff{function=forward fuse-loss-heads=false regularizers=true vjp=false
// PASSES-NN-NEXT: )
// PASSES: builtin.module(
// PASSES-NEXT: func.func(
// PASSES-NEXT: nn-insert-training-boundary,
// PASSES-NEXT: nn-inference-semantics
// PASSES-NEXT: ),
// PASSES-NEXT: nn-expand-reversible{stored-last=-1},
// PASSES-NEXT: convert-nn-to-nnk,
// PASSES-NEXT: nnk-forward-destinations
// PASSES-NEXT: )

module attributes {nn.model = "m"} {
  nn.parameter @w : !nn.tensor<[4, 4], f32> init #nn.init<uniform, -0.5, 0.5>
  func.func @forward(%x: !nn.tensor<[B, 4], f32>) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %w = nn.get_parameter @w : !nn.tensor<[4, 4], f32>
    %l = nn.linear %x, %w : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %d = nn.dropout %l {p = 0.5 : f64, seed = 3 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    %m = nn.reduce_mean %d : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[], f32>
    return %m : !nn.tensor<[], f32>
  }
}
