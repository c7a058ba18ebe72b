// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// The reserve verifiers: a gradient's `reserve` operand comes from the
// matching forward op with the same attributes; a forward's `reserve`
// result is read only by its gradient op. The old pairing attribute is
// gone.

func.func @reserve_from_argument(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>, %r: !nn.reserve) {
  // expected-error @+1 {{'nn.lstm_grad' op 'reserve' must be the reserve result of an 'nn.lstm'}}
  %dx, %dh0, %dc0, %dw:2 = nn.lstm_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
  return
}

// -----

func.func @reserve_of_other_kind(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  // expected-error @+1 {{'nn.rnn' op 'reserve' may only be read by 'nn.rnn_grad', not by 'nn.gru_grad'}}
  %y, %h, %r = nn.rnn %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %dx, %dh0, %dw:2 = nn.gru_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>)
  return
}

// -----

func.func @reserve_returned(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>) -> !nn.reserve {
  // expected-error @+1 {{'nn.gru' op 'reserve' may only be read by 'nn.gru_grad', not by 'func.return'}}
  %y, %h, %r = nn.gru %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  return %r : !nn.reserve
}

// -----

func.func @lstm_reserve_other_zoneout(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %c, %r = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 7 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.lstm_grad' op 'reserve' comes from an 'nn.lstm' with other attributes than this gradient's}}
  %dx, %dh0, %dc0, %dw:2 = nn.lstm_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false, zoneout = 0.25 : f64, seed = 8 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
  return
}

// -----

func.func @rnn_reserve_other_nonlinearity(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %r = nn.rnn %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, nonlinearity = #nn<nonlinearity relu>} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.rnn_grad' op 'reserve' comes from an 'nn.rnn' with other attributes than this gradient's}}
  %dx, %dh0, %dw:2 = nn.rnn_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>)
  return
}

// -----

func.func @gru_reserve_other_variant(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %r = nn.gru %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.gru_grad' op 'reserve' comes from an 'nn.gru' with other attributes than this gradient's}}
  %dx, %dh0, %dw:2 = nn.gru_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false, variant = #nn<gru_variant cho2014>} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  return
}

// -----

func.func @attention_reserve_other_seed(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>) {
  %a, %r = nn.attention %x, %wi out %wo {kind = #nn.dense, num_heads = 2 : i64, dropout = 0.1 : f64, seed = 4 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>) -> (!nn.tensor<[B, T, 8], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.attention_grad' op 'reserve' comes from an 'nn.attention' with other attributes than this gradient's}}
  %dx, %dwi, %dwo = nn.attention_grad %x, %wi out %wo grad %dy reserve %r {kind = #nn.dense, num_heads = 2 : i64, dropout = 0.1 : f64, seed = 5 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>)
  return
}

// -----

func.func @attention_grad_reserve_from_lstm(%x: !nn.tensor<[B, T, 8], f32>, %wi: !nn.tensor<[24, 8], f32>, %wo: !nn.tensor<[8, 8], f32>, %dy: !nn.tensor<[B, T, 8], f32>, %r: !nn.reserve) {
  // expected-error @+1 {{'nn.attention_grad' op 'reserve' must be the reserve result of an 'nn.attention'}}
  %dx, %dwi, %dwo = nn.attention_grad %x, %wi out %wo grad %dy reserve %r {kind = #nn.dense, num_heads = 2 : i64} : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>, !nn.tensor<[B, T, 8], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[24, 8], f32>, !nn.tensor<[8, 8], f32>)
  return
}

// -----

func.func @reserve_not_last(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>) {
  // expected-error @+1 {{'nn.rnn' op result #1 must be nn tensor of floating-point values, but got '!nn.reserve'}}
  %y, %r, %h = nn.rnn %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.reserve, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @old_reserve_attribute(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>) {
  // expected-error @+1 {{'nn.rnn' op unknown nn dialect attribute 'nn.reserve'}}
  %y, %h = nn.rnn %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, nn.reserve = 0 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}
