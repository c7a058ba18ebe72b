//===- BPTTCheckpoint.h - Checkpointed BPTT of recurrent stacks -*- C++ -*-===//
//
// A top-level nn.rnn / nn.lstm / nn.gru and its gradient op share a reserve
// (`!nn.reserve`). With `checkpoint_every = k` on both, the reserve keeps
// each layer's output sequence and (LSTM) the cell state every k steps, and
// the gradient recomputes the gates one k-step segment at a time (kernels:
// nncc_rnn_forward_train / nncc_rnn_backward with checkpoint_every; bytes:
// nncc_rnn_reserve_ckpt_size, nncc_rnn_backward_ckpt_workspace_size).
// With `checkpoint_snapshots = s` instead (the binomial / Revolve schedule)
// the reserve keeps the layer outputs only and the gradient reverses each
// scan step by step, keeping at most s cell states (nncc_rnn_backward with
// checkpoint_snapshots, nncc_rnn_backward_revolve_workspace_size).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_DIALECT_NN_IR_BPTTCHECKPOINT_H
#define NNCC_DIALECT_NN_IR_BPTTCHECKPOINT_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <optional>

namespace nncc::nn {

/// The nn.rnn_grad / nn.lstm_grad / nn.gru_grad reading the reserve of the
/// recurrent forward op `forward` (its only use), or null.
mlir::Operation *getBPTTReserveGrad(mlir::Operation *forward);

/// `checkpoint_every` of a recurrent forward or gradient op (nullopt when
/// absent or `op` is none of them).
std::optional<int64_t> getBPTTCheckpoint(mlir::Operation *op);

/// Sets `checkpoint_every` to `every` on both ops of a reserve pair
/// (`grad` = getBPTTReserveGrad(forward)); nullopt removes it (every step's
/// gates kept). Fails, changing nothing, when they are not such a pair or
/// every < 1. Removes `checkpoint_snapshots`.
mlir::LogicalResult setBPTTCheckpoint(mlir::Operation *forward,
                                      mlir::Operation *grad,
                                      std::optional<int64_t> every);

/// `checkpoint_snapshots` of a recurrent forward or gradient op.
std::optional<int64_t> getBPTTSnapshots(mlir::Operation *op);

/// Sets `checkpoint_snapshots` (the binomial schedule) to `snapshots` on
/// both ops of a reserve pair and removes `checkpoint_every`; nullopt
/// removes it. Fails, changing nothing, as setBPTTCheckpoint.
mlir::LogicalResult setBPTTSnapshots(mlir::Operation *forward,
                                     mlir::Operation *grad,
                                     std::optional<int64_t> snapshots);

} // namespace nncc::nn

#endif // NNCC_DIALECT_NN_IR_BPTTCHECKPOINT_H
