//===- NNToNNKPass.cpp - The convert-nn-to-nnk pass -------------*- C++ -*-===//

#include "PatternHelpers.h"
#include "nncc/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace nncc {
#define GEN_PASS_DEF_CONVERTNNTONNK
#include "nncc/Conversion/Passes.h.inc"
} // namespace nncc

using namespace mlir;
using namespace nncc;

void nncc::populateNNToNNKTypeConversion(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  // Context-aware (added before the tensor conversion so that one stays
  // cached): a reserve becomes the buffers its forward keeps, 1:N.
  converter.addConversion(
      [](Value value,
         SmallVectorImpl<Type> &types) -> std::optional<LogicalResult> {
        if (!isa<nn::ReserveType>(value.getType()))
          return std::nullopt;
        return conv::getReserveBufferTypes(value, types);
      });
  converter.addConversion([](nn::TensorType type) -> Type {
    return conv::toBuffer(type);
  });
}

void nncc::populateNNToNNKPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns) {
  populateControlToNNKPatterns(converter, patterns);
  populateElementwiseToNNKPatterns(converter, patterns);
  populateLinearToNNKPatterns(converter, patterns);
  populateNormToNNKPatterns(converter, patterns);
  populateTokenToNNKPatterns(converter, patterns);
  populateTensorToNNKPatterns(converter, patterns);
  populateLossToNNKPatterns(converter, patterns);
  populateRecurrentToNNKPatterns(converter, patterns);
  populateAttentionToNNKPatterns(converter, patterns);
  populateODEToNNKPatterns(converter, patterns);
}

namespace {
struct ConvertNNToNNKPass
    : public nncc::impl::ConvertNNToNNKBase<ConvertNNToNNKPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    TypeConverter converter;
    populateNNToNNKTypeConversion(converter);
    ConversionTarget target(*ctx);
    target.addLegalDialect<nnk::NNKDialect, arith::ArithDialect,
                           math::MathDialect>();
    target.addLegalOp<ModuleOp, nn::ParameterOp>();
    target.addDynamicallyLegalDialect<nn::NNDialect>(
        [](Operation *op) { return isFusedIntoConsumer(op); });
    target.addDynamicallyLegalOp<func::FuncOp>([](func::FuncOp op) {
      return op.getFunctionType().getNumResults() == 0 &&
             llvm::none_of(op.getFunctionType().getInputs(), [](Type t) {
               return isa<nn::TensorType>(t);
             });
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [](func::ReturnOp op) { return op.getNumOperands() == 0; });

    RewritePatternSet patterns(ctx);
    populateNNToNNKPatterns(converter, patterns);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // Constants inlined into elementwise bodies.
    module.walk([](nn::ConstantOp op) {
      if (op.getResult().use_empty())
        op.erase();
    });
  }
};
} // namespace
