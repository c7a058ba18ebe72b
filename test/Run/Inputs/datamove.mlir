// The nnk ops no seed model uses (matmul, transpose, slice with a negative
// start / step / squeeze, concat, split, softmax, reduce, copy, fill,
// sinusoidal_position) in one module, run by nncc run (test/Run/nnk-ops.test).
module attributes {nn.dims = ["B", "T"], nn.model = "datamove"} {
  func.func @forward(%a: !nnk.buffer<[B, T, 4], f32> {nn.name = "a"},
                     %b: !nnk.buffer<[4, 3], f32> {nn.name = "b"},
                     %c: !nnk.buffer<[B, 4, 3], f32> {nn.name = "c"},
                     %mm1: !nnk.buffer<[B, T, 3], f32> {nnk.output, nn.name = "mm1"},
                     %mm2: !nnk.buffer<[B, T, 3], f32> {nnk.output, nn.name = "mm2"},
                     %tr: !nnk.buffer<[4, B, T], f32> {nnk.output, nn.name = "tr"},
                     %sl: !nnk.buffer<[B, 2], f32> {nnk.output, nn.name = "sl"},
                     %cc: !nnk.buffer<[B, T, 8], f32> {nnk.output, nn.name = "cc"},
                     %sp1: !nnk.buffer<[B, T, 3], f32> {nnk.output, nn.name = "sp1"},
                     %sp2: !nnk.buffer<[B, T, 5], f32> {nnk.output, nn.name = "sp2"},
                     %sm: !nnk.buffer<[B, T, 4], f32> {nnk.output, nn.name = "sm"},
                     %rs: !nnk.buffer<[B, 4], f32> {nnk.output, nn.name = "rs"},
                     %rm: !nnk.buffer<[], f32> {nnk.output, nn.name = "rm"},
                     %cp: !nnk.buffer<[B, T, 4], f32> {nnk.output, nn.name = "cp"},
                     %fl: !nnk.buffer<[B, 3], f32> {nnk.output, nn.name = "fl"},
                     %pe: !nnk.buffer<[B, T, 4], f32> {nnk.output, nn.name = "pe"}) {
    nnk.matmul ins(%a, %b) outs(%mm1) : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[4, 3], f32>, !nnk.buffer<[B, T, 3], f32>
    nnk.matmul ins(%a, %c) outs(%mm2) : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, 4, 3], f32>, !nnk.buffer<[B, T, 3], f32>
    nnk.transpose ins(%a) outs(%tr) {perm = array<i64: 2, 0, 1>} : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[4, B, T], f32>
    nnk.slice ins(%a) outs(%sl) {starts = array<i64: 0, -1, 1>, steps = array<i64: 1, 1, 2>, squeeze = array<i64: 1>} : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, 2], f32>
    nnk.concat ins(%a, %a) outs(%cc) {axis = 2 : i64} : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, T, 8], f32>
    nnk.split ins(%cc) outs(%sp1, %sp2) {axis = 2 : i64} : !nnk.buffer<[B, T, 8], f32>, !nnk.buffer<[B, T, 3], f32>, !nnk.buffer<[B, T, 5], f32>
    nnk.softmax ins(%a) outs(%sm) {axis = 1 : i64} : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, T, 4], f32>
    nnk.reduce ins(%a) outs(%rs) {axes = array<i64: 1>, kind = #nnk<reduce sum>} : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, 4], f32>
    nnk.reduce ins(%a) outs(%rm) {axes = array<i64: 0, 1, 2>, kind = #nnk<reduce mean>} : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[], f32>
    nnk.copy ins(%a) outs(%cp) : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, T, 4], f32>
    nnk.fill outs(%fl) {value = 2.5 : f64} : !nnk.buffer<[B, 3], f32>
    nnk.sinusoidal_position ins(%a) outs(%pe) : !nnk.buffer<[B, T, 4], f32>, !nnk.buffer<[B, T, 4], f32>
    func.return
  }
}
