// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// Two-layer bidirectional LSTM with lengths: per layer and direction one
// input-projection gemm (bias_ih) and one recurrent scan (bias_hh), both
// directions writing their half of the layer's output; h_n is one [L·D, B, H]
// buffer indexed by state_index.
// CHECK-LABEL: func.func @bilstm
// CHECK-SAME: (%[[X:.*]]: !nnk.buffer<[B, T, 3], f32>, %[[LEN:.*]]: !nnk.buffer<[B], i32>, %[[WIH0:[^:]*]]: !nnk.buffer<[16, 3], f32>, %[[WHH:[^:]*]]: !nnk.buffer<[16, 4], f32>, %[[BI:[^:]*]]: !nnk.buffer<[16], f32>, %[[BH:[^:]*]]: !nnk.buffer<[16], f32>, %[[WIH1:[^:]*]]: !nnk.buffer<[16, 8], f32>, %[[Y:[^:]*]]: !nnk.buffer<[B, T, 8], f32> {nnk.output}, %[[HN:[^:]*]]: !nnk.buffer<[4, B, 4], f32> {nnk.output})
// CHECK: %[[Y0:.*]] = nnk.alloc : !nnk.buffer<[B, T, 8], f32>
// CHECK: %[[P0:.*]] = nnk.alloc : !nnk.buffer<[B, T, 16], f32>
// CHECK: nnk.gemm ins(%[[X]], %[[WIH0]]) bias(%[[BI]]) outs(%[[P0]])
// CHECK: nnk.recurrent_scan ins(%[[P0]], %[[WHH]]) bias(%[[BH]]) lengths(%[[LEN]]) outs(%[[Y0]]) h_n(%[[HN]]) {cell = #nnk<cell lstm>, hidden_size = 4 : i64, num_directions = 2 : i64}
// CHECK: %[[P1:.*]] = nnk.alloc : !nnk.buffer<[B, T, 16], f32>
// CHECK: nnk.gemm ins(%[[X]], %[[WIH0]]) bias(%[[BI]]) outs(%[[P1]])
// CHECK: nnk.recurrent_scan ins(%[[P1]], %[[WHH]]) bias(%[[BH]]) lengths(%[[LEN]]) outs(%[[Y0]]) h_n(%[[HN]]) {cell = #nnk<cell lstm>, hidden_size = 4 : i64, num_directions = 2 : i64, reverse = true, state_index = 1 : i64}
// CHECK: nnk.gemm ins(%[[Y0]], %[[WIH1]])
// CHECK: nnk.recurrent_scan ins(%{{.*}}, %[[WHH]]) bias(%[[BH]]) lengths(%[[LEN]]) outs(%[[Y]]) h_n(%[[HN]]) {{{.*}}state_index = 2 : i64}
// CHECK: nnk.gemm ins(%[[Y0]], %[[WIH1]])
// CHECK: nnk.recurrent_scan ins(%{{.*}}, %[[WHH]]) bias(%[[BH]]) lengths(%[[LEN]]) outs(%[[Y]]) h_n(%[[HN]]) {{{.*}}reverse = true, state_index = 3 : i64}
// CHECK-NOT: nnk.recurrent_scan
func.func @bilstm(%x: !nn.tensor<[B, T, 3], f32>, %len: !nn.tensor<[B], i32>,
                  %wih0: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>,
                  %bi: !nn.tensor<[16], f32>, %bh: !nn.tensor<[16], f32>,
                  %wih1: !nn.tensor<[16, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[4, B, 4], f32>) {
  %y, %h, %c = nn.lstm %x lengths %len weights(%wih0, %whh, %bi, %bh, %wih0, %whh, %bi, %bh, %wih1, %whh, %bi, %bh, %wih1, %whh, %bi, %bh) {bidirectional = true, hidden_size = 4 : i64, num_layers = 2 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[B], i32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16, 8], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[16], f32>, !nn.tensor<[16], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[4, B, 4], f32>, !nn.tensor<[4, B, 4], f32>)
  return %y, %h : !nn.tensor<[B, T, 8], f32>, !nn.tensor<[4, B, 4], f32>
}

// Cho GRU without bias, with h0; unused h_n is not written.
// CHECK-LABEL: func.func @gru_cho
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) :
// CHECK: nnk.recurrent_scan ins(%{{.*}}, %{{.*}}) h0(%{{.*}}) outs(%{{.*}}) {cell = #nnk<cell gru_cho2014>, hidden_size = 4 : i64}
func.func @gru_cho(%x: !nn.tensor<[B, T, 3], f32>, %h0: !nn.tensor<[1, B, 4], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>) -> !nn.tensor<[B, T, 4], f32> {
  %y, %h = nn.gru %x h0 %h0 weights(%wih, %whh) {has_bias = false, hidden_size = 4 : i64, variant = #nn<gru_variant cho2014>} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return %y : !nn.tensor<[B, T, 4], f32>
}

// Elman RNN with relu; final state only.
// CHECK-LABEL: func.func @elman
// CHECK: nnk.recurrent_scan ins(%{{.*}}, %{{.*}}) bias(%{{.*}}) outs(%{{.*}}) h_n(%{{.*}}) {cell = #nnk<cell rnn_relu>, hidden_size = 4 : i64}
func.func @elman(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>, %b: !nn.tensor<[4], f32>) -> !nn.tensor<[1, B, 4], f32> {
  %y, %h = nn.rnn %x weights(%wih, %whh, %b, %b) {hidden_size = 4 : i64, nonlinearity = #nn<nonlinearity relu>} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[4], f32>, !nn.tensor<[4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return %h : !nn.tensor<[1, B, 4], f32>
}

// A cell: input-projection gemm + one recurrent_cell step.
// CHECK-LABEL: func.func @lstm_cell
// CHECK: %[[P:.*]] = nnk.alloc : !nnk.buffer<[B, 16], f32>
// CHECK: nnk.gemm ins(%{{.*}}, %{{.*}}) outs(%[[P]])
// CHECK: nnk.recurrent_cell ins(%[[P]], %{{.*}}, %{{.*}}) c(%{{.*}}) outs(%{{.*}}) c_out(%{{.*}}) {cell = #nnk<cell lstm>}
func.func @lstm_cell(%x: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 4], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>) {
  %h1, %c1 = nn.lstm_cell %x, %h, %h, %wih, %whh : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>)
  return %h1, %c1 : !nn.tensor<[B, 4], f32>, !nn.tensor<[B, 4], f32>
}
