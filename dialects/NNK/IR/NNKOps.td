//===- NNKOps.td - nnk dialect operations --------------------*- tablegen -*-===//
//
// The op contract, with the kernel-library function or generated loop that
// implements each op, is docs/nnk-spec.md. Every compute op is one kernel
// launch in destination-passing style: it reads its `ins` buffers, writes
// its `outs` buffers and has no results.
//
// One file per op family (NNK<Family>Ops.td, the families of the nn
// dialect), each with its forward and backward kernels; the launches of a
// family are lib/Target/Launch/<Family>Launch.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"
include "dialects/NNK/IR/NNKControlOps.td"
include "dialects/NNK/IR/NNKElementwiseOps.td"
include "dialects/NNK/IR/NNKLinearOps.td"
include "dialects/NNK/IR/NNKNormOps.td"
include "dialects/NNK/IR/NNKTokenOps.td"
include "dialects/NNK/IR/NNKTensorOps.td"
include "dialects/NNK/IR/NNKRecurrentOps.td"
include "dialects/NNK/IR/NNKAttentionOps.td"
include "dialects/NNK/IR/NNKLossOps.td"
include "dialects/NNK/IR/NNKODEOps.td"

#endif // NNCC_DIALECT_NNK_IR_NNKOPS_TD
