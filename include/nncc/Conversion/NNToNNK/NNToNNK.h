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

/// Fused elementwise chains (nnk.elementwise) and unabsorbed constants.
void populateElementwiseToNNKPatterns(const mlir::TypeConverter &converter,
                                      mlir::RewritePatternSet &patterns);
/// linear / matmul with epilogues (nnk.gemm, nnk.matmul), layer norm with
/// residual.
void populateLinearToNNKPatterns(const mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);
/// softmax, reductions, embeddings, positions, data movement (concat,
/// split, slice, transpose), losses.
void populateTensorToNNKPatterns(const mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);
/// rnn / lstm / gru layers and cells.
void populateRecurrentToNNKPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);
/// nn.attention (dense, dilated, lsh) with its projections.
void populateAttentionToNNKPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);
/// func signatures/returns, parameters, ODE solvers, region terminators.
void populateControlToNNKPatterns(const mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns);
/// Backward ops of @forward_backward (nn.save, *_grad, training dropout).
void populateGradToNNKPatterns(const mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns);
/// All of the above.
void populateNNToNNKPatterns(const mlir::TypeConverter &converter,
                             mlir::RewritePatternSet &patterns);

/// True for an nn op that a fused consumer absorbs (so it is legal until
/// the consumer's pattern erases it).
bool isFusedIntoConsumer(mlir::Operation *op);

} // namespace nncc

#endif // NNCC_CONVERSION_NNTONNK_NNTONNK_H
