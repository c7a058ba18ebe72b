// RUN: nncc-opt %s -split-input-file -verify-diagnostics

// checkpoint_every: at least 1, and the same on both ops of a reserve pair.

func.func @ckpt_mismatch(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %c, %r = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 8 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.lstm_grad' op 'checkpoint_every' (4) differs from its reserve's 'nn.lstm' (8)}}
  %dx, %dh0, %dc0, %dw:2 = nn.lstm_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 4 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
  return
}

// -----

func.func @ckpt_only_on_grad(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %r = nn.gru %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.gru_grad' op 'checkpoint_every' (2) differs from its reserve's 'nn.gru' (absent)}}
  %dx, %dh0, %dw:2 = nn.gru_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 2 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  return
}

// -----

func.func @ckpt_only_on_forward(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %r = nn.rnn %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 3 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.rnn_grad' op 'checkpoint_every' (absent) differs from its reserve's 'nn.rnn' (3)}}
  %dx, %dh0, %dw:2 = nn.rnn_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>)
  return
}

// -----

func.func @ckpt_zero(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>) {
  // expected-error @+1 {{'nn.lstm' op 'checkpoint_every' must be at least 1, got 0}}
  %y, %h, %c = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 0 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @ckpt_negative_grad(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  // expected-error @+1 {{'nn.gru_grad' op 'checkpoint_every' must be at least 1, got -2}}
  %dx, %dh0, %dw:2 = nn.gru_grad %x weights(%wih, %whh) dy %dy {hidden_size = 4 : i64, has_bias = false, checkpoint_every = -2 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  return
}

// -----

// checkpoint_snapshots (the binomial schedule): at least 1, exclusive with
// checkpoint_every, and the same on both ops of a reserve pair.

func.func @snapshots_zero(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>) {
  // expected-error @+1 {{'nn.lstm' op 'checkpoint_snapshots' must be at least 1, got 0}}
  %y, %h, %c = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_snapshots = 0 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @snapshots_and_every(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>) {
  // expected-error @+1 {{'nn.gru' op 'checkpoint_every' and 'checkpoint_snapshots' are exclusive}}
  %y, %h = nn.gru %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_every = 4 : i64, checkpoint_snapshots = 3 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  return
}

// -----

func.func @snapshots_negative_grad(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[4, 3], f32>, %whh: !nn.tensor<[4, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  // expected-error @+1 {{'nn.rnn_grad' op 'checkpoint_snapshots' must be at least 1, got -1}}
  %dx, %dh0, %dw:2 = nn.rnn_grad %x weights(%wih, %whh) dy %dy {hidden_size = 4 : i64, has_bias = false, checkpoint_snapshots = -1 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>)
  return
}

// -----

func.func @snapshots_mismatch(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %c, %r = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_snapshots = 8 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.lstm_grad' op 'checkpoint_snapshots' (3) differs from its reserve's 'nn.lstm' (8)}}
  %dx, %dh0, %dc0, %dw:2 = nn.lstm_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false, checkpoint_snapshots = 3 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
  return
}

// -----

func.func @snapshots_only_on_forward(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[12, 3], f32>, %whh: !nn.tensor<[12, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) {
  %y, %h, %r = nn.gru %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false, checkpoint_snapshots = 2 : i64} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  // expected-error @+1 {{'nn.gru_grad' op 'checkpoint_snapshots' (absent) differs from its reserve's 'nn.gru' (2)}}
  %dx, %dh0, %dw:2 = nn.gru_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  return
}
