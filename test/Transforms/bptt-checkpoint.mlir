// RUN: nncc-opt %s --nn-bptt-checkpoint=every=8 | FileCheck %s
// RUN: not nncc-opt %s --nn-bptt-checkpoint 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not nncc-opt %s --nn-bptt-checkpoint="every=2 snapshots=3" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: nncc-opt %s --nn-bptt-checkpoint=snapshots=3 | FileCheck %s --check-prefix=SNAP

// nn-bptt-checkpoint sets checkpoint_every on both ops of every recurrent
// reserve pair, and leaves a stack without a reserve alone.

// ZERO: nn-bptt-checkpoint: exactly one of 'every' and 'snapshots' must be at least 1, got 0 and 0
// BOTH: nn-bptt-checkpoint: exactly one of 'every' and 'snapshots' must be at least 1, got 2 and 3

// With snapshots (the binomial schedule): checkpoint_snapshots instead.
// SNAP-LABEL: func.func @pairs
// SNAP: %{{.*}}, %{{.*}}, %{{.*}}, %[[R:.*]] = nn.lstm {{.*}}checkpoint_snapshots = 3 : i64
// SNAP: nn.lstm_grad {{.*}} reserve %[[R]] {{{.*}}checkpoint_snapshots = 3 : i64
// SNAP: %{{.*}}, %{{.*}}, %[[G:.*]] = nn.gru {{.*}}checkpoint_snapshots = 3 : i64
// SNAP: nn.gru_grad {{.*}} reserve %[[G]] {{{.*}}checkpoint_snapshots = 3 : i64
// SNAP-NOT: checkpoint_every
// SNAP: return

// CHECK-LABEL: func.func @pairs
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[R:.*]] = nn.lstm {{.*}}checkpoint_every = 8 : i64
// CHECK: nn.lstm_grad {{.*}} reserve %[[R]] {{{.*}}checkpoint_every = 8 : i64
// CHECK: %{{.*}}, %{{.*}}, %[[G:.*]] = nn.gru {{.*}}checkpoint_every = 8 : i64
// CHECK: nn.gru_grad {{.*}} reserve %[[G]] {{{.*}}checkpoint_every = 8 : i64
// CHECK: nn.rnn %
// CHECK-NOT: checkpoint_every
// CHECK: nn.rnn_grad
// CHECK-NOT: checkpoint_every
// CHECK: return
func.func @pairs(%x: !nn.tensor<[B, T, 3], f32>, %wih: !nn.tensor<[16, 3], f32>, %whh: !nn.tensor<[16, 4], f32>, %gih: !nn.tensor<[12, 3], f32>, %ghh: !nn.tensor<[12, 4], f32>, %rih: !nn.tensor<[4, 3], f32>, %rhh: !nn.tensor<[4, 4], f32>, %dy: !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[16, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[4, 3], f32>) {
  %y, %h, %c, %r = nn.lstm %x weights(%wih, %whh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %dx, %dh0, %dc0, %dw:2 = nn.lstm_grad %x weights(%wih, %whh) dy %dy reserve %r {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[16, 3], f32>, !nn.tensor<[16, 4], f32>)
  %gy, %gh, %gr = nn.gru %x weights(%gih, %ghh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>, !nn.reserve)
  %gdx, %gdh0, %gdw:2 = nn.gru_grad %x weights(%gih, %ghh) dy %dy reserve %gr {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>, !nn.tensor<[B, T, 4], f32>, !nn.reserve) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[12, 4], f32>)
  %ry, %rh = nn.rnn %x weights(%rih, %rhh) {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>) -> (!nn.tensor<[B, T, 4], f32>, !nn.tensor<[1, B, 4], f32>)
  %rdx, %rdh0, %rdw:2 = nn.rnn_grad %x weights(%rih, %rhh) dy %dy {hidden_size = 4 : i64, has_bias = false} : (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>, !nn.tensor<[B, T, 4], f32>) -> (!nn.tensor<[B, T, 3], f32>, !nn.tensor<[1, B, 4], f32>, !nn.tensor<[4, 3], f32>, !nn.tensor<[4, 4], f32>)
  return %dw#0, %gdw#0, %rdw#0 : !nn.tensor<[16, 3], f32>, !nn.tensor<[12, 3], f32>, !nn.tensor<[4, 3], f32>
}
