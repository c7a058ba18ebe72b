//===- NNToNNK.h - nn -> nnk conversion patterns ----------------*- C++ -*-===//
//
// The conversion is split by op family; each family exposes its patterns.
// They expect the type converter of makeNNToNNKTypeConverter() and a
// ConversionTarget in which an nn op is legal exactly when
// isFusedIntoConsumer() says so (the consumer's pattern absorbs it).
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_CONVERSION_NNTONNK_NNTONNK_H
#define NNCC_CONVERSION_NNTONNK_NNTONNK_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace nncc {

/// !nn.tensor<[dims], elt> -> !nnk.buffer<[dims], elt>; other types as is.
void populateNNToNNKTypeConversion(mlir::TypeConverter &converter);

// One populate function per op family (lib/Conversion/NNToNNK/<Family>ToNNK.cpp),
// each with the family's forward ops and the backward ops nncc-autodiff
// builds for them.

/// func signatures / returns, parameters, region terminators, nn.save.
void populateControlToNNKPatterns(const mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns);
/// Fused elementwise chains (nnk.elementwise), unabsorbed constants,
/// activation derivatives, dropout, stop_gradient.
void populateElementwiseToNNKPatterns(const mlir::TypeConverter &converter,
                                      mlir::RewritePatternSet &patterns);
/// linear / matmul with epilogues (nnk.gemm, nnk.matmul), the linear
/// weight gradient.
void populateLinearToNNKPatterns(const mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);
/// layer norm (with a fused residual) and its backward, softmax.
void populateNormToNNKPatterns(const mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns);
/// embeddings, positions, token masking and sampling, and their backward.
void populateTokenToNNKPatterns(const mlir::TypeConverter &converter,
                                mlir::RewritePatternSet &patterns);
/// reductions, argmax / max / topk, cumsum, data movement (concat, split,
/// slice, transpose) and their backward helpers.
void populateTensorToNNKPatterns(const mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);
/// losses and the fused output heads, with their backward.
void populateLossToNNKPatterns(const mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns);
/// rnn / lstm / gru layers and cells, zoneout, and their BPTT backward.
void populateRecurrentToNNKPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);
/// nn.attention (dense, dilated, lsh, local) with its projections, and its
/// backward.
void populateAttentionToNNKPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);
/// ODE solves and ODE-RNNs with their regions, and their backward.
void populateODEToNNKPatterns(const mlir::TypeConverter &converter,
                              mlir::RewritePatternSet &patterns);
/// All of the above.
void populateNNToNNKPatterns(const mlir::TypeConverter &converter,
                             mlir::RewritePatternSet &patterns);

/// True for an nn op that a fused consumer absorbs (so it is legal until
/// the consumer's pattern erases it).
bool isFusedIntoConsumer(mlir::Operation *op);

} // namespace nncc

#endif // NNCC_CONVERSION_NNTONNK_NNTONNK_H
