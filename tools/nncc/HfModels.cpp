//===- HfModels.cpp - Hugging Face architectures in nncc's language -------===//
//
// For each architecture nncc imports: the model source that computes what
// transformers' class does, and where each of its parameters comes from in
// the checkpoint. Sub-layers keep Hugging Face's names where a layer of
// nncc's maps one to one (embeddings.*, pooler.dense.*, classifier.*,
// discriminator_predictions.*); the encoder's layers are nncc's
// `encoder_layer` (PyTorch's TransformerEncoderLayer names, q/k/v fused):
//
//   encoder.layer.i.attention.self.{query,key,value}  -> encoder.i.self_attn.in_proj_{weight,bias}
//   encoder.layer.i.attention.output.dense            -> encoder.i.self_attn.out_proj
//   encoder.layer.i.attention.output.LayerNorm        -> encoder.i.norm1
//   encoder.layer.i.intermediate.dense                -> encoder.i.linear1
//   encoder.layer.i.output.dense                      -> encoder.i.linear2
//   encoder.layer.i.output.LayerNorm                  -> encoder.i.norm2
//
// Longformer's global projections attention.self.{query,key,value}_global
// are rows [3D, 6D) of the same in_proj_weight / in_proj_bias (nn.dilated's
// convention hf), and its RoBERTa position ids come from input_ids
// (cumsum of the non-padding tokens, plus pad_token_id).
//
//===----------------------------------------------------------------------===//
#include "HuggingFace.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace nncc::tool {

namespace {
const HfArchitecture kArchitectures[] = {
    {"BertModel", "bert", HfFamily::Bert, HfHead::Pooler, "bert"},
    {"BertForSequenceClassification", "bert", HfFamily::Bert, HfHead::SequenceClassification,
     "bert"},
    {"ElectraModel", "electra", HfFamily::Electra, HfHead::None, "electra"},
    {"ElectraForPreTraining", "electra", HfFamily::Electra, HfHead::PreTraining, "electra"},
    {"ElectraForSequenceClassification", "electra", HfFamily::Electra,
     HfHead::SequenceClassification, "electra"},
    {"LongformerModel", "longformer", HfFamily::Longformer, HfHead::Pooler, "longformer"},
    {"ReformerModel", "reformer", HfFamily::Reformer, HfHead::None, "reformer"},
};

/// The shortest decimal that reads back as `v` exactly ("1e-12", "0.1").
std::string number(double v) {
  std::string s;
  for (int digits = 1; digits <= 17; ++digits) {
    s.clear();
    llvm::raw_string_ostream os(s);
    os << llvm::format("%.*g", digits, v);
    if (std::strtod(s.c_str(), nullptr) == v)
      break;
  }
  if (s.find_first_of(".eEn") == std::string::npos) // "0" -> "0.0": a float literal
    s += ".0";
  return s;
}

/// `x` through config.json's hidden_act.
std::string activation(llvm::StringRef act, llvm::StringRef x) {
  if (act == "relu")
    return ("relu(" + x + ")").str();
  if (act == "gelu")
    return ("gelu(" + x + ")").str();
  return ("gelu(" + x + ", approximate: tanh)").str(); // gelu_new, gelu_pytorch_tanh
}
} // namespace

const HfArchitecture *findArchitecture(llvm::StringRef modelType, llvm::StringRef architecture,
                                       std::string &error) {
  std::string supported;
  for (const HfArchitecture &a : kArchitectures)
    if (a.modelType == modelType) {
      if (architecture.empty() || a.architecture == architecture)
        return &a;
      supported += (supported.empty() ? "" : ", ") + a.architecture;
    }
  if (supported.empty()) {
    error = "model_type '" + modelType.str() +
            "' is not one nncc import-hf reads (model types: bert, electra, longformer, reformer)";
    return nullptr;
  }
  const HfArchitecture *base = llvm::find_if(
      kArchitectures, [&](const HfArchitecture &a) { return a.modelType == modelType; });
  error = "architecture '" + architecture.str() + "' of model_type '" + modelType.str() +
          "' is not one nncc import-hf reads (" + supported + "; --as " + base->architecture +
          " imports the encoder alone)";
  return nullptr;
}

namespace {
/// The header comment and the blocks of the heads on top of the encoder.
void writeHeader(llvm::raw_ostream &os, const HfConfig &c) {
  const HfArchitecture &a = *c.spec;
  const bool electra = a.family == HfFamily::Electra;
  const bool longformer = a.family == HfFamily::Longformer;
  os << "// " << a.architecture << " (model_type " << a.modelType
     << "), imported by nncc import-hf.\n"
     << "// Inputs and outputs carry Hugging Face's names: attention_mask is 1 = keep\n"
     << "// (a token), 0 = padding. Weights: model.safetensors beside this file.\n";
  if (longformer)
    os << "// global_attention_mask: 1 = global attention (the token attends to and is\n"
       << "// attended by every token), 0 = the sliding window of W / 2 each side.\n";
  os << "\n";
  if (c.head == HfHead::Pooler || (c.head == HfHead::SequenceClassification && !electra))
    os << "// BertPooler: tanh(dense(h[:, 0])).\n"
       << "block bert_pooler(d: int) {\n"
       << "  dense = linear(d, d)\n"
       << "  forward(h) {\n"
       << "    return tanh(dense(h[:, 0]))\n"
       << "  }\n}\n\n";
  if (c.head == HfHead::SequenceClassification && electra)
    os << "// ElectraClassificationHead: [CLS], dropout, dense, gelu, dropout, out_proj.\n"
       << "block electra_classification_head(d: int, c: int, p: float) {\n"
       << "  dense = linear(d, d)\n"
       << "  out_proj = linear(d, c)\n"
       << "  forward(h) {\n"
       << "    x = gelu(dense(dropout(h[:, 0], p: p)))\n"
       << "    return out_proj(dropout(x, p: p))\n"
       << "  }\n}\n\n";
  if (c.head == HfHead::PreTraining)
    os << "// ElectraDiscriminatorPredictions: one logit per token.\n"
       << "block electra_discriminator_predictions(d: int) {\n"
       << "  dense = linear(d, d)\n"
       << "  dense_prediction = linear(d, 1)\n"
       << "  forward(h) {\n"
       << "    return dense_prediction(" << activation(c.activation, "dense(h)") << ")\n"
       << "  }\n}\n\n";

}

/// The model's constants and inputs; returns the loss expression of a
/// model with labels ("" without).
std::string writeInputs(llvm::raw_ostream &os, const HfConfig &c) {
  const bool electra = c.spec->family == HfFamily::Electra;
  const bool longformer = c.spec->family == HfFamily::Longformer;
  os << "  dims B, T\n"
     << "  const V = " << c.vocab << ", D = " << c.hidden << ", A = " << c.heads
     << ", F = " << c.ff << ", N = " << c.layers << ", P = " << c.maxPositions
     << ", TV = " << c.typeVocab;
  if (electra)
    os << ", E = " << c.embedding;
  if (c.head == HfHead::SequenceClassification)
    os << ", C = " << c.numLabels;
  if (longformer)
    os << ", W = " << c.attentionWindow << ", PAD = " << c.padTokenId;
  os << "\n\n"
     << "  input input_ids: i32[B, T]\n"
     << "  input token_type_ids: i32[B, T]\n"
     << "  input attention_mask: i32[B, T]\n";
  if (longformer)
    os << "  input global_attention_mask: i32[B, T]\n";
  std::string loss;
  if (c.head == HfHead::SequenceClassification) {
    if (c.problemType == "regression" && c.numLabels == 1) {
      os << "  input labels: f32[B]\n";
      loss = "mse(logits[:, 0], labels)";
    } else if (c.problemType == "regression" || c.problemType == "multi_label_classification") {
      os << "  input labels: f32[B, C]\n";
      loss = c.problemType == "regression" ? "mse(logits, labels)"
                                           : "binary_cross_entropy_with_logits(logits, labels)";
    } else {
      os << "  input labels: i32[B]\n";
      loss = "cross_entropy(logits, labels)";
    }
  } else if (c.head == HfHead::PreTraining) {
    // transformers' loss: BCE with logits over the tokens attention_mask
    // keeps, as a two-class cross-entropy over [0, logit] so that padding
    // is ignored (-100) and the mean counts the kept tokens only.
    os << "  input labels: i32[B, T]\n";
    loss = "cross_entropy(concat(0 * logits3, logits3, axis: -1), "
           "where(attention_mask == 0, -100, labels))";
  }

  return loss;
}

/// The layers: the embeddings, the encoder and the head.
void writeLayers(llvm::raw_ostream &os, const HfConfig &c) {
  const bool electra = c.spec->family == HfFamily::Electra;
  const bool longformer = c.spec->family == HfFamily::Longformer;
  const bool project = electra && c.embedding != c.hidden;
  os << "\n  embeddings = bert_embeddings(" << (electra ? "V, E" : "V, D")
     << ", max_len: P, type_vocab: TV, eps: " << number(c.eps)
     << ", dropout: " << number(c.hiddenDropout);
  if (longformer)
    os << ", padding_idx: PAD";
  else if (c.padTokenId >= 0)
    os << ", padding_idx: " << c.padTokenId;
  os << ")\n";
  if (project)
    os << "  embeddings_project = linear(E, D)\n";
  os << "  encoder = repeat N encoder_layer(D, heads: A, ff: F, activation: " << c.activation
     << ", dropout: " << number(c.hiddenDropout) << ", eps: " << number(c.eps)
     << (longformer ? ",\n                                   kind: dilated(window: W, convention: hf)"
                    : "")
     << ")\n";
  if (c.head == HfHead::Pooler)
    os << "  pooler = bert_pooler(D)\n";
  if (c.head == HfHead::SequenceClassification && !electra)
    os << "  pooler = bert_pooler(D)\n  classifier = linear(D, C)\n";
  if (c.head == HfHead::SequenceClassification && electra)
    os << "  classifier = electra_classification_head(D, C, " << number(c.classifierDropout)
       << ")\n";
  if (c.head == HfHead::PreTraining)
    os << "  discriminator_predictions = electra_discriminator_predictions(D)\n";

}

/// The forward clause, and the train clause of a model with a loss.
void writeForward(llvm::raw_ostream &os, const HfConfig &c, const std::string &loss) {
  const bool electra = c.spec->family == HfFamily::Electra;
  const bool longformer = c.spec->family == HfFamily::Longformer;
  const bool project = electra && c.embedding != c.hidden;
  os << "\n  forward {\n";
  std::string embedded = "embeddings(input_ids, token_type_ids)";
  if (project)
    embedded = "embeddings_project(" + embedded + ")";
  if (longformer) {
    // transformers' create_position_ids_from_input_ids.
    os << "    keep = cast(input_ids != PAD, i32)\n"
       << "    position_ids = cumsum(keep, axis: 1) * keep + PAD\n";
    os << "    embedded = embeddings(input_ids, token_type_ids, positions: position_ids)\n";
    embedded = "embedded";
  }
  os << "    last_hidden_state = encoder(" << embedded << ", mask: attention_mask == 0"
     << (longformer ? ",\n                                global_mask: global_attention_mask != 0"
                    : "")
     << ")\n";
  switch (c.head) {
  case HfHead::None:
    os << "    output last_hidden_state\n";
    break;
  case HfHead::Pooler:
    os << "    pooler_output = pooler(last_hidden_state)\n"
       << "    output last_hidden_state, pooler_output\n";
    break;
  case HfHead::SequenceClassification:
    if (electra)
      os << "    logits = classifier(last_hidden_state)\n";
    else
      os << "    logits = classifier(dropout(pooler(last_hidden_state), p: "
         << number(c.classifierDropout) << "))\n";
    os << "    output logits\n";
    break;
  case HfHead::PreTraining:
    os << "    logits3 = discriminator_predictions(last_hidden_state)\n"
       << "    logits = logits3[:, :, 0]\n"
       << "    output logits\n";
    break;
  }
  if (!loss.empty())
    os << "    loss " << loss << "\n";
  os << "  }\n";
  if (!loss.empty())
    os << "\n"
       << "  // transformers.Trainer's defaults: AdamW without weight decay, linear\n"
       << "  // decay to 0 over the run, gradients clipped at norm 1.\n"
       << "  train {\n"
       << "    optimizer adamw(lr: 5e-5, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0.0)\n"
       << "    schedule linear(warmup: 0)\n"
       << "    clip 1.0\n"
       << "    epochs 3\n"
       << "    batch 8\n"
       << "  }\n";
  os << "}\n";
}
} // namespace

namespace {
/// ReformerModel's blocks: the embeddings (words, then axial or learned
/// positions; no LayerNorm), ReformerAttention with its local or LSH self
/// attention as the reversible layers' F (the out-projection without bias is
/// attention.output.dense), and ChunkReformerFeedForward as G.
void writeReformerBlocks(llvm::raw_ostream &os, const HfConfig &c) {
  const std::string eps = number(c.eps), p = number(c.hiddenDropout);
  const std::string causal = c.causal ? ", causal: true" : "";
  os << "// ReformerEmbeddings: word embeddings (dropout), plus positions.\n"
     << "block reformer_embeddings(v: int, d: int) {\n"
     << "  word_embeddings = embedding(v, d)\n";
  if (c.axialPositions)
    os << "  position_embeddings = axial_position(d, shape: [" << c.axialShape[0] << ", "
       << c.axialShape[1] << "], dims: [" << c.axialDims[0] << ", " << c.axialDims[1] << "])\n";
  else
    os << "  position_embeddings = learned_position(" << c.maxPositions << ", d)\n";
  os << "  forward(ids) {\n"
     << "    return position_embeddings(dropout(word_embeddings(ids), p: " << p << "))\n"
     << "  }\n}\n\n";
  const bool local = llvm::is_contained(c.attnLayers, "local");
  const bool lsh = llvm::is_contained(c.attnLayers, "lsh");
  // ReformerModel pads a T above the shortest chunk length to a multiple of
  // their least common multiple (_get_least_common_mult_chunk_len): the
  // LSH layers' sorted slots and the local layers' chunks are cut from it.
  const int64_t lcm = local && lsh ? std::lcm(c.localChunk, c.lshChunk)
                      : lsh        ? c.lshChunk
                                   : c.localChunk;
  const int64_t shortest = local && lsh ? std::min(c.localChunk, c.lshChunk) : lcm;
  const std::string padding = lcm > 1 ? ", pad_to_multiple: " + std::to_string(lcm) +
                                            ", pad_above: " + std::to_string(shortest)
                                      : std::string();
  if (local)
    os << "// ReformerAttention with LocalSelfAttention (q, k, v without bias).\n"
       << "block local_attention(d: int) {\n"
       << "  norm = layer_norm(d, eps: " << eps << ")\n"
       << "  self_attention = attention(d, heads: " << c.heads << ", head_dim: " << c.headSize
       << ", kind: local(chunk: " << c.localChunk
       << ", before: " << c.localBefore << ", after: " << c.localAfter
       << padding << "), bias: false, dropout: " << number(c.localDropout) << causal << ")\n"
       << "  forward(h, pad) {\n"
       << "    return dropout(self_attention(norm(h), mask: pad), p: " << p << ")\n"
       << "  }\n}\n\n";
  if (lsh)
    os << "// ReformerAttention with LSHSelfAttention (shared query_key, value).\n"
       << "block lsh_attention(d: int) {\n"
       << "  norm = layer_norm(d, eps: " << eps << ")\n"
       << "  self_attention = attention(d, heads: " << c.heads << ", head_dim: " << c.headSize
       << ", kind: lsh(hashes: " << c.hashes
       << ", chunk: " << c.lshChunk << padding << "), bias: false, dropout: "
       << number(c.lshDropout)
       << causal << ")\n"
       << "  forward(h, pad, rotations) {\n"
       << "    return dropout(self_attention(norm(h), mask: pad, rotations: rotations), p: " << p
       << ")\n"
       << "  }\n}\n\n";
  // mlp's dropout sits between its layers, after the activation, as
  // ReformerFeedForwardDense's.
  os << "// ChunkReformerFeedForward (chunking changes nothing numerically).\n"
     << "block reformer_feed_forward(d: int, f: int) {\n"
     << "  norm = layer_norm(d, eps: " << eps << ")\n"
     << "  ff = mlp(d, f, d, layers: 2, activation: " << c.activation << ", dropout: " << p
     << ")\n"
     << "  forward(h) {\n"
     << "    return dropout(ff(norm(h)), p: " << p << ")\n"
     << "  }\n}\n\n";
}

/// ReformerModel: embeddings, the reversible layers on [e, e], LayerNorm
/// over 2 hidden_size; last_hidden_state [B, T, 2 hidden_size], as HF's.
std::string reformerSource(const HfConfig &c, llvm::StringRef name) {
  std::string s;
  llvm::raw_string_ostream os(s);
  const bool lsh = llvm::is_contained(c.attnLayers, "lsh");
  os << "// ReformerModel (model_type reformer), imported by nncc import-hf.\n"
     << "// Inputs and outputs carry Hugging Face's names: attention_mask is 1 = keep\n"
     << "// (a token), 0 = padding. Weights: model.safetensors beside this file.\n";
  if (lsh)
    os << "// lsh_rotations [heads, head size, num_hashes, buckets / 2]: the LSH layers'\n"
       << "// random rotations, which Hugging Face draws in every forward (with\n"
       << "// hash_seed set: torch.manual_seed(hash_seed), then torch.randn of that\n"
       << "// shape in the model's dtype; the same for every LSH layer).\n";
  os << "// HF pads T to a multiple of the chunk lengths' least common multiple\n"
     << "// (when T exceeds the shortest chunk): the LSH layers do the same\n"
     << "// (pad_to_multiple:, pad_above:); local layers need no padding.\n\n";
  writeReformerBlocks(os, c);
  os << "model " << name << " {\n"
     << "  dims B, T" << (lsh && c.buckets == 0 ? ", NB2" : "") << "\n"
     << "  const V = " << c.vocab << ", D = " << c.hidden << ", A = " << c.heads
     << ", F = " << c.ff;
  if (lsh)
    os << ", DH = " << c.headSize << ", HASHES = " << c.hashes;
  if (lsh && c.buckets > 0)
    os << ", NB2 = " << c.buckets / 2;
  os << "\n\n"
     << "  input input_ids: i32[B, T]\n"
     << "  input attention_mask: i32[B, T]\n";
  if (lsh)
    os << "  input lsh_rotations: f32[A, DH, HASHES, NB2]\n";
  os << "\n  embeddings = reformer_embeddings(V, D)\n";
  for (size_t i = 0; i < c.attnLayers.size(); ++i)
    os << "  layer_" << i << " = reversible(" << c.attnLayers[i]
       << "_attention(D), reformer_feed_forward(D, F))\n";
  os << "  final_norm = layer_norm(2 * D, eps: " << number(c.eps) << ")\n"
     << "\n  forward {\n"
     << "    pad = attention_mask == 0\n"
     << "    e = embeddings(input_ids)\n"
     << "    h = concat(e, e, axis: -1)\n";
  for (size_t i = 0; i < c.attnLayers.size(); ++i)
    os << "    h = layer_" << i << "(h, mask: pad"
       << (c.attnLayers[i] == "lsh" ? ", rotations: lsh_rotations" : "") << ")\n";
  os << "    last_hidden_state = dropout(final_norm(h), p: " << number(c.hiddenDropout) << ")\n"
     << "    output last_hidden_state\n"
     << "  }\n}\n";
  return s;
}

/// The parameters of reformerSource(c) and their ReformerModel tensors.
std::vector<HfWeightLink> reformerWeightLinks(const HfConfig &c, const std::string &base) {
  std::vector<HfWeightLink> links;
  const int64_t d = c.hidden;
  auto add = [&](std::string name, std::vector<int64_t> shape, std::vector<std::string> from) {
    links.push_back({std::move(name), std::move(shape), std::move(from)});
  };
  auto affine = [&](const std::string &to, const std::string &from, int64_t out, int64_t in) {
    add(to + ".weight", in ? std::vector<int64_t>{out, in} : std::vector<int64_t>{out},
        {from + ".weight"});
    add(to + ".bias", {out}, {from + ".bias"});
  };
  const std::string emb = base + "embeddings.";
  add("embeddings.word_embeddings.weight", {c.vocab, d}, {emb + "word_embeddings.weight"});
  if (c.axialPositions) {
    add("embeddings.position_embeddings.weights.0", {c.axialShape[0], 1, c.axialDims[0]},
        {emb + "position_embeddings.weights.0"});
    add("embeddings.position_embeddings.weights.1", {1, c.axialShape[1], c.axialDims[1]},
        {emb + "position_embeddings.weights.1"});
  } else {
    add("embeddings.position_embeddings.weight", {c.maxPositions, d},
        {emb + "position_embeddings.embedding.weight"});
  }
  for (size_t i = 0; i < c.attnLayers.size(); ++i) {
    const std::string to = "layer_" + std::to_string(i) + ".";
    const std::string from = base + "encoder.layers." + std::to_string(i) + ".";
    const std::string self = from + "attention.self_attention.";
    affine(to + "f.norm", from + "attention.layer_norm", d, 0);
    const int64_t width = c.heads * c.headSize; // the heads' width, hidden_size or not
    if (c.attnLayers[i] == "lsh")
      add(to + "f.self_attention.in_proj_weight", {2 * width, d},
          {self + "query_key.weight", self + "value.weight"});
    else
      add(to + "f.self_attention.in_proj_weight", {3 * width, d},
          {self + "query.weight", self + "key.weight", self + "value.weight"});
    add(to + "f.self_attention.out_proj.weight", {d, width},
        {from + "attention.output.dense.weight"});
    affine(to + "g.norm", from + "feed_forward.layer_norm", d, 0);
    affine(to + "g.ff.0", from + "feed_forward.dense.dense", c.ff, d);
    affine(to + "g.ff.1", from + "feed_forward.output.dense", d, c.ff);
  }
  affine("final_norm", base + "encoder.layer_norm", 2 * d, 0);
  return links;
}
} // namespace

std::string modelSource(const HfConfig &c, llvm::StringRef name) {
  if (c.spec->family == HfFamily::Reformer)
    return reformerSource(c, name);
  std::string s;
  llvm::raw_string_ostream os(s);
  writeHeader(os, c);
  os << "model " << name << " {\n";
  std::string loss = writeInputs(os, c);
  writeLayers(os, c);
  writeForward(os, c, loss);
  return s;
}

std::vector<HfWeightLink> weightLinks(const HfConfig &c, const std::string &basePrefix) {
  if (c.spec->family == HfFamily::Reformer)
    return reformerWeightLinks(c, basePrefix);
  std::vector<HfWeightLink> links;
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 std::vector<std::string> sources) {
    links.push_back({name, std::move(shape), std::move(sources)});
  };
  auto linear = [&](const std::string &to, const std::string &from, int64_t out, int64_t in) {
    add(to + ".weight", {out, in}, {from + ".weight"});
    add(to + ".bias", {out}, {from + ".bias"});
  };
  auto norm = [&](const std::string &to, const std::string &from, int64_t d) {
    add(to + ".weight", {d}, {from + ".weight"});
    add(to + ".bias", {d}, {from + ".bias"});
  };
  const std::string &base = basePrefix;
  const int64_t d = c.hidden, e = c.embedding;
  const std::string emb = base + "embeddings.";
  add(c.embeddingsPath + ".word_embeddings.weight", {c.vocab, e}, {emb + "word_embeddings.weight"});
  add(c.embeddingsPath + ".position_embeddings.weight", {c.maxPositions, e},
      {emb + "position_embeddings.weight"});
  add(c.embeddingsPath + ".token_type_embeddings.weight", {c.typeVocab, e},
      {emb + "token_type_embeddings.weight"});
  norm(c.embeddingsPath + ".LayerNorm", emb + "LayerNorm", e);
  if (c.spec->family == HfFamily::Electra && e != d)
    linear("embeddings_project", base + "embeddings_project", d, e);
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string to = c.encoderPath + "." + std::to_string(i) + ".";
    std::string from = base + "encoder.layer." + std::to_string(i) + ".";
    std::string self = from + "attention.self.";
    std::vector<std::string> projections = {"query", "key", "value"};
    if (c.spec->family == HfFamily::Longformer)
      projections.insert(projections.end(), {"query_global", "key_global", "value_global"});
    std::vector<std::string> weights, biases;
    for (const std::string &p : projections) {
      weights.push_back(self + p + ".weight");
      biases.push_back(self + p + ".bias");
    }
    const int64_t rows = int64_t(projections.size()) * d;
    add(to + "self_attn.in_proj_weight", {rows, d}, std::move(weights));
    add(to + "self_attn.in_proj_bias", {rows}, std::move(biases));
    linear(to + "self_attn.out_proj", from + "attention.output.dense", d, d);
    norm(to + "norm1", from + "attention.output.LayerNorm", d);
    linear(to + "linear1", from + "intermediate.dense", c.ff, d);
    linear(to + "linear2", from + "output.dense", d, c.ff);
    norm(to + "norm2", from + "output.LayerNorm", d);
  }
  switch (c.head) {
  case HfHead::None:
    break;
  case HfHead::Pooler:
    linear("pooler.dense", base + "pooler.dense", d, d);
    break;
  case HfHead::SequenceClassification:
    if (c.spec->family == HfFamily::Electra) {
      linear("classifier.dense", "classifier.dense", d, d);
      linear("classifier.out_proj", "classifier.out_proj", c.numLabels, d);
    } else {
      linear("pooler.dense", base + "pooler.dense", d, d);
      linear("classifier", "classifier", c.numLabels, d);
    }
    break;
  case HfHead::PreTraining:
    linear("discriminator_predictions.dense", "discriminator_predictions.dense", d, d);
    linear("discriminator_predictions.dense_prediction",
           "discriminator_predictions.dense_prediction", 1, d);
    break;
  }
  return links;
}

} // namespace nncc::tool
