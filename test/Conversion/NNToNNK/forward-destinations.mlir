// RUN: nncc-opt --nnk-forward-destinations %s | FileCheck %s

// A temporary only copied into one output argument is replaced by it: the
// producer writes the output directly.

// CHECK-LABEL: func.func @forwarded
// CHECK-SAME: (%[[X:.*]]: !nnk.buffer<[B, 4], f32>, %[[OUT:.*]]: !nnk.buffer<[B, 4], f32> {nnk.output})
// CHECK-NOT: nnk.alloc
// CHECK: nnk.copy ins(%[[X]]) outs(%[[OUT]])
// CHECK-NOT: nnk.copy
// CHECK: return
func.func @forwarded(%x: !nnk.buffer<[B, 4], f32>, %out: !nnk.buffer<[B, 4], f32> {nnk.output}) {
  %t = nnk.alloc : !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%x) outs(%t) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%t) outs(%out) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  return
}

// Copied into two outputs: the temporary stays.
// CHECK-LABEL: func.func @two_outputs
// CHECK: %[[T:.*]] = nnk.alloc
// CHECK: nnk.copy ins(%[[T]]) outs(%{{.*}})
// CHECK: nnk.copy ins(%[[T]]) outs(%{{.*}})
func.func @two_outputs(%x: !nnk.buffer<[B, 4], f32>, %o1: !nnk.buffer<[B, 4], f32> {nnk.output}, %o2: !nnk.buffer<[B, 4], f32> {nnk.output}) {
  %t = nnk.alloc : !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%x) outs(%t) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%t) outs(%o1) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%t) outs(%o2) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  return
}

// The output is also written elsewhere: the copy stays.
// CHECK-LABEL: func.func @output_used_twice
// CHECK-SAME: (%[[X:.*]]: !nnk.buffer<[B, 4], f32>, %[[OUT:.*]]: !nnk.buffer<[B, 4], f32> {nnk.output})
// CHECK: %[[T:.*]] = nnk.alloc
// CHECK: nnk.copy ins(%[[T]]) outs(%[[OUT]])
func.func @output_used_twice(%x: !nnk.buffer<[B, 4], f32>, %out: !nnk.buffer<[B, 4], f32> {nnk.output}) {
  %t = nnk.alloc : !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%x) outs(%out) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%x) outs(%t) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  nnk.copy ins(%t) outs(%out) : !nnk.buffer<[B, 4], f32>, !nnk.buffer<[B, 4], f32>
  return
}

// A different type (here a static dim): the copy stays.
// CHECK-LABEL: func.func @other_type
// CHECK: nnk.alloc : !nnk.buffer<[2, 4], f32>
func.func @other_type(%x: !nnk.buffer<[2, 4], f32>, %out: !nnk.buffer<[?, 4], f32> {nnk.output}) {
  %t = nnk.alloc : !nnk.buffer<[2, 4], f32>
  nnk.copy ins(%x) outs(%t) : !nnk.buffer<[2, 4], f32>, !nnk.buffer<[2, 4], f32>
  nnk.copy ins(%t) outs(%out) : !nnk.buffer<[2, 4], f32>, !nnk.buffer<[?, 4], f32>
  return
}
