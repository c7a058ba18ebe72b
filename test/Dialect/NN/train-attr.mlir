// RUN: nncc-opt %s -split-input-file | FileCheck %s
// RUN: nncc-opt %s -split-input-file | nncc-opt -split-input-file | FileCheck %s

// The training configuration and parameter groups round-trip; keys left out
// are filled with their defaults and printed.

// CHECK-LABEL: module attributes
// CHECK-SAME: nn.dims = ["B"]
// CHECK-SAME: nn.model = "m"
// CHECK-SAME: nn.train = #nn.train<optimizer = #nn.optimizer<adamw, lr = 6.9999999999999994E-5, betas = [9.000000e-01, 0.99899999999999999], eps = 1.000000e-04, weight_decay = 2.000000e-02>, schedule = #nn.schedule<warmup_cosine, warmup_fraction = 3.000000e-01, cycles = 2.000000e-01>, clip = 5.000000e+00, layer_decay = 0.94999999999999996, epochs = 20, batch = 8, seed = 3>
// CHECK: nn.parameter @embed.weight : !nn.tensor<[10, 4], f32> group #nn.param_group<decay, embedding>
// CHECK: nn.parameter @stack.1.bias : !nn.tensor<[4], f32> init #nn.init<zeros> group #nn.param_group<no_decay, layer 1>
// CHECK: nn.parameter @head.weight : !nn.tensor<[2, 4], f32> group #nn.param_group<decay>
// CHECK: func.func @forward(%{{.*}}: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"})
// CHECK-SAME: attributes {nn.training}
module attributes {nn.model = "m", nn.dims = ["B"],
    nn.train = #nn.train<optimizer = #nn.optimizer<adamw, lr = 7.0e-5, eps = 1.0e-4, betas = [0.9, 0.999], weight_decay = 0.02>,
                         schedule = #nn.schedule<warmup_cosine, warmup_fraction = 0.3, cycles = 0.2>,
                         clip = 5, layer_decay = 0.95, epochs = 20, batch = 8, seed = 3>} {
  nn.parameter @embed.weight : !nn.tensor<[10, 4], f32> group #nn.param_group<decay, embedding>
  nn.parameter @stack.1.bias : !nn.tensor<[4], f32> init #nn.init<zeros> group #nn.param_group<no_decay, layer 1>
  nn.parameter @head.weight : !nn.tensor<[2, 4], f32> group #nn.param_group<decay>
  func.func @forward(%x: !nn.tensor<[B, 4], f32> {nn.name = "x"}) -> (!nn.tensor<[B, 4], f32> {nn.name = "y"}) attributes {nn.training} {
    return %x : !nn.tensor<[B, 4], f32>
  }
}

// -----

// CHECK-LABEL: module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adam, lr = 1.000000e-03, betas = [9.000000e-01, 0.99899999999999999], eps = 1.000000e-08, weight_decay = 0.000000e+00>, schedule = #nn.schedule<constant>, layer_decay = 1.000000e+00, epochs = 1, batch = 32, seed = 0>}
module attributes {nn.train = #nn.train<>} {}

// -----

// CHECK-LABEL: module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<sgd, lr = 1.000000e-01, momentum = 9.000000e-01, weight_decay = 0.000000e+00, nesterov = true>, schedule = #nn.schedule<step, step_size = 30, gamma = 1.000000e-01>
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<sgd, lr = 0.1, momentum = 0.9, nesterov = true>, schedule = #nn.schedule<step, step_size = 30>>} {}

// -----

// CHECK-LABEL: module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adam, lr = 1.000000e-03, betas = [9.000000e-01, 0.99899999999999999], eps = 1.000000e-08, weight_decay = 0.000000e+00>, schedule = #nn.schedule<linear, warmup = 10, total = 100>
module attributes {nn.train = #nn.train<schedule = #nn.schedule<linear, warmup = 10, total = 100>>} {}

// -----

// CHECK-LABEL: module attributes {nn.train = #nn.train<{{.*}}schedule = #nn.schedule<cosine, total = 500>
module attributes {nn.train = #nn.train<schedule = #nn.schedule<cosine, total = 500>>} {}
