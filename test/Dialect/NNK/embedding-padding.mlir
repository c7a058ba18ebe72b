// RUN: nncc-opt %s | nncc-opt | FileCheck %s

// nnk.embedding_grad keeps padding_idx (the row that gets no gradient);
// -1, the default, is not printed.

// CHECK-LABEL: func.func @embedding_grad_padding
// CHECK-SAME: (%[[IDS:.*]]: !nnk.buffer<[4, 6], i64>, %[[DY:.*]]: !nnk.buffer<[4, 6, 8], f32>, %[[OUT:.*]]: !nnk.buffer<[30, 8], f32>)
func.func @embedding_grad_padding(%ids: !nnk.buffer<[4, 6], i64>, %dy: !nnk.buffer<[4, 6, 8], f32>, %out: !nnk.buffer<[30, 8], f32>) {
  // CHECK: nnk.embedding_grad ins(%[[IDS]], %[[DY]]) outs(%[[OUT]]) {padding_idx = 29 : i64} : !nnk.buffer<[4, 6], i64>, !nnk.buffer<[4, 6, 8], f32>, !nnk.buffer<[30, 8], f32>
  nnk.embedding_grad ins(%ids, %dy) outs(%out) {padding_idx = 29 : i64} : !nnk.buffer<[4, 6], i64>, !nnk.buffer<[4, 6, 8], f32>, !nnk.buffer<[30, 8], f32>
  // CHECK-NEXT: nnk.embedding_grad ins(%[[IDS]], %[[DY]]) outs(%[[OUT]]) : !nnk.buffer
  nnk.embedding_grad ins(%ids, %dy) outs(%out) : !nnk.buffer<[4, 6], i64>, !nnk.buffer<[4, 6, 8], f32>, !nnk.buffer<[30, 8], f32>
  return
}
