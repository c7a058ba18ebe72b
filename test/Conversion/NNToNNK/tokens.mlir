// RUN: nncc-opt --nncc-pipeline %s | FileCheck %s

// nn.mask_tokens, nn.sample (with its row mask) and nn.axial_position become
// one nnk op each; nn.stop_gradient leaves no op: its buffer is its operand's.
module {
  nn.parameter @table : !nn.tensor<[13, 8], f32>
  nn.parameter @rows : !nn.tensor<[4, 1, 3], f32>
  nn.parameter @cols : !nn.tensor<[1, 4, 5], f32>
  nn.parameter @head : !nn.tensor<[13, 8], f32>
  func.func @forward(%x: !nn.tensor<[B, T], i32> {nn.name = "tokens"}) -> (!nn.tensor<[], f32> {nn.name = "loss"}) {
    %table = nn.get_parameter @table : !nn.tensor<[13, 8], f32>
    %rows = nn.get_parameter @rows : !nn.tensor<[4, 1, 3], f32>
    %cols = nn.get_parameter @cols : !nn.tensor<[1, 4, 5], f32>
    %head = nn.get_parameter @head : !nn.tensor<[13, 8], f32>
    %masked, %mask = nn.mask_tokens %x {p = 0.25 : f64, mask_id = 1 : i64, seed = 1 : i64} : (!nn.tensor<[B, T], i32>) -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i1>)
    %e = nn.embedding %masked, %table : (!nn.tensor<[B, T], i32>, !nn.tensor<[13, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %h = nn.axial_position %e, %rows, %cols : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[4, 1, 3], f32>, !nn.tensor<[1, 4, 5], f32>) -> !nn.tensor<[B, T, 8], f32>
    %frozen = nn.stop_gradient %h : (!nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %sq = nn.mul %frozen, %frozen : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %z = nn.add %h, %sq : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[B, T, 8], f32>) -> !nn.tensor<[B, T, 8], f32>
    %logits = nn.linear %z, %head : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[13, 8], f32>) -> !nn.tensor<[B, T, 13], f32>
    %s = nn.sample %logits, %mask {seed = 2 : i64} : (!nn.tensor<[B, T, 13], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
    %t = nn.select %mask, %s, %x : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
    %loss = nn.cross_entropy %logits, %t : (!nn.tensor<[B, T, 13], f32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[], f32>
    return %loss : !nn.tensor<[], f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[^:]*]]: !nnk.buffer<[B, T], i32>
// CHECK: %[[ROWS:.*]] = nnk.weight @rows
// CHECK: %[[COLS:.*]] = nnk.weight @cols
// CHECK: %[[MASKED:.*]] = nnk.alloc : !nnk.buffer<[B, T], i32>
// CHECK: %[[MASK:.*]] = nnk.alloc : !nnk.buffer<[B, T], i1>
// CHECK: nnk.mask_tokens ins(%[[X]]) outs(%[[MASKED]], %[[MASK]]) {mask_id = 1 : i64, p = 2.500000e-01 : f64, seed = 1 : i64}
// CHECK: nnk.embedding ins(%[[MASKED]], %{{.*}}) outs(%[[E:.*]]) :
// CHECK: nnk.axial_position ins(%[[E]], %[[ROWS]], %[[COLS]]) outs(%[[H:.*]]) :
// CHECK-NOT: stop_gradient
// CHECK: nnk.elementwise ins(%[[H]], %[[H]] : {{.*}})
// CHECK: nnk.gemm ins(%{{.*}}) outs(%[[LOGITS:.*]]) :
// CHECK: nnk.sample ins(%[[LOGITS]], %[[MASK]]) outs(%{{.*}}) {seed = 2 : i64} : !nnk.buffer<[B, T, 13], f32>, !nnk.buffer<[B, T], i1>, !nnk.buffer<[B, T], i32>
