// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// Zoneout is on in training-mode functions only: standalone nn.zoneout
// becomes nnk.zoneout (seeded mask), nn.lstm's zoneout and seed reach the
// recurrent scan. In inference, and in nn.eval_mode training functions,
// zoneout is the identity and the LSTM's zoneout is 0.

// CHECK-LABEL: func.func @train
// CHECK: nnk.recurrent_scan {{.*}}seed = 7 : i64{{.*}}zoneout = 2.500000e-01 : f64}
// CHECK: nnk.zoneout ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {p = 4.000000e-01 : f64, seed = 3 : i64}
func.func @train(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %prev: !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32> attributes {nn.training} {
  %y, %h, %c = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  %z = nn.zoneout %y, %prev {p = 0.4 : f64, seed = 3 : i64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
  return %z : !nn.tensor<[B, T, 4], f32>
}

// CHECK-LABEL: func.func @eval_train
// CHECK: nnk.recurrent_scan
// CHECK-NOT: zoneout
// CHECK-LABEL: func.func @infer
// CHECK: nnk.recurrent_scan
// CHECK-NOT: zoneout
// CHECK: return
func.func @eval_train(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %prev: !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32> attributes {nn.training, nn.eval_mode} {
  %y, %h, %c = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  %z = nn.zoneout %y, %prev {p = 0.4 : f64, seed = 3 : i64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
  return %z : !nn.tensor<[B, T, 4], f32>
}

func.func @infer(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %prev: !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32> {
  %y, %h, %c = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  %z = nn.zoneout %y, %prev {p = 0.4 : f64, seed = 3 : i64} : (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
  return %z : !nn.tensor<[B, T, 4], f32>
}
