//===- SizeExpr.cpp - sizes the launches print and the plan evaluates -----===//
#include "SizeExpr.h"

#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/Kernels.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

using namespace llvm;

namespace nncc::target {

//===----------------------------------------------------------------------===//
// The size functions
//===----------------------------------------------------------------------===//

namespace size_fn {
namespace {
int i(int64_t v) { return static_cast<int>(v); }
} // namespace

const SizeFunction attentionCoreWorkspace = {
    "nncc_attention_core_workspace_bytes", 5, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_attention_core_workspace_bytes(i(a[0]), a[1], a[2], a[3], i(a[4]));
    }};
const SizeFunction linearSampleWorkspace = {
    "nncc_linear_sample_workspace_size", 4, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_linear_sample_workspace_size(a[0], a[1], a[2], a[3]);
    }};
const SizeFunction linearCeWorkspace = {
    "nncc_linear_ce_workspace_size", 3,
    [](ArrayRef<int64_t> a) -> int64_t { return nncc_linear_ce_workspace_size(a[0], a[1], a[2]); }};
const SizeFunction rnnLayerWorkspace = {
    "nncc_rnn_layer_workspace_size", 4, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_layer_workspace_size(i(a[0]), a[1], a[2], a[3]);
    }};
const SizeFunction rnnCellWorkspace = {
    "nncc_rnn_cell_workspace_size", 4, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_cell_workspace_size(i(a[0]), a[1], a[2], a[3]);
    }};
const SizeFunction rnnCellBackwardWorkspace = {
    "nncc_rnn_cell_backward_workspace_size", 4, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_cell_backward_workspace_size(i(a[0]), a[1], a[2], a[3]);
    }};
const SizeFunction rnnForwardTrainWorkspace = {
    "nncc_rnn_forward_train_workspace_size", 5, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_forward_train_workspace_size(i(a[0]), a[1], a[2], a[3], a[4]);
    }};
const SizeFunction rnnBackwardReservedWorkspace = {
    "nncc_rnn_backward_reserved_workspace_size", 7, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_backward_reserved_workspace_size(i(a[0]), a[1], a[2], a[3], a[4], a[5], a[6]);
    }};
const SizeFunction rnnBackwardWorkspace = {
    "nncc_rnn_backward_workspace_size", 8, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_backward_workspace_size(i(a[0]), a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
    }};
const SizeFunction rnnBackwardCkptWorkspace = {
    "nncc_rnn_backward_ckpt_workspace_size", 9, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_backward_ckpt_workspace_size(i(a[0]), a[1], a[2], a[3], a[4], a[5], a[6],
                                                   a[7], a[8]);
    }};
const SizeFunction rnnBackwardRevolveWorkspace = {
    "nncc_rnn_backward_revolve_workspace_size", 9, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_rnn_backward_revolve_workspace_size(i(a[0]), a[1], a[2], a[3], a[4], a[5], a[6],
                                                      a[7], a[8]);
    }};
const SizeFunction odeGradWorkspace = {
    "nncc_ode_grad_workspace_size", 7, [](ArrayRef<int64_t> a) -> int64_t {
      return nncc_ode_grad_workspace_size(i(a[0]), a[1], a[2], i(a[3]), a[4], a[5], a[6]);
    }};
// The generated helper of LaunchEmitter::emitSharedHelpers.
const SizeFunction lshBuckets = {"nncc_gen_lsh_buckets", 2, [](ArrayRef<int64_t> a) -> int64_t {
                                   return nncc::kernels::lsh_num_buckets(a[0], a[1]);
                                 }};

const SizeFunction cudaLayerNormBackwardScratch = {"layer_norm_backward_scratch_bytes", 2, nullptr};
const SizeFunction cudaEmbeddingBackwardScratch = {"embedding_backward_scratch_bytes", 2, nullptr};
const SizeFunction cudaReduceScratch = {"reduce_scratch_bytes", 2, nullptr};
const SizeFunction cudaLossScratch = {"loss_scratch_bytes", 0, nullptr};
const SizeFunction cudaCrossEntropyBackwardScratch = {"cross_entropy_backward_scratch_bytes", 0,
                                                      nullptr};
const SizeFunction cudaLinearCrossEntropyScratch = {"linear_cross_entropy_scratch_bytes", 4,
                                                    nullptr};
const SizeFunction cudaLinearSampleScratch = {"linear_sample_scratch_bytes", 3, nullptr};
const SizeFunction cudaDilatedAttentionScratch = {"dilated_attention_scratch_bytes", 2, nullptr};
const SizeFunction cudaLshAttentionScratch = {"lsh_attention_scratch_bytes", 6, nullptr};
const SizeFunction cudaFlashAttentionBackwardWorkspace = {
    "flash_attention_backward_workspace_bytes", 6, nullptr};
const SizeFunction cudaDilatedAttentionBackwardWorkspace = {
    "dilated_attention_backward_workspace_bytes", 7, nullptr};
const SizeFunction cudaLshAttentionBackwardWorkspace = {"lsh_attention_backward_workspace_bytes", 7,
                                                        nullptr};
const SizeFunction cudaRnnCellBackwardScratch = {"rnn_cell_backward_scratch_bytes", 4, nullptr};
const SizeFunction cudaRnnStackForwardScratch = {"rnn_stack_forward_scratch_bytes", 11, nullptr};
const SizeFunction cudaRnnStackBackwardScratch = {"rnn_stack_backward_scratch_bytes", 12, nullptr};
const SizeFunction cudaLshRotationsAccBytes = {"lsh_rotations_acc_bytes<real_t>", 1, nullptr};
} // namespace size_fn

//===----------------------------------------------------------------------===//
// Size
//===----------------------------------------------------------------------===//

struct Size::Node {
  enum Kind { Constant, Dim, RealBytes, AccBytes, Add, Sub, Mul, Div, Call } kind;
  int64_t value = 0;                // Constant
  std::string dim;                  // Dim
  const SizeFunction *fn = nullptr; // Call
  SmallVector<std::shared_ptr<const Node>, 4> operands;
};

namespace {
using NodePtr = std::shared_ptr<const Size::Node>;
NodePtr leaf(Size::Node::Kind kind, int64_t value = 0, std::string dim = {}) {
  auto n = std::make_shared<Size::Node>();
  n->kind = kind;
  n->value = value;
  n->dim = std::move(dim);
  return n;
}
} // namespace

Size Size::constant(int64_t v) { return constant(v, std::to_string(v)); }
Size Size::constant(int64_t v, std::string text) {
  return Size(leaf(Node::Constant, v), std::move(text));
}
Size Size::dim(StringRef name, std::string text) {
  return Size(leaf(Node::Dim, 0, name.str()), std::move(text));
}
Size Size::realBytes() { return Size(leaf(Node::RealBytes), "sizeof(real_t)"); }
Size Size::accBytes() { return Size(leaf(Node::AccBytes), "sizeof(acc_t<real_t>)"); }
Size Size::bytesOf(StringRef cType, int64_t bytes) {
  return Size(leaf(Node::Constant, bytes), ("sizeof(" + cType + ")").str());
}

Size Size::call(const SizeFunction &fn, ArrayRef<Size> args) {
  assert(args.size() == fn.arity && "size function called with the wrong arity");
  auto n = std::make_shared<Node>();
  n->kind = Node::Call;
  n->fn = &fn;
  std::string text = std::string(fn.name) + "(";
  for (auto [k, a] : llvm::enumerate(args)) {
    n->operands.push_back(a.node);
    text += (k ? ", " : "") + a.text;
  }
  return Size(std::move(n), text + ")");
}

namespace {
/// Builds `a op b` (Size's constructor is private; this is its friend's helper).
struct Binary {
  static NodePtr node(Size::Node::Kind kind, NodePtr a, NodePtr b) {
    auto n = std::make_shared<Size::Node>();
    n->kind = kind;
    n->operands = {std::move(a), std::move(b)};
    return n;
  }
};
} // namespace

Size operator+(const Size &a, const Size &b) {
  return Size(Binary::node(Size::Node::Add, a.node, b.node), a.text + " + " + b.text);
}
Size operator-(const Size &a, const Size &b) {
  return Size(Binary::node(Size::Node::Sub, a.node, b.node), a.text + " - " + b.text);
}
Size operator*(const Size &a, const Size &b) {
  return Size(Binary::node(Size::Node::Mul, a.node, b.node), a.text + " * " + b.text);
}
Size operator/(const Size &a, const Size &b) {
  return Size(Binary::node(Size::Node::Div, a.node, b.node), a.text + " / " + b.text);
}
Size Size::paren() const { return Size(node, "(" + text + ")"); }
Size Size::prefixed(StringRef prefix) const { return Size(node, prefix.str() + text); }

namespace {
Expected<int64_t> evaluateNode(const Size::Node &n, const SizeEnv &env) {
  auto error = [](const Twine &why) {
    return createStringError(inconvertibleErrorCode(), "%s", why.str().c_str());
  };
  switch (n.kind) {
  case Size::Node::Constant:
    return n.value;
  case Size::Node::Dim: {
    auto it = env.dims.find(n.dim);
    if (it == env.dims.end())
      return error("the dim '" + n.dim + "' is not bound");
    return it->second;
  }
  case Size::Node::RealBytes:
    return env.realSize;
  case Size::Node::AccBytes:
    return nncc::kernels::acc_elem_bytes(env.realSize);
  case Size::Node::Add:
  case Size::Node::Sub:
  case Size::Node::Mul:
  case Size::Node::Div: {
    Expected<int64_t> a = evaluateNode(*n.operands[0], env);
    if (!a)
      return a.takeError();
    Expected<int64_t> b = evaluateNode(*n.operands[1], env);
    if (!b)
      return b.takeError();
    switch (n.kind) {
    case Size::Node::Add:
      return *a + *b;
    case Size::Node::Sub:
      return *a - *b;
    case Size::Node::Mul:
      return *a * *b;
    default:
      if (*b == 0)
        return error("division by zero");
      return *a / *b;
    }
  }
  case Size::Node::Call: {
    if (!n.fn->evaluate)
      return error("'" + Twine(n.fn->name) +
                   "' (a CUDA kernel's scratch) has no compile-time value");
    SmallVector<int64_t, 12> args;
    for (const auto &operand : n.operands) {
      Expected<int64_t> v = evaluateNode(*operand, env);
      if (!v)
        return v.takeError();
      args.push_back(*v);
    }
    int64_t v = n.fn->evaluate(args);
    if (v < 0)
      return error("'" + Twine(n.fn->name) + "' rejects its arguments");
    return v;
  }
  }
  return error("unknown size node");
}
} // namespace

Expected<int64_t> Size::evaluate(const SizeEnv &env) const {
  // The recurrent sizes count the CPU kernels' own workspace only in the
  // CPU target's plan (nncc_rnn_sizes_count_cpu_workspace; this thread).
  const int prev = nncc_rnn_sizes_count_cpu_workspace(env.target == TargetKind::CPU ? 1 : 0);
  Expected<int64_t> v = evaluateNode(*node, env);
  nncc_rnn_sizes_count_cpu_workspace(prev);
  if (!v)
    return createStringError(inconvertibleErrorCode(),
                             "cannot evaluate the workspace size '%s' at compile time: %s",
                             text.c_str(), toString(v.takeError()).c_str());
  return v;
}

} // namespace nncc::target
