//===- NNOps.td - nn dialect operations ----------------------*- tablegen -*-===//
//
// The op contract is docs/dialect-spec.md. Every op but nn.get_parameter
// computes its result types with InferTypeOpInterface; the inference is where
// shape and dtype errors are diagnosed. Result types need only be compatible
// with the inferred ones (`?` matches any dim).
//
// One file per op family (NN<Family>Ops.td), each with its forward ops and
// the backward ops nncc-autodiff builds for them; the verifiers and type
// inference sit in the matching NN<Family>Ops.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNOPS_TD
#define NNCC_DIALECT_NN_IR_NNOPS_TD

include "dialects/NN/IR/NNOpBase.td"
include "dialects/NN/IR/NNControlOps.td"
include "dialects/NN/IR/NNElementwiseOps.td"
include "dialects/NN/IR/NNLinearOps.td"
include "dialects/NN/IR/NNNormOps.td"
include "dialects/NN/IR/NNTokenOps.td"
include "dialects/NN/IR/NNTensorOps.td"
include "dialects/NN/IR/NNRecurrentOps.td"
include "dialects/NN/IR/NNAttentionOps.td"
include "dialects/NN/IR/NNReversibleOps.td"
include "dialects/NN/IR/NNODEOps.td"
include "dialects/NN/IR/NNLossOps.td"

#endif // NNCC_DIALECT_NN_IR_NNOPS_TD
