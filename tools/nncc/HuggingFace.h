//===- HuggingFace.h - Hugging Face checkpoints in and out ------*- C++ -*-===//
//
// `nncc import-hf` (HuggingFace.cpp) reads a checkpoint's config.json and
// weights; HfModels.cpp holds what each architecture is in nncc's language:
// the model source and the names of its weights on both sides.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TOOLS_NNCC_HUGGINGFACE_H
#define NNCC_TOOLS_NNCC_HUGGINGFACE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nncc::tool {
extern llvm::cl::OptionCategory hfCategory;
extern llvm::cl::SubCommand importHfCmd;
extern llvm::cl::SubCommand exportHfCmd;
int runImportHf();
int runExportHf();

enum class HfFamily { Bert, Electra, Longformer, Reformer };
/// What sits on top of the encoder.
enum class HfHead { None, Pooler, SequenceClassification, PreTraining };

/// One architecture nncc imports (a transformers class name).
struct HfArchitecture {
  std::string architecture; ///< "BertForSequenceClassification"
  std::string modelType;    ///< config.json's model_type: "bert"
  HfFamily family;
  HfHead head;
  std::string prefix; ///< base_model_prefix: the encoder's tensors under "bert."
};

/// The architecture `architecture` of `modelType` (the family's base model
/// when `architecture` is empty); null with `error` naming what is supported.
const HfArchitecture *findArchitecture(llvm::StringRef modelType, llvm::StringRef architecture,
                                       std::string &error);

/// The fields of config.json an import reads (transformers' names).
struct HfConfig {
  std::string modelType, architecture;
  const HfArchitecture *spec = nullptr;
  /// spec->head, or None for a BertModel saved without its pooler.
  HfHead head = HfHead::None;
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, ff = 0, maxPositions = 0,
          typeVocab = 2, embedding = 0, numLabels = 2;
  /// pad_token_id: the word embeddings' padding_idx; -1 for none.
  int64_t padTokenId = -1;
  /// Longformer: attention_window (the same for every layer, even).
  int64_t attentionWindow = 0;
  double eps = 1e-12, hiddenDropout = 0.1, attentionDropout = 0.1, classifierDropout = 0.1;
  std::string activation = "gelu", problemType;
  /// Reformer: the kind of each layer (attn_layers: "local" or "lsh"), the
  /// head size (attention_head_size; num_attention_heads of them make
  /// hidden_size), positions, chunking and hashing, is_decoder.
  std::vector<std::string> attnLayers;
  bool axialPositions = true, causal = false;
  int64_t axialShape[2] = {64, 64}, axialDims[2] = {64, 192};
  int64_t localChunk = 64, localBefore = 1, localAfter = 0, lshChunk = 64, hashes = 1;
  /// attention_head_size (num_attention_heads of them need not make
  /// hidden_size: the attention's head_dim).
  int64_t headSize = 64;
  /// num_buckets: 0 when null (Hugging Face's rule from T at run time).
  int64_t buckets = 0;
  double localDropout = 0.05, lshDropout = 0.0;
  bool localSeen = false, lshSeen = false; // export-hf: a layer of the kind was read
  /// The nncc layers holding the embeddings and the encoder.
  std::string embeddingsPath = "embeddings", encoderPath = "encoder";
};

/// The model.nn of `config`, named `name`.
std::string modelSource(const HfConfig &config, llvm::StringRef name);

/// One parameter of the nncc model and the checkpoint tensors it is made
/// of: one, or several stacked on dim 0 (q, k and v in in_proj_weight).
struct HfWeightLink {
  std::string name;           ///< nncc's: "encoder.0.self_attn.in_proj_weight"
  std::vector<int64_t> shape; ///< nncc's; each source has shape[0] / sources.size() rows
  std::vector<std::string> sources; ///< Hugging Face's, with `basePrefix`
};

/// Every parameter of modelSource(config); `basePrefix` ("bert." or "")
/// comes before the names of the encoder's tensors.
std::vector<HfWeightLink> weightLinks(const HfConfig &config, const std::string &basePrefix);
} // namespace nncc::tool

#endif
