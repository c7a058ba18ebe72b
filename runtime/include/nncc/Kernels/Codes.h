/*
 * Codes.h - the integer codes that cross the compiler / kernel boundary.
 *
 * One definition per code set, plain C (no LLVM): the C ABI of the kernel
 * library (Kernels.h) and the generated code use these constants; the C++
 * enums of the shared math (Common.h Activation, RecurrentMath.h CellKind,
 * ODESolver.h OdeMethod) are defined from them; the compiler's ODS enums
 * (nnk Activation and Cell, nn ODEMethod), whose integer values the
 * emitters print as codes, are checked against them by static_asserts in
 * dialects/NNK/IR/NNKOps.cpp.
 */
#ifndef NNCC_KERNELS_CODES_H
#define NNCC_KERNELS_CODES_H

/* Recurrent cell equations (nnk Cell, CellKind). */
enum {
  NNCC_CELL_RNN_TANH = 0,
  NNCC_CELL_RNN_RELU = 1,
  NNCC_CELL_LSTM = 2,
  NNCC_CELL_GRU = 3,
  NNCC_CELL_GRU_CHO2014 = 4
};

/* GEMM-epilogue / elementwise activations (nnk Activation, Activation). */
enum {
  NNCC_ACT_NONE = 0,
  NNCC_ACT_RELU = 1,
  NNCC_ACT_LEAKY_RELU = 2,
  NNCC_ACT_GELU = 3,
  NNCC_ACT_GELU_TANH = 4,
  NNCC_ACT_TANH = 5,
  NNCC_ACT_SIGMOID = 6
};

/* Attention kinds (nncc_attention_params.kind). */
enum { NNCC_ATTN_DENSE = 0, NNCC_ATTN_DILATED = 1, NNCC_ATTN_LSH = 2, NNCC_ATTN_LOCAL = 3 };

/* LSH conventions (nncc_attention_params.lsh_convention, nn.lsh's
   `convention`): nncc's own (scores scaled by 1/sqrt(dh), no look-back
   across rounds, rotations shared by the heads) or Hugging Face's
   (ReformerModel's LSHSelfAttention). docs/kernels.md, "LSH". */
enum { NNCC_LSH_NNCC = 0, NNCC_LSH_HF = 1 };

/* Dilated-attention conventions (nncc_attention_params.dilated_convention,
   nn.dilated's `convention`): nncc's own (global queries use the shared
   q/k/v projection, padded queries attend as any other) or Hugging Face's
   LongformerSelfAttention (global queries use their own query_global /
   key_global / value_global projection; padded queries give zero).
   docs/kernels.md, "Dilated sliding window". */
enum { NNCC_DILATED_NNCC = 0, NNCC_DILATED_HF = 1 };

/* ODE integration schemes (nn ODEMethod, OdeMethod). */
enum { NNCC_ODE_EULER = 0, NNCC_ODE_RK4 = 1, NNCC_ODE_DOPRI5 = 2 };

#endif /* NNCC_KERNELS_CODES_H */
