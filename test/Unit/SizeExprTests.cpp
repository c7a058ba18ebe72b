//===- SizeExprTests.cpp - the sizes launches print and plans evaluate ----===//
//
// A Size's text is what the generated code compiles and its value what the
// memory plan counts: both come from one construction. These check that the
// two agree (the text spelled as the launches print it, the value as the
// kernel library's own size functions compute it), and that what cannot be
// evaluated is an error naming it.
//
//===----------------------------------------------------------------------===//
#include "lib/Target/Common/SizeExpr.h"

#include "nncc/Kernels/Codes.h"
#include "nncc/Kernels/Kernels.h"

#include <gtest/gtest.h>

using namespace nncc::target;

namespace {

SizeEnv env(int64_t B, int64_t T, int64_t realSize = 4) {
  SizeEnv e;
  e.dims["B"] = B;
  e.dims["T"] = T;
  e.realSize = realSize;
  return e;
}

int64_t value(const Size &s, const SizeEnv &e) {
  llvm::Expected<int64_t> v = s.evaluate(e);
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return -1;
  }
  return *v;
}

std::string error(const Size &s, const SizeEnv &e) {
  llvm::Expected<int64_t> v = s.evaluate(e);
  if (v) {
    ADD_FAILURE() << "'" << s.str() << "' evaluated to " << *v;
    return "";
  }
  return llvm::toString(v.takeError());
}

TEST(SizeExpr, TextAndValueOfArithmetic) {
  Size B = Size::dim("B", "d_B"), T = Size::dim("T", "d_T");
  Size n = (Size::constant(3, "3LL") * B * T).paren();
  Size bytes = (n + Size::constant(2) * T.paren() * Size::realBytes()).paren();
  EXPECT_EQ(bytes.str(), "((3LL * d_B * d_T) + 2 * (d_T) * sizeof(real_t))");
  // C++ precedence in the tree as in the text: 3*B*T + (2*T*4).
  EXPECT_EQ(value(bytes, env(5, 7)), 3 * 5 * 7 + 2 * 7 * 4);
  EXPECT_EQ(value(bytes, env(5, 7, /*realSize=*/8)), 3 * 5 * 7 + 2 * 7 * 8);
  Size q = (B - Size::constant(1)) / Size::constant(2);
  EXPECT_EQ(q.str(), "d_B - 1 / 2");
  // The tree is (B - 1) / 2 as built, whatever the text's precedence: a
  // launch that means it parenthesises (paren()), as the ones here do.
  EXPECT_EQ(value(q, env(9, 1)), 4);
  EXPECT_EQ(Size::constant(6).prefixed("(int)").str(), "(int)6");
}

TEST(SizeExpr, ElementSizes) {
  EXPECT_EQ(Size::realBytes().str(), "sizeof(real_t)");
  EXPECT_EQ(Size::accBytes().str(), "sizeof(acc_t<real_t>)");
  EXPECT_EQ(value(Size::accBytes(), env(1, 1, 2)), 4); // bf16 computes in fp32
  EXPECT_EQ(value(Size::accBytes(), env(1, 1, 8)), 8);
  Size i32 = Size::bytesOf("int32_t", 4);
  EXPECT_EQ(i32.str(), "sizeof(int32_t)");
  EXPECT_EQ(value(i32, env(1, 1, 8)), 4);
}

TEST(SizeExpr, KernelSizeFunctionsAsTheLibraryComputesThem) {
  Size B = Size::dim("B", "d_B"), T = Size::dim("T", "d_T");
  Size ce =
      Size::call(size_fn::linearCeWorkspace, {B * T, Size::constant(30522), Size::realBytes()});
  EXPECT_EQ(ce.str(), "nncc_linear_ce_workspace_size(d_B * d_T, 30522, sizeof(real_t))");
  EXPECT_EQ(value(ce, env(8, 128)), nncc_linear_ce_workspace_size(8 * 128, 30522, 4));

  // The recurrent sizes count the CPU kernels' own workspace (packed W_hh)
  // only in the CPU target's plan.
  Size layer = Size::call(size_fn::rnnLayerWorkspace, {Size::constant(NNCC_CELL_LSTM), B,
                                                       Size::constant(256), Size::realBytes()});
  SizeEnv cpu = env(32, 1), cuda = env(32, 1);
  cuda.target = nncc::TargetKind::CUDA;
  const int prev = nncc_rnn_sizes_count_cpu_workspace(1);
  const int64_t withCpu = nncc_rnn_layer_workspace_size(NNCC_CELL_LSTM, 32, 256, 4);
  nncc_rnn_sizes_count_cpu_workspace(0);
  const int64_t without = nncc_rnn_layer_workspace_size(NNCC_CELL_LSTM, 32, 256, 4);
  nncc_rnn_sizes_count_cpu_workspace(prev);
  EXPECT_EQ(value(layer, cpu), withCpu);
  EXPECT_EQ(value(layer, cuda), without);
  // The evaluation leaves the thread's setting as it was.
  EXPECT_EQ(nncc_rnn_sizes_count_cpu_workspace(prev), prev);
}

TEST(SizeExpr, WhatCannotBeEvaluatedIsNamed) {
  Size B = Size::dim("B", "d_B");
  EXPECT_NE(error(Size::dim("L", "d_L") * B, env(2, 2)).find("the dim 'L' is not bound"),
            std::string::npos);
  std::string cuda = error(Size::call(size_fn::cudaLossScratch, {}), env(2, 2));
  EXPECT_NE(cuda.find("'loss_scratch_bytes'"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("cannot evaluate the workspace size 'loss_scratch_bytes()'"),
            std::string::npos)
      << cuda;
  EXPECT_NE(error(B / (B - B), env(3, 1)).find("division by zero"), std::string::npos);
}

} // namespace
