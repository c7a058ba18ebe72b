// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// The typed train clause (#nn.train, #nn.optimizer, #nn.schedule), the
// parameter groups and the nn dialect's discardable attributes.

// expected-error @+1 {{unknown optimizer 'adagrad' (expected adam, adamw or sgd)}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adagrad, lr = 0.1>>} {}

// -----

// expected-error @+1 {{unknown schedule 'exponential' (expected constant, warmup_cosine, cosine, linear or step)}}
module attributes {nn.train = #nn.train<schedule = #nn.schedule<exponential>>} {}

// -----

// expected-error @+1 {{unknown key 'momentum' for optimizer adam (expected lr, betas, eps or weight_decay)}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adam, momentum = 0.9>>} {}

// -----

// expected-error @+1 {{unknown key 'warmup' for schedule step (expected step_size, gamma)}}
module attributes {nn.train = #nn.train<schedule = #nn.schedule<step, step_size = 3, warmup = 2>>} {}

// -----

// expected-error @+1 {{unknown key 'total' for schedule constant (it takes none)}}
module attributes {nn.train = #nn.train<schedule = #nn.schedule<constant, total = 2>>} {}

// -----

// expected-error @+1 {{unknown key 'warmup' in #nn.train (expected optimizer, schedule, clip, layer_decay, epochs, batch or seed)}}
module attributes {nn.train = #nn.train<warmup = 3>} {}

// -----

// expected-error @+1 {{key 'clip' given more than once}}
module attributes {nn.train = #nn.train<clip = 1.0, clip = 2.0>} {}

// -----

// expected-error @+1 {{'lr' expects a number, got "fast"}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adam, lr = "fast">>} {}

// -----

// expected-error @+1 {{'epochs' expects an integer, got 2.500000e+00 : f64}}
module attributes {nn.train = #nn.train<epochs = 2.5>} {}

// -----

// expected-error @+1 {{'nesterov' expects true or false, got 1 : i64}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<sgd, lr = 0.1, nesterov = 1>>} {}

// -----

// expected-error @+1 {{'optimizer' expects an #nn.optimizer<...>, got #nn.schedule<constant>}}
module attributes {nn.train = #nn.train<optimizer = #nn.schedule<constant>>} {}

// -----

// expected-error @+1 {{'betas' expects two numbers, got 3}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adam, betas = [0.9, 0.99, 0.999]>>} {}

// -----

// expected-error @+1 {{adam: betas must be in [0, 1), got 1}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adam, betas = [0.9, 1.0]>>} {}

// -----

// expected-error @+1 {{adamw: lr must be > 0, got 0}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adamw, lr = 0.0>>} {}

// -----

// expected-error @+1 {{adam: eps must be > 0, got -1}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<adam, eps = -1.0>>} {}

// -----

// expected-error @+1 {{sgd: weight_decay must be >= 0, got -1.000000e-01}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<sgd, lr = 0.1, weight_decay = -0.1>>} {}

// -----

// expected-error @+1 {{optimizer sgd needs 'lr'}}
module attributes {nn.train = #nn.train<optimizer = #nn.optimizer<sgd, momentum = 0.9>>} {}

// -----

// expected-error @+1 {{schedule step needs 'step_size'}}
module attributes {nn.train = #nn.train<schedule = #nn.schedule<step, gamma = 0.5>>} {}

// -----

// expected-error @+1 {{warmup_cosine: warmup_fraction must be in [0, 1), got 1.5}}
module attributes {nn.train = #nn.train<schedule = #nn.schedule<warmup_cosine, warmup_fraction = 1.5>>} {}

// -----

// expected-error @+1 {{'total' must be >= 1, got 0}}
module attributes {nn.train = #nn.train<schedule = #nn.schedule<cosine, total = 0>>} {}

// -----

// expected-error @+1 {{'clip' must be > 0, got 0}}
module attributes {nn.train = #nn.train<clip = 0.0>} {}

// -----

// expected-error @+1 {{train: layer_decay must be in (0, 1], got 1.5}}
module attributes {nn.train = #nn.train<layer_decay = 1.5>} {}

// -----

// expected-error @+1 {{train: batch must be >= 1, got 0}}
module attributes {nn.train = #nn.train<batch = 0>} {}

// -----

// The untyped dictionary of earlier versions is rejected.
// expected-error @+1 {{'builtin.module' op 'nn.train' must be an #nn.train<...>, got {optimizer = {name = "adam"}}}}
module attributes {nn.train = {optimizer = {name = "adam"}}} {}

// -----

// expected-error @+1 {{'builtin.module' op 'nn.model' must be a string, got 3 : i64}}
module attributes {nn.model = 3} {}

// -----

// expected-error @+1 {{'builtin.module' op 'nn.dims' must be an array of strings, got ["B", 2]}}
module attributes {nn.dims = ["B", 2]} {}

// -----

// expected-error @+1 {{'builtin.module' op unknown nn dialect attribute 'nn.trian'}}
module attributes {nn.trian = #nn.train<>} {}

// -----

module {
  // expected-error @+1 {{'func.func' op 'nn.model' is a module attribute}}
  func.func @f() attributes {nn.model = "m"} {
    return
  }
}

// -----

module {
  // expected-error @+1 {{'func.func' op 'nn.training' must be a unit attribute}}
  func.func @f() attributes {nn.training = 1} {
    return
  }
}

// -----

module {
  // expected-error @+1 {{'func.func' op 'nn.name' must be a string, got 1 : i64}}
  func.func @f(%x: !nn.tensor<[2], f32> {nn.name = 1}) {
    return
  }
}

// -----

module {
  // expected-error @+1 {{'func.func' op unknown nn dialect result attribute 'nn.nmae'}}
  func.func @f(%x: !nn.tensor<[2], f32>) -> (!nn.tensor<[2], f32> {nn.nmae = "y"}) {
    return %x : !nn.tensor<[2], f32>
  }
}

// -----

// expected-error @+1 {{expected 'decay' or 'no_decay', got 'nodecay'}}
nn.parameter @w : !nn.tensor<[2], f32> group #nn.param_group<nodecay>

// -----

// expected-error @+1 {{expected 'layer <index>' or 'embedding', got 'head'}}
nn.parameter @w : !nn.tensor<[2], f32> group #nn.param_group<decay, head>

// -----

// expected-error @+1 {{param_group: layer must be >= 0, got -1}}
nn.parameter @w : !nn.tensor<[2], f32> group #nn.param_group<decay, layer -1>
