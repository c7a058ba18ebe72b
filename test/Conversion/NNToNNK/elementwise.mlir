// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// A chain of single-use elementwise ops with a broadcast scalar constant is
// one nnk.elementwise; the constant is inlined, the result written straight
// into the output argument.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[A:.*]]: !nnk.buffer<[B, 8], f32> {nn.name = "a"}, %[[B:.*]]: !nnk.buffer<[8], f32> {nn.name = "b"}, %[[Y:.*]]: !nnk.buffer<[B, 8], f32> {nn.name = "y", nnk.output})
// CHECK-NOT: nnk.alloc
// CHECK: nnk.elementwise ins(%[[A]], %[[B]] : !nnk.buffer<[B, 8], f32>, !nnk.buffer<[8], f32>) outs(%[[Y]] : !nnk.buffer<[B, 8], f32>)
// CHECK: ^bb0(%[[X0:.*]]: f32, %[[X1:.*]]: f32):
// CHECK: %[[S:.*]] = arith.addf %[[X0]], %[[X1]] : f32
// CHECK: %[[C:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[M:.*]] = arith.mulf %[[C]], %[[S]] : f32
// CHECK: %[[E:.*]] = math.exp
// CHECK: arith.divf
// CHECK: nnk.yield
// CHECK-NOT: nnk.elementwise
// CHECK: return
func.func @chain(%a: !nn.tensor<[B, 8], f32> {nn.name = "a"}, %b: !nn.tensor<[8], f32> {nn.name = "b"}) -> (!nn.tensor<[B, 8], f32> {nn.name = "y"}) {
  %s = nn.add %a, %b : (!nn.tensor<[B, 8], f32>, !nn.tensor<[8], f32>) -> !nn.tensor<[B, 8], f32>
  %c = nn.constant 5.000000e-01 : f32
  %m = nn.mul %c, %s : (!nn.tensor<[], f32>, !nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32>
  %g = nn.sigmoid %m : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32>
  return %g : !nn.tensor<[B, 8], f32>
}

// A value with two users ends a group: two kernels.
// CHECK-LABEL: func.func @two_users
// CHECK: %[[T:.*]] = nnk.alloc : !nnk.buffer<[4], f32>
// CHECK: nnk.elementwise ins(%{{.*}} : !nnk.buffer<[4], f32>) outs(%[[T]] : !nnk.buffer<[4], f32>)
// CHECK: math.tanh
// CHECK: nnk.elementwise ins(%[[T]] : !nnk.buffer<[4], f32>) outs(%{{.*}} : !nnk.buffer<[4], f32>)
// CHECK: arith.mulf
// CHECK-NOT: nnk.elementwise
func.func @two_users(%a: !nn.tensor<[4], f32>) -> !nn.tensor<[4], f32> {
  %t = nn.tanh %a : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  %m = nn.mul %t, %t : (!nn.tensor<[4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  return %m : !nn.tensor<[4], f32>
}

// Activations in their scalar forms.
// CHECK-LABEL: func.func @activations
// CHECK: nnk.elementwise
// CHECK: arith.maximumf
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: math.erf
// CHECK: math.log
// CHECK: arith.negf
func.func @activations(%a: !nn.tensor<[4], f32>) -> !nn.tensor<[4], f32> {
  %0 = nn.relu %a : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  %1 = nn.leaky_relu %0 {alpha = 2.000000e-01 : f64} : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  %2 = nn.gelu %1 : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  %3 = nn.log %2 : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  %4 = nn.neg %3 : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  return %4 : !nn.tensor<[4], f32>
}

// A constant that no elementwise op absorbs is a filled scalar buffer;
// dropout is the identity in inference.
// CHECK-LABEL: func.func @standalone_constant
// CHECK-SAME: (%[[A:.*]]: !nnk.buffer<[4], f32>, %[[C:.*]]: !nnk.buffer<[], f32> {nnk.output}, %[[D:.*]]: !nnk.buffer<[4], f32> {nnk.output})
// CHECK: nnk.fill outs(%[[C]]) {value = 2.000000e+00 : f64}
// CHECK: nnk.copy ins(%[[A]]) outs(%[[D]])
// CHECK-NOT: dropout
func.func @standalone_constant(%a: !nn.tensor<[4], f32>) -> (!nn.tensor<[], f32>, !nn.tensor<[4], f32>) {
  %c = nn.constant 2.000000e+00 : f32
  %d = nn.dropout %a {p = 5.000000e-01 : f64} : (!nn.tensor<[4], f32>) -> !nn.tensor<[4], f32>
  return %c, %d : !nn.tensor<[], f32>, !nn.tensor<[4], f32>
}
