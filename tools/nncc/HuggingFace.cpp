//===- HuggingFace.cpp - the `import-hf` subcommand -----------------------===//
//
//   nncc import-hf DIR -o OUT [--as ARCH] [--name NAME]
//   nncc export-hf M.nn --weights W -o DIR [--architecture ARCH] [--dtype f16]
//
// Reads a Hugging Face checkpoint folder (config.json + model.safetensors, or
// a sharded model.safetensors.index.json) and writes OUT/model.nn, which
// computes what the config says with nncc's layers, and OUT/model.safetensors,
// the weights under the names of that model (q/k/v fused into
// in_proj_weight as nncc stores them; F16/BF16 widened to F32 exactly). The
// imported model's inputs and outputs are named as the Hugging Face model's
// forward arguments and output fields, so a tokenizer's output feeds it
// unchanged (docs/huggingface.md). Families: BERT and ELECTRA (HfModels.cpp
// holds what differs between them).
//
//===----------------------------------------------------------------------===//
#include "HuggingFace.h"

#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Driver/Support.h"
#include "nncc/Frontend/Sema.h"
#include "nncc/Runtime/nncc_runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"

#include <array>
#include <cstring>
#include <memory>
#include <set>

namespace cl = llvm::cl;
using namespace nncc::driver;

namespace nncc::tool {

cl::OptionCategory hfCategory("nncc import-hf options");
cl::SubCommand importHfCmd("import-hf",
                           "Import a Hugging Face checkpoint folder (config.json + "
                           "model.safetensors) as a .nn model and its weights");

namespace {
cl::opt<std::string> importDir(cl::Positional, cl::desc("<checkpoint folder>"), cl::Required,
                               cl::sub(importHfCmd), cl::cat(hfCategory));
cl::opt<std::string> importOut("o", cl::desc("Folder for model.nn and model.safetensors"),
                               cl::value_desc("OUT"), cl::Required, cl::sub(importHfCmd),
                               cl::cat(hfCategory));
cl::opt<std::string> importAs("as",
                              cl::desc("Import as this architecture instead of the config's "
                                       "(e.g. BertModel: the encoder of a checkpoint with "
                                       "another head)"),
                              cl::value_desc("ARCH"), cl::sub(importHfCmd), cl::cat(hfCategory));
cl::opt<std::string> importName("name", cl::desc("The model's name (default: the model_type)"),
                                cl::value_desc("NAME"), cl::sub(importHfCmd),
                                cl::cat(hfCategory));

//===----------------------------------------------------------------------===//
// config.json
//===----------------------------------------------------------------------===//

/// Reads config.json's fields with the checks and messages of one place.
class ConfigReader {
public:
  ConfigReader(const llvm::json::Object &object, std::string path)
      : object(object), path(std::move(path)) {}

  bool failed() const { return !error.empty(); }
  const std::string &message() const { return error; }

  int64_t positiveInt(llvm::StringRef key) {
    std::optional<int64_t> v = object.getInteger(key);
    if (!v || *v < 1 || *v > (int64_t(1) << 40))
      return fail(key, "a positive integer"), 1;
    return *v;
  }
  int64_t positiveInt(llvm::StringRef key, int64_t dflt) {
    return object.get(key) && !isNull(key) ? positiveInt(key) : dflt;
  }
  /// A token id: >= 0, or null for none (-1); `dflt` when absent.
  int64_t tokenId(llvm::StringRef key, int64_t dflt) {
    if (!object.get(key))
      return dflt;
    if (isNull(key))
      return -1;
    std::optional<int64_t> v = object.getInteger(key);
    if (!v || *v < 0 || *v > (int64_t(1) << 40))
      return fail(key, "a token id (an integer >= 0) or null"), dflt;
    return *v;
  }
  double number(llvm::StringRef key, double dflt, double lo, double hi) {
    if (!object.get(key) || isNull(key))
      return dflt;
    std::optional<double> v = object.getNumber(key);
    if (!v || !(*v >= lo && *v <= hi))
      return fail(key, llvm::formatv("a number in [{0}, {1}]", lo, hi).str()), dflt;
    return *v;
  }
  std::string string(llvm::StringRef key, llvm::StringRef dflt) {
    if (!object.get(key) || isNull(key))
      return dflt.str();
    std::optional<llvm::StringRef> v = object.getString(key);
    if (!v)
      return fail(key, "a string"), dflt.str();
    return v->str();
  }
  bool boolean(llvm::StringRef key, bool dflt) {
    if (!object.get(key) || isNull(key))
      return dflt;
    std::optional<bool> v = object.getBoolean(key);
    if (!v)
      return fail(key, "true or false"), dflt;
    return *v;
  }
  /// A value this import cannot represent: `key` is `value`, nncc needs `need`.
  void unsupported(llvm::StringRef key, llvm::StringRef value, llvm::StringRef need) {
    if (error.empty())
      error = path + ": '" + key.str() + "' is " + value.str() + "; nncc import-hf supports " +
              need.str();
  }

private:
  bool isNull(llvm::StringRef key) const {
    const llvm::json::Value *v = object.get(key);
    return v && v->kind() == llvm::json::Value::Null;
  }
  void fail(llvm::StringRef key, const llvm::Twine &what) {
    if (error.empty())
      error = path + ": '" + key.str() + "' must be " + what.str();
  }

  const llvm::json::Object &object;
  std::string path;
  std::string error;
};

const char *const kActivations[] = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};

/// Longformer's attention_window: one even size, or one per layer, all the
/// same (nncc's encoder repeats one layer); 0 after a reported error.
int64_t attentionWindow(const llvm::json::Object &object, int64_t layers, ConfigReader &r) {
  const llvm::json::Value *v = object.get("attention_window");
  std::vector<int64_t> windows;
  if (!v) {
    windows.push_back(512); // LongformerConfig's default
  } else if (std::optional<int64_t> w = v->getAsInteger()) {
    windows.push_back(*w);
  } else if (const llvm::json::Array *list = v->getAsArray()) {
    for (const llvm::json::Value &e : *list)
      windows.push_back(e.getAsInteger().value_or(-1));
    if (int64_t(windows.size()) != layers) {
      r.unsupported("attention_window",
                    "a list of " + std::to_string(windows.size()) + " sizes",
                    "one size, or one per layer (num_hidden_layers " + std::to_string(layers) +
                        ")");
      return 0;
    }
  }
  if (windows.empty() || llvm::any_of(windows, [](int64_t w) { return w < 2 || w % 2 != 0; })) {
    r.unsupported("attention_window", "not a positive even size (or a list of them)",
                  "positive even sizes, as transformers requires");
    return 0;
  }
  if (llvm::any_of(windows, [&](int64_t w) { return w != windows[0]; })) {
    r.unsupported("attention_window", "different per layer",
                  "one window for every layer (nncc's encoder repeats one layer)");
    return 0;
  }
  return windows[0];
}

/// A list of two positive integers (Reformer's axial_pos_shape / _dims).
bool positivePair(const llvm::json::Object &object, llvm::StringRef key, int64_t out[2],
                  ConfigReader &r) {
  const llvm::json::Value *v = object.get(key);
  if (!v)
    return true;
  const llvm::json::Array *list = v->getAsArray();
  if (!list || list->size() != 2 || !(*list)[0].getAsInteger() || !(*list)[1].getAsInteger() ||
      *(*list)[0].getAsInteger() < 1 || *(*list)[1].getAsInteger() < 1) {
    r.unsupported(key, "not two positive sizes", "two axes (axial_pos_shape [n1, n2])");
    return false;
  }
  out[0] = *(*list)[0].getAsInteger();
  out[1] = *(*list)[1].getAsInteger();
  return true;
}

/// ReformerConfig's fields (its defaults where absent).
void readReformerConfig(const llvm::json::Object &object, ConfigReader &r, HfConfig &c) {
  c.vocab = r.positiveInt("vocab_size", 320);
  c.hidden = r.positiveInt("hidden_size", 256);
  c.heads = r.positiveInt("num_attention_heads", 12);
  c.headSize = r.positiveInt("attention_head_size", 64);
  c.ff = r.positiveInt("feed_forward_size", 512);
  c.maxPositions = r.positiveInt("max_position_embeddings", 4096);
  c.eps = r.number("layer_norm_eps", 1e-12, 1e-30, 1.0);
  c.hiddenDropout = r.number("hidden_dropout_prob", 0.05, 0.0, 1.0);
  c.localDropout = r.number("local_attention_probs_dropout_prob", 0.05, 0.0, 1.0);
  c.lshDropout = r.number("lsh_attention_probs_dropout_prob", 0.0, 0.0, 1.0);
  c.activation = r.string("hidden_act", "relu");
  c.causal = r.boolean("is_decoder", false);
  c.axialPositions = r.boolean("axial_pos_embds", true);
  c.localChunk = r.positiveInt("local_attn_chunk_length", 64);
  c.lshChunk = r.positiveInt("lsh_attn_chunk_length", 64);
  c.hashes = r.positiveInt("num_hashes", 1);
  c.padTokenId = -1; // ReformerEmbeddings' word table has no padding_idx
  c.attnLayers = {"local", "lsh", "local", "lsh", "local", "lsh"};
  if (const llvm::json::Value *v = object.get("attn_layers")) {
    c.attnLayers.clear();
    const llvm::json::Array *list = v->getAsArray();
    for (size_t i = 0; list && i < list->size(); ++i)
      c.attnLayers.push_back((*list)[i].getAsString().value_or("?").str());
    if (!list || c.attnLayers.empty() ||
        llvm::any_of(c.attnLayers, [](const std::string &k) { return k != "local" && k != "lsh"; }))
      r.unsupported("attn_layers", "not a list of \"local\" and \"lsh\"",
                    "layers of local and lsh attention");
  }
  c.layers = int64_t(c.attnLayers.size());
  if (r.failed())
    return;
  auto chunks = [&](llvm::StringRef before, llvm::StringRef after, int64_t &b, int64_t &a,
                    bool lsh) {
    std::optional<int64_t> vb = object.getInteger(before), va = object.getInteger(after);
    b = object.get(before) ? vb.value_or(-1) : 1;
    a = object.get(after) ? va.value_or(-1) : 0;
    if (lsh && (b != 1 || a != 0))
      r.unsupported(before, std::to_string(b) + " (" + after.str() + " " + std::to_string(a) + ")",
                    "one chunk back and none ahead for LSH layers (1 and 0, the defaults)");
    else if (b < 0 || a < 0)
      r.unsupported(before, "negative", "chunk counts >= 0");
  };
  int64_t lb, la;
  chunks("local_num_chunks_before", "local_num_chunks_after", c.localBefore, c.localAfter, false);
  chunks("lsh_num_chunks_before", "lsh_num_chunks_after", lb, la, true);
  if (const llvm::json::Value *v = object.get("num_buckets");
      v && v->kind() != llvm::json::Value::Null) {
    std::optional<int64_t> nb = v->getAsInteger();
    if (!nb || *nb < 2 || *nb % 2 != 0)
      r.unsupported("num_buckets", "not one even number >= 2",
                    "one even bucket count, or null (factorised buckets, a list, are not)");
    else
      c.buckets = *nb;
  }
  if (c.axialPositions) {
    positivePair(object, "axial_pos_shape", c.axialShape, r);
    positivePair(object, "axial_pos_embds_dim", c.axialDims, r);
    if (c.axialDims[0] + c.axialDims[1] != c.hidden)
      r.unsupported("axial_pos_embds_dim", "[" + std::to_string(c.axialDims[0]) + ", " +
                    std::to_string(c.axialDims[1]) + "]",
                    "dims adding up to hidden_size " + std::to_string(c.hidden));
  }
  if (!llvm::is_contained(kActivations, c.activation))
    r.unsupported("hidden_act", "'" + c.activation + "'",
                  "gelu, gelu_new, gelu_pytorch_tanh and relu");
}

std::optional<HfConfig> readConfig(const std::string &dir, std::string &error) {
  std::string path = (llvm::Twine(dir) + "/config.json").str();
  if (int rc = checkInputPath("import-hf", path); rc != 0) {
    error = "";
    return std::nullopt;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message() +
            " (a Hugging Face checkpoint folder holds config.json and model.safetensors)";
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = path + ": not JSON: " + llvm::toString(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *object = json->getAsObject();
  if (!object) {
    error = path + ": expected a JSON object";
    return std::nullopt;
  }
  ConfigReader r(*object, path);
  HfConfig c;
  c.modelType = r.string("model_type", "");
  if (const llvm::json::Array *archs = object->getArray("architectures"))
    if (!archs->empty())
      if (std::optional<llvm::StringRef> a = (*archs)[0].getAsString())
        c.architecture = a->str();
  if (!importAs.empty())
    c.architecture = importAs;
  c.spec = findArchitecture(c.modelType, c.architecture, error);
  if (!c.spec) {
    error = path + ": " + error;
    return std::nullopt;
  }
  c.head = c.spec->head;
  if (c.spec->family == HfFamily::Reformer) {
    readReformerConfig(*object, r, c);
    if (r.failed()) {
      error = r.message();
      return std::nullopt;
    }
    return c;
  }
  c.vocab = r.positiveInt("vocab_size");
  c.hidden = r.positiveInt("hidden_size");
  c.layers = r.positiveInt("num_hidden_layers");
  c.heads = r.positiveInt("num_attention_heads");
  c.ff = r.positiveInt("intermediate_size");
  c.maxPositions = r.positiveInt("max_position_embeddings");
  c.typeVocab = r.positiveInt("type_vocab_size", 2);
  // BertConfig's and ElectraConfig's default (LongformerConfig's: 1); the
  // word embeddings' padding_idx (that row gets no gradient).
  const bool longformer = c.spec->family == HfFamily::Longformer;
  c.padTokenId = r.tokenId("pad_token_id", longformer ? 1 : 0);
  c.embedding = c.spec->family == HfFamily::Electra ? r.positiveInt("embedding_size", c.hidden)
                                                    : c.hidden;
  c.eps = r.number("layer_norm_eps", 1e-12, 1e-30, 1.0);
  c.hiddenDropout = r.number("hidden_dropout_prob", 0.1, 0.0, 1.0);
  c.attentionDropout = r.number("attention_probs_dropout_prob", 0.1, 0.0, 1.0);
  c.classifierDropout = r.number("classifier_dropout", c.hiddenDropout, 0.0, 1.0);
  c.activation = r.string("hidden_act", "gelu");
  c.problemType = r.string("problem_type", "");
  c.numLabels = 2;
  if (const llvm::json::Object *id2label = object->getObject("id2label"))
    c.numLabels = int64_t(id2label->size());
  c.numLabels = r.positiveInt("num_labels", c.numLabels);
  if (r.failed()) {
    error = r.message();
    return std::nullopt;
  }
  if (!llvm::is_contained(kActivations, c.activation))
    r.unsupported("hidden_act", "'" + c.activation + "'",
                  "gelu, gelu_new, gelu_pytorch_tanh and relu");
  if (std::string pos = r.string("position_embedding_type", "absolute"); pos != "absolute")
    r.unsupported("position_embedding_type", "'" + pos + "'", "'absolute' only");
  if (r.boolean("is_decoder", false))
    r.unsupported("is_decoder", "true", "encoders (is_decoder false) only");
  if (r.boolean("add_cross_attention", false))
    r.unsupported("add_cross_attention", "true", "no cross-attention");
  if (c.hidden % c.heads != 0)
    r.unsupported("hidden_size", std::to_string(c.hidden),
                  "a multiple of num_attention_heads (" + std::to_string(c.heads) + ")");
  if (!c.problemType.empty() && c.problemType != "single_label_classification" &&
      c.problemType != "multi_label_classification" && c.problemType != "regression")
    r.unsupported("problem_type", "'" + c.problemType + "'",
                  "single_label_classification, multi_label_classification and regression");
  if (c.padTokenId >= c.vocab)
    r.unsupported("pad_token_id", std::to_string(c.padTokenId),
                  "a row of the word embeddings (< vocab_size " + std::to_string(c.vocab) +
                      ") or null");
  if (longformer) {
    if (c.padTokenId < 0)
      r.unsupported("pad_token_id", "null", "a token id for Longformer (its position ids count "
                                            "the tokens that are not padding)");
    else if (c.padTokenId >= c.maxPositions)
      r.unsupported("pad_token_id", std::to_string(c.padTokenId),
                    "a row of the position table for Longformer (< max_position_embeddings " +
                        std::to_string(c.maxPositions) + ")");
    c.attentionWindow = attentionWindow(*object, c.layers, r);
  }
  if (c.problemType.empty())
    c.problemType = c.numLabels == 1 ? "regression" : "single_label_classification";
  if (r.failed()) {
    error = r.message();
    return std::nullopt;
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

/// F32, F64, F16 or BF16: the weight types elementAsF32 reads.
bool isFloatWeight(nncc_dtype dtype) {
  return dtype == NNCC_DTYPE_F32 || dtype == NNCC_DTYPE_F64 || dtype == NNCC_DTYPE_F16 ||
         dtype == NNCC_DTYPE_BF16;
}

/// Element `i` of a float tensor as F32: F16 and BF16 widened exactly, F64
/// rounded to nearest (even). The data may be unaligned (nncc_tensor_view):
/// it is read bytewise.
float elementAsF32(const nncc_tensor_view &v, size_t i) {
  const auto *bytes = static_cast<const unsigned char *>(v.data);
  switch (v.dtype) {
  case NNCC_DTYPE_F64: {
    double d;
    std::memcpy(&d, bytes + 8 * i, 8);
    return float(d);
  }
  case NNCC_DTYPE_F16:
  case NNCC_DTYPE_BF16: {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    return v.dtype == NNCC_DTYPE_F16 ? nncc_f16_to_f32(h) : nncc_bf16_to_f32(h);
  }
  default: {
    float f;
    std::memcpy(&f, bytes + 4 * i, 4);
    return f;
  }
  }
}

/// A tensor to write: borrowed bytes of `dtype`.
struct OutTensor {
  const std::string &name;
  const std::vector<int64_t> &shape;
  nncc_dtype dtype;
  const void *data;
  uint64_t nbytes;
};

/// Writes `tensors` and `metadata` (beside "format": "pt") to `path`;
/// returns the exit status.
int writeSafetensors(const std::string &path, llvm::ArrayRef<OutTensor> tensors,
                     llvm::ArrayRef<std::pair<const char *, std::string>> metadata) {
  nncc_safetensors_writer *writer = nullptr;
  nncc_error err{};
  if (nncc_safetensors_writer_create(&writer, &err) != NNCC_OK)
    return fail(err.message);
  std::unique_ptr<nncc_safetensors_writer, void (*)(nncc_safetensors_writer *)> owner(
      writer, nncc_safetensors_writer_destroy);
  for (const OutTensor &t : tensors)
    if (nncc_safetensors_writer_add(writer, t.name.c_str(), t.dtype, int32_t(t.shape.size()),
                                    t.shape.data(), t.data, t.nbytes, &err) != NNCC_OK)
      return fail(err.message);
  nncc_safetensors_writer_set_metadata(writer, "format", "pt", nullptr);
  for (const auto &[key, value] : metadata)
    nncc_safetensors_writer_set_metadata(writer, key, value.c_str(), nullptr);
  if (nncc_safetensors_writer_write(writer, path.c_str(), &err) != NNCC_OK)
    return fail(err.message);
  return 0;
}

/// The checkpoint's safetensors files, each open; a tensor is found in any.
class Checkpoint {
public:
  ~Checkpoint() {
    for (nncc_safetensors *f : files)
      nncc_safetensors_close(f);
  }

  /// Opens DIR/model.safetensors, or the shards DIR/model.safetensors.index.json names.
  bool open(const std::string &dir, std::string &error) {
    std::string single = dir + "/model.safetensors";
    std::string index = dir + "/model.safetensors.index.json";
    std::vector<std::string> paths;
    if (llvm::sys::fs::exists(single)) {
      paths.push_back(single);
    } else if (llvm::sys::fs::exists(index)) {
      if (!readIndex(dir, index, paths, error))
        return false;
    } else {
      error = "'" + dir + "' holds no model.safetensors";
      if (llvm::sys::fs::exists(dir + "/pytorch_model.bin"))
        error += " (only pytorch_model.bin: nncc reads safetensors, not pickles; in Python, "
                 "AutoModel.from_pretrained(DIR).save_pretrained(DIR) writes one)";
      return false;
    }
    for (const std::string &p : paths) {
      if (checkInputPath("import-hf", p) != 0) {
        error = "";
        return false;
      }
      nncc_safetensors *f = nullptr;
      nncc_error err{};
      if (nncc_safetensors_open(p.c_str(), &f, &err) != NNCC_OK) {
        error = err.message;
        return false;
      }
      files.push_back(f);
      for (size_t i = 0, n = nncc_safetensors_count(f); i < n; ++i) {
        nncc_tensor_view v{};
        if (nncc_safetensors_tensor_at(f, i, &v, &err) == NNCC_OK)
          unused.insert(v.name);
      }
    }
    return true;
  }

  bool has(const std::string &name) const { return find(name).has_value(); }

  std::optional<nncc_tensor_view> find(const std::string &name) const {
    for (nncc_safetensors *f : files) {
      nncc_tensor_view v{};
      if (nncc_safetensors_find(f, name.c_str(), &v, nullptr) == NNCC_OK)
        return v;
    }
    return std::nullopt;
  }

  /// Appends tensor `name` of `shape`, as F32, to `out`; marks it used.
  bool readF32(const std::string &name, llvm::ArrayRef<int64_t> shape, std::vector<float> &out,
               std::string &error) {
    std::optional<nncc_tensor_view> v = find(name);
    if (!v) {
      error = "the checkpoint has no tensor '" + name + "'";
      return false;
    }
    if (llvm::ArrayRef<int64_t>(v->shape, v->rank) != shape) {
      error = "tensor '" + name + "' is " + shapeString({v->shape, size_t(v->rank)}) +
              "; config.json implies " + shapeString(shape);
      return false;
    }
    if (!isFloatWeight(v->dtype)) {
      error = "tensor '" + name + "' is " + nncc_dtype_name(v->dtype) +
              "; weights must be F32, F64, F16 or BF16";
      return false;
    }
    unused.erase(name);
    for (size_t i = 0; i < v->numel; ++i)
      out.push_back(elementAsF32(*v, i));
    return true;
  }

  /// Tensors no parameter read (buffers such as position_ids excepted).
  std::vector<std::string> unusedTensors() const {
    std::vector<std::string> names;
    for (const std::string &n : unused)
      if (!llvm::StringRef(n).ends_with("position_ids"))
        names.push_back(n);
    return names;
  }

private:
  bool readIndex(const std::string &dir, const std::string &index,
                 std::vector<std::string> &paths, std::string &error) {
    auto buffer = llvm::MemoryBuffer::getFile(index, /*IsText=*/true);
    if (!buffer) {
      error = "cannot read '" + index + "': " + buffer.getError().message();
      return false;
    }
    llvm::Expected<llvm::json::Value> json = llvm::json::parse((*buffer)->getBuffer());
    const llvm::json::Object *map =
        json && json->getAsObject() ? json->getAsObject()->getObject("weight_map") : nullptr;
    if (!map) {
      if (!json)
        llvm::consumeError(json.takeError());
      error = index + ": expected an object with a 'weight_map'";
      return false;
    }
    std::set<std::string> shards;
    for (const auto &kv : *map) {
      std::optional<llvm::StringRef> file = kv.second.getAsString();
      if (!file || file->empty() || file->contains('/') || *file == "..") {
        error = index + ": the shard of '" + kv.first.str() + "' must be a file name";
        return false;
      }
      shards.insert(file->str());
    }
    for (const std::string &s : shards)
      paths.push_back(dir + "/" + s);
    return true;
  }

  std::vector<nncc_safetensors *> files;
  std::set<std::string> unused;
};

/// Copies the tokenizer's files beside the model, so OUT is a whole folder
/// for `python -m nncc.data encode --tokenizer OUT`.
int copyTokenizerFiles(const std::string &dir, const std::string &out) {
  for (const char *name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                           "vocab.txt"}) {
    std::string from = dir + "/" + name, to = out + "/" + name;
    if (!llvm::sys::fs::is_regular_file(from))
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(from);
    if (!buffer)
      return fail("cannot read '" + from + "': " + buffer.getError().message());
    if (int rc = replaceFile(to, (*buffer)->getBuffer(), "-o"))
      return rc;
  }
  return 0;
}
} // namespace

int runImportHf() {
  std::string dir = importDir;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  if (!llvm::sys::fs::is_directory(dir))
    return fail("'" + dir + "' is not a folder (nncc import-hf reads a Hugging Face checkpoint "
                            "folder: config.json and model.safetensors)");
  std::string error;
  std::optional<HfConfig> config = readConfig(dir, error);
  if (!config)
    return error.empty() ? 1 : fail(error);

  Checkpoint checkpoint;
  if (!checkpoint.open(dir, error))
    return error.empty() ? 1 : fail(error);

  std::string name = importName.empty() ? config->modelType : importName.getValue();
  if (name.empty() || !(llvm::isAlpha(name[0]) || name[0] == '_') ||
      !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return fail("--name '" + name + "' is not an identifier (letters, digits, '_')");

  // The encoder's tensors under base_model_prefix ("bert.") in a task
  // model's checkpoint, without it in a base model's.
  const std::string prefix =
      checkpoint.has(config->spec->prefix + ".embeddings.word_embeddings.weight")
          ? config->spec->prefix + "."
          : "";
  // BertModel(add_pooling_layer=False) saves no pooler.
  if (config->head == HfHead::Pooler && !checkpoint.has(prefix + "pooler.dense.weight"))
    config->head = HfHead::None;
  // The weights first: a checkpoint that does not match its config fails
  // before anything is written.
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
  };
  std::vector<Tensor> weights;
  for (const HfWeightLink &link : weightLinks(*config, prefix)) {
    Tensor t{link.name, link.shape, {}};
    std::vector<int64_t> part = link.shape;
    part[0] /= int64_t(link.sources.size());
    for (const std::string &source : link.sources)
      if (!checkpoint.readF32(source, part, t.data, error))
        return fail(dir + ": " + error);
    weights.push_back(std::move(t));
  }

  std::string out = importOut;
  if (std::error_code ec = llvm::sys::fs::create_directories(out))
    return fail("-o '" + out + "': cannot create the folder: " + ec.message());
  std::string source = modelSource(*config, name);
  if (int rc = replaceFile(out + "/model.nn", source, "-o"))
    return rc;

  std::vector<OutTensor> written;
  for (const Tensor &t : weights)
    written.push_back({t.name, t.shape, NNCC_DTYPE_F32, t.data.data(),
                       uint64_t(t.data.size()) * sizeof(float)});
  if (int rc = writeSafetensors(out + "/model.safetensors", written,
                                {{"nncc.imported_from", config->spec->architecture}}))
    return rc;
  if (int rc = copyTokenizerFiles(dir, out))
    return rc;

  // Reformer's layers take their own (local_/lsh_) attention dropouts.
  if (config->spec->family != HfFamily::Reformer &&
      config->attentionDropout != config->hiddenDropout)
    llvm::errs() << "nncc: note: attention_probs_dropout_prob " << config->attentionDropout
                 << " differs from hidden_dropout_prob " << config->hiddenDropout
                 << "; nncc's encoder_layer has one dropout probability: "
                 << config->hiddenDropout << " for both (training only)\n";
  std::vector<std::string> unused = checkpoint.unusedTensors();
  if (!unused.empty()) {
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 4; ++i)
      list += (i ? ", '" : "'") + unused[i] + "'";
    if (unused.size() > 4)
      list += " and " + std::to_string(unused.size() - 4) + " more";
    llvm::errs() << "nncc: note: " << unused.size() << " tensor(s) of the checkpoint are not part of "
                 << config->spec->architecture << " and were left out: " << printable(list)
                 << "\n";
  }
  llvm::outs() << "imported " << config->spec->architecture << " (" << config->layers
               << " layers, hidden " << config->hidden << ", " << weights.size()
               << " tensors) to " << printable(out + "/model.nn") << " and "
               << printable(out + "/model.safetensors") << "\n";
  return 0;
}

//===----------------------------------------------------------------------===//
// export-hf
//===----------------------------------------------------------------------===//

cl::SubCommand exportHfCmd("export-hf",
                           "Write a BERT / ELECTRA model trained by nncc as a Hugging Face "
                           "checkpoint folder (config.json + model.safetensors)");

namespace {
cl::opt<std::string> exportModel(cl::Positional, cl::desc("<model.nn>"), cl::Required,
                                 cl::sub(exportHfCmd), cl::cat(hfCategory));
cl::opt<std::string> exportWeights("weights", cl::desc("The model's weights (nncc's names)"),
                                   cl::value_desc("W.safetensors"), cl::Required,
                                   cl::sub(exportHfCmd), cl::cat(hfCategory));
cl::opt<std::string> exportOut("o", cl::desc("Folder for config.json and model.safetensors"),
                               cl::value_desc("DIR"), cl::Required, cl::sub(exportHfCmd),
                               cl::cat(hfCategory));
cl::opt<std::string> exportArchitecture(
    "architecture",
    cl::desc("The transformers class (default: from the model's layers: classifier, "
             "discriminator_predictions, pooler, else ElectraModel)"),
    cl::value_desc("ARCH"), cl::sub(exportHfCmd), cl::cat(hfCategory));
cl::opt<std::string> exportEmbeddings("embeddings",
                                      cl::desc("The bert_embeddings layer (when there are several)"),
                                      cl::value_desc("NAME"), cl::sub(exportHfCmd),
                                      cl::cat(hfCategory));
cl::opt<std::string> exportEncoder("encoder",
                                   cl::desc("The `repeat N encoder_layer` layer (when there are "
                                            "several)"),
                                   cl::value_desc("NAME"), cl::sub(exportHfCmd),
                                   cl::cat(hfCategory));
enum class ExportDtype { F32, F16, BF16 };
cl::opt<ExportDtype> exportDtype(
    "dtype", cl::desc("Element type of the written weights"), cl::init(ExportDtype::F32),
    cl::values(clEnumValN(ExportDtype::F32, "f32", "float32 (F64 weights rounded to nearest)"),
               clEnumValN(ExportDtype::F16, "f16", "float16, rounded to nearest even"),
               clEnumValN(ExportDtype::BF16, "bf16", "bfloat16, rounded to nearest even")),
    cl::sub(exportHfCmd), cl::cat(hfCategory));

using frontend::CValue;
using frontend::LayerInstance;

/// The one top-level layer that `matches` (or the one named `chosen`).
const LayerInstance *findLayer(const frontend::ModelInfo &m, llvm::StringRef what,
                               llvm::StringRef flag, const std::string &chosen,
                               llvm::function_ref<bool(const LayerInstance &)> matches,
                               std::string &error) {
  std::vector<std::string> names;
  const LayerInstance *found = nullptr;
  for (const auto &[name, layer] : m.layers)
    if (matches(*layer) && (chosen.empty() || name == chosen)) {
      names.push_back(name);
      found = layer.get();
    }
  if (names.size() == 1)
    return found;
  if (!chosen.empty())
    error = "model '" + m.name + "' has no " + what.str() + " layer '" + chosen + "'";
  else if (names.empty())
    error = "model '" + m.name + "' has no " + what.str() + " layer";
  else
    error = "model '" + m.name + "' has several " + what.str() + " layers (" +
            llvm::join(names, ", ") + "): choose one with " + flag.str();
  return nullptr;
}

bool isLinear(const LayerInstance *l, int64_t in, int64_t out) {
  return l && l->kind == LayerInstance::Library && l->callee == "linear" &&
         l->intArg("in") == in && l->intArg("out") == out && l->boolArg("bias", true);
}

/// Whether the encoder layer `layer` (at `path`) attends as Longformer
/// (kind dilated, convention hf; its window into c.attentionWindow) rather
/// than densely (BERT, ELECTRA); nullopt with `error` for anything else.
std::optional<bool> longformerAttention(const LayerInstance &layer, const std::string &path,
                                        HfConfig &c, std::string &error) {
  std::string kind = layer.enumArg("kind", "dense");
  if (kind == "dense")
    return false;
  const CValue *k = layer.arg("kind");
  auto kwarg = [&](llvm::StringRef name) -> const CValue * {
    for (auto &kv : k->kwargs)
      if (kv.first == name)
        return &kv.second;
    return nullptr;
  };
  const CValue *convention = kind == "dilated" ? kwarg("convention") : nullptr;
  const CValue *window = kind == "dilated" ? kwarg("window") : nullptr;
  const CValue *dilation = kind == "dilated" ? kwarg("dilation") : nullptr;
  if (!convention || convention->name != "hf") {
    error = "layer '" + path + "' has kind: " + kind +
            " attention; BERT and ELECTRA attend densely (kind: dense), Longformer with "
            "dilated(window: w, convention: hf)";
    return std::nullopt;
  }
  const int64_t w = window ? window->i : 64;
  if ((dilation && dilation->i != 1) || w < 2 || w % 2 != 0) {
    error = "layer '" + path + "' is Longformer attention with window " + std::to_string(w) +
            (dilation ? " and dilation " + std::to_string(dilation->i) : "") +
            "; Hugging Face's Longformer needs an even window and dilation 1";
    return std::nullopt;
  }
  c.attentionWindow = w;
  return true;
}

/// The architecture to write: --architecture, or from the head layers
/// import-hf names (and Longformer's attention); null with `error`.
const HfArchitecture *chooseArchitecture(const frontend::ModelInfo &m, bool longformer,
                                         std::string &error) {
  const LayerInstance *classifier = m.layer("classifier");
  std::string arch = exportArchitecture;
  if (arch.empty() && longformer)
    arch = "LongformerModel";
  if (arch.empty()) {
    if (classifier)
      arch = classifier->kind == LayerInstance::Block ? "ElectraForSequenceClassification"
                                                      : "BertForSequenceClassification";
    else if (m.layer("discriminator_predictions"))
      arch = "ElectraForPreTraining";
    else if (m.layer("pooler"))
      arch = "BertModel";
    else
      arch = "ElectraModel";
  }
  for (llvm::StringRef type : {"bert", "electra", "longformer"}) {
    std::string ignored;
    if (const HfArchitecture *a = findArchitecture(type, arch, ignored))
      return a;
  }
  error = "--architecture '" + arch +
          "' is not one nncc export-hf writes (BertModel, BertForSequenceClassification, "
          "ElectraModel, ElectraForPreTraining, ElectraForSequenceClassification, "
          "LongformerModel, ReformerModel)";
  return nullptr;
}

/// The head's layers of `c`'s architecture (their weights' shapes are
/// checked when they are read), and the classifier's labels.
bool checkHead(const frontend::ModelInfo &m, HfConfig &c, std::string &error) {
  auto need = [&](llvm::StringRef name) {
    if (m.layer(name))
      return true;
    error = c.spec->architecture + " needs a layer '" + name.str() + "' (as nncc import-hf writes it)";
    return false;
  };
  if (c.head == HfHead::SequenceClassification) {
    const LayerInstance *classifier = m.layer("classifier");
    if (!need("classifier") || (c.spec->family == HfFamily::Bert && !need("pooler")))
      return false;
    const LayerInstance *out = c.spec->family == HfFamily::Electra
                                   ? classifier->child("out_proj")
                                   : classifier;
    if (!out || out->callee != "linear") {
      error = "layer 'classifier' is not " +
              std::string(c.spec->family == HfFamily::Electra
                              ? "a block with linear layers dense and out_proj"
                              : "a linear layer");
      return false;
    }
    c.numLabels = out->intArg("out");
    c.problemType = "single_label_classification";
    for (const frontend::InputInfo &in : m.inputs)
      if (in.name == "labels" && in.dtype.front() == 'f')
        c.problemType = c.numLabels == 1 ? "regression" : "multi_label_classification";
  }
  return !(c.head == HfHead::Pooler && !need("pooler")) &&
         !(c.head == HfHead::PreTraining && !need("discriminator_predictions"));
}

/// The keyword `name` of the constructor value `kind` (null when absent).
const CValue *kwargOf(const CValue *kind, llvm::StringRef name) {
  if (!kind)
    return nullptr;
  for (auto &kv : kind->kwargs)
    if (kv.first == name)
      return &kv.second;
  return nullptr;
}

/// Whether `m` is laid out as import-hf writes a ReformerModel.
bool isReformer(const frontend::ModelInfo &m) {
  const LayerInstance *first = m.layer("layer_0");
  return first && first->callee == "reversible" && m.layer("final_norm") &&
         m.layer("embeddings") && m.layer("embeddings")->kind == LayerInstance::Block;
}

/// One reversible layer of a Reformer: its attention (F's self_attention)
/// and feed-forward (G's ff mlp) into `c`, checked against the layers before.
bool readReformerLayer(const LayerInstance &rev, HfConfig &c, std::string &error) {
  const LayerInstance *f = rev.child("f"), *g = rev.child("g");
  const LayerInstance *att = f ? f->child("self_attention") : nullptr;
  const LayerInstance *ff = g ? g->child("ff") : nullptr;
  if (!att || att->callee != "attention" || !ff || ff->callee != "mlp" ||
      ff->intArg("layers", 2) != 2) {
    error = "layer '" + rev.path + "' is not ReformerModel's (reversible(F, G) with F's "
            "self_attention = attention(...) and G's ff = mlp(d, f, d, layers: 2), as nncc "
            "import-hf writes it)";
    return false;
  }
  const std::string kind = att->enumArg("kind", "dense");
  if (kind != "local" && kind != "lsh") {
    error = "layer '" + att->path + "' has kind: " + kind +
            " attention; ReformerModel's layers attend with kind: local or lsh";
    return false;
  }
  const CValue *k = att->arg("kind");
  auto intOf = [&](llvm::StringRef name, int64_t dflt) {
    const CValue *v = kwargOf(k, name);
    return v ? v->i : dflt;
  };
  const bool first = c.attnLayers.empty();
  auto same = [&](llvm::StringRef what, auto &field, auto value) {
    if (!first && field != value) {
      error = "layer '" + rev.path + "' differs from layer_0 in " + what.str() +
              "; a Hugging Face ReformerConfig has one for every layer";
      return false;
    }
    field = value;
    return true;
  };
  const int64_t heads = att->intArg("heads", 4);
  const int64_t width = att->arg("head_dim") ? att->intArg("head_dim") : c.hidden / heads;
  if (!same("num_attention_heads", c.heads, heads) ||
      !same("attention_head_size", c.headSize, width) ||
      !same("is_decoder (causal)", c.causal, att->boolArg("causal", false)) ||
      !same("feed_forward_size", c.ff, ff->intArg("hidden")) ||
      !same("hidden_act", c.activation, ff->enumArg("activation", "relu")) ||
      !same("hidden_dropout_prob", c.hiddenDropout, ff->floatArg("dropout", 0.0)))
    return false;
  if (kind == "local") {
    if (c.localSeen && (c.localChunk != intOf("chunk", 64) || c.localBefore != intOf("before", 1) ||
                        c.localAfter != intOf("after", 0))) {
      error = "layer '" + att->path + "' chunks differently from the first local layer; a "
              "ReformerConfig has one local_attn_chunk_length and look-back";
      return false;
    }
    c.localSeen = true;
    c.localChunk = intOf("chunk", 64);
    c.localBefore = intOf("before", 1);
    c.localAfter = intOf("after", 0);
    c.localDropout = att->floatArg("dropout", 0.0);
  } else {
    const CValue *conv = kwargOf(k, "convention");
    if (conv && conv->name != "hf") {
      error = "layer '" + att->path + "' is LSH attention in convention " + conv->name +
              "; Hugging Face's LSHSelfAttention is convention hf";
      return false;
    }
    if (c.lshSeen && (c.lshChunk != intOf("chunk", 64) || c.hashes != intOf("hashes", 4))) {
      error = "layer '" + att->path + "' hashes or chunks differently from the first LSH "
              "layer; a ReformerConfig has one num_hashes and lsh_attn_chunk_length";
      return false;
    }
    c.lshSeen = true;
    c.lshChunk = intOf("chunk", 64);
    c.hashes = intOf("hashes", 4);
    c.lshDropout = att->floatArg("dropout", 0.0);
  }
  c.attnLayers.push_back(kind);
  return true;
}

/// The ReformerConfig of a model in import-hf's Reformer layout.
std::optional<HfConfig> reformerConfigFromModel(const frontend::ModelInfo &m, std::string &error) {
  HfConfig c;
  std::string ignored;
  c.spec = findArchitecture("reformer", "ReformerModel", ignored);
  c.architecture = c.spec->architecture;
  c.modelType = c.spec->modelType;
  c.head = HfHead::None;
  const LayerInstance *emb = m.layer("embeddings");
  const LayerInstance *words = emb->child("word_embeddings");
  const LayerInstance *pos = emb->child("position_embeddings");
  if (!words || words->callee != "embedding" || !pos ||
      (pos->callee != "axial_position" && pos->callee != "learned_position")) {
    error = "layer 'embeddings' is not ReformerModel's (word_embeddings = embedding(V, D) and "
            "position_embeddings = axial_position(...) or learned_position(...))";
    return std::nullopt;
  }
  c.vocab = words->intArg("num");
  c.hidden = words->intArg("dim");
  c.axialPositions = pos->callee == "axial_position";
  if (c.axialPositions) {
    for (int i = 0; i < 2; ++i) {
      c.axialShape[i] = pos->arg("shape")->elems[i].i;
      c.axialDims[i] = pos->arg("dims")->elems[i].i;
    }
    c.maxPositions = c.axialShape[0] * c.axialShape[1];
  } else {
    c.maxPositions = pos->intArg("max_len");
  }
  for (int64_t i = 0;; ++i) {
    const LayerInstance *rev = m.layer("layer_" + std::to_string(i));
    if (!rev)
      break;
    if (!readReformerLayer(*rev, c, error))
      return std::nullopt;
  }
  c.layers = int64_t(c.attnLayers.size());
  const LayerInstance *norm = m.layer("final_norm");
  if (norm->callee != "layer_norm" || norm->intArg("dim") != 2 * c.hidden) {
    error = "layer 'final_norm' is not layer_norm(2 * " + std::to_string(c.hidden) +
            ") (ReformerModel's encoder.layer_norm over both halves)";
    return std::nullopt;
  }
  c.eps = norm->floatArg("eps", 1e-5);
  // num_buckets: the rotations' last dimension when it is a constant.
  for (const frontend::InputInfo &in : m.inputs)
    if (in.name == "lsh_rotations" && in.shape.size() == 4 && !in.shape[3].symbolic)
      c.buckets = 2 * in.shape[3].size;
  return c;
}

/// A JSON number that reads back as a float: ReformerConfig checks its
/// float fields' types, and llvm::json writes 0.0 as 0.
std::string jsonFloat(double v) {
  std::string s = llvm::formatv("{0}", llvm::json::Value(v)).str();
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

/// ReformerModel's config.json (hash_seed null: transformers then draws new
/// rotations in every forward; give from_pretrained hash_seed= to fix them).
std::string reformerConfigJSON(const HfConfig &c, llvm::StringRef dtype) {
  std::vector<std::pair<std::string, std::string>> fields;
  auto integer = [&](const char *k, int64_t v) { fields.push_back({k, std::to_string(v)}); };
  auto real = [&](const char *k, double v) { fields.push_back({k, jsonFloat(v)}); };
  auto text = [&](const char *k, llvm::StringRef v) {
    fields.push_back({k, llvm::formatv("{0}", llvm::json::Value(v.str())).str()});
  };
  auto pair = [&](const char *k, const int64_t v[2]) {
    fields.push_back({k, "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]"});
  };
  std::string layers;
  for (const std::string &k : c.attnLayers)
    layers += (layers.empty() ? "\"" : ", \"") + k + "\"";
  fields.push_back({"architectures", "[\"" + c.spec->architecture + "\"]"});
  text("model_type", c.modelType);
  integer("vocab_size", c.vocab);
  integer("hidden_size", c.hidden);
  integer("num_attention_heads", c.heads);
  integer("attention_head_size", c.headSize);
  integer("num_hidden_layers", c.layers);
  fields.push_back({"attn_layers", "[" + layers + "]"});
  integer("feed_forward_size", c.ff);
  text("hidden_act", c.activation);
  real("hidden_dropout_prob", c.hiddenDropout);
  real("local_attention_probs_dropout_prob", c.localDropout);
  real("lsh_attention_probs_dropout_prob", c.lshDropout);
  integer("local_attn_chunk_length", c.localChunk);
  integer("local_num_chunks_before", c.localBefore);
  integer("local_num_chunks_after", c.localAfter);
  integer("lsh_attn_chunk_length", c.lshChunk);
  integer("lsh_num_chunks_before", 1);
  integer("lsh_num_chunks_after", 0);
  integer("num_hashes", c.hashes);
  fields.push_back({"num_buckets", c.buckets ? std::to_string(c.buckets) : "null"});
  fields.push_back({"hash_seed", "null"});
  fields.push_back({"is_decoder", c.causal ? "true" : "false"});
  fields.push_back({"axial_pos_embds", c.axialPositions ? "true" : "false"});
  pair("axial_pos_shape", c.axialShape);
  pair("axial_pos_embds_dim", c.axialDims);
  integer("max_position_embeddings", c.maxPositions);
  real("layer_norm_eps", c.eps);
  integer("pad_token_id", 0);
  text("torch_dtype", dtype);
  std::string json = "{\n";
  for (size_t i = 0; i < fields.size(); ++i)
    json += "  \"" + fields[i].first + "\": " + fields[i].second +
            (i + 1 < fields.size() ? ",\n" : "\n");
  return json + "}\n";
}

/// The Hugging Face config of a model in import-hf's layout (or a seed
/// model's embeddings and encoder).
std::optional<HfConfig> configFromModel(const frontend::ModelInfo &m, std::string &error) {
  if (exportArchitecture == "ReformerModel" || (exportArchitecture.empty() && isReformer(m))) {
    if (!isReformer(m)) {
      error = "--architecture ReformerModel needs import-hf's Reformer layout (embeddings, "
              "layer_0 ... = reversible(...), final_norm)";
      return std::nullopt;
    }
    return reformerConfigFromModel(m, error);
  }
  const LayerInstance *emb = findLayer(
      m, "bert_embeddings", "--embeddings", exportEmbeddings,
      [](const LayerInstance &l) { return l.kind == LayerInstance::Library &&
                                          l.callee == "bert_embeddings"; },
      error);
  if (!emb)
    return std::nullopt;
  const LayerInstance *enc = findLayer(
      m, "`repeat N encoder_layer`", "--encoder", exportEncoder,
      [](const LayerInstance &l) {
        return l.kind == LayerInstance::Repeat && !l.children.empty() &&
               l.children[0].second->callee == "encoder_layer";
      },
      error);
  if (!enc)
    return std::nullopt;
  const LayerInstance &layer = *enc->children[0].second;
  HfConfig c;
  c.embeddingsPath = emb->path;
  c.encoderPath = enc->path;
  c.vocab = emb->intArg("vocab");
  c.embedding = emb->intArg("dim");
  c.maxPositions = emb->intArg("max_len", 512);
  c.typeVocab = emb->intArg("type_vocab", 2);
  c.padTokenId = emb->intArg("padding_idx", -1);
  c.hidden = layer.intArg("dim");
  c.heads = layer.intArg("heads", 4);
  c.ff = layer.intArg("ff", 1024);
  c.layers = int64_t(enc->children.size());
  c.activation = layer.enumArg("activation", "relu");
  c.eps = layer.floatArg("eps", 1e-5);
  c.hiddenDropout = c.attentionDropout = c.classifierDropout = layer.floatArg("dropout", 0.1);
  if (std::string pos = emb->enumArg("position", "learned"); pos != "learned") {
    error = "layer '" + emb->path + "' has position: " + pos +
            "; Hugging Face's BERT and ELECTRA learn absolute positions (position: learned)";
    return std::nullopt;
  }
  // Dense attention: BERT or ELECTRA; dilated(convention: hf): Longformer.
  std::optional<bool> longformer = longformerAttention(layer, enc->path, c, error);
  if (!longformer)
    return std::nullopt;
  if (double e = emb->floatArg("eps", 1e-12); e != c.eps) {
    error = "the layer norms of '" + emb->path + "' (eps " + llvm::formatv("{0}", e).str() + ") and '" +
            enc->path + "' (eps " + llvm::formatv("{0}", c.eps).str() +
            ") differ; a Hugging Face config has one layer_norm_eps";
    return std::nullopt;
  }

  c.spec = chooseArchitecture(m, *longformer, error);
  if (!c.spec)
    return std::nullopt;
  c.architecture = c.spec->architecture;
  c.modelType = c.spec->modelType;
  c.head = c.spec->head;
  if ((c.spec->family == HfFamily::Longformer) != *longformer) {
    error = *longformer ? "the encoder '" + enc->path +
                              "' is Longformer's (dilated, convention hf); --architecture " +
                              c.architecture + " attends densely (LongformerModel)"
                        : "--architecture " + c.architecture + " needs Longformer attention in '" +
                              enc->path + "' (kind: dilated(window: w, convention: hf))";
    return std::nullopt;
  }
  if (*longformer && c.padTokenId < 0) {
    error = "layer '" + emb->path + "' has no padding_idx; Longformer's position ids count "
            "the tokens that are not pad_token_id (as import-hf writes: padding_idx: PAD)";
    return std::nullopt;
  }
  // LongformerModel(add_pooling_layer=False): no pooler.
  if (*longformer && !m.layer("pooler"))
    c.head = HfHead::None;
  if (c.spec->family != HfFamily::Electra && c.embedding != c.hidden) {
    error = "the embeddings of '" + emb->path + "' are " + std::to_string(c.embedding) +
            " wide and the encoder " + std::to_string(c.hidden) + "; " +
            (*longformer ? "Longformer" : "BERT") +
            " has one width (ELECTRA projects: --architecture ElectraModel)";
    return std::nullopt;
  }
  if (c.spec->family == HfFamily::Electra && c.embedding != c.hidden &&
      !isLinear(m.layer("embeddings_project"), c.embedding, c.hidden)) {
    error = "the embeddings are " + std::to_string(c.embedding) + " wide and the encoder " +
            std::to_string(c.hidden) + ": ELECTRA needs embeddings_project = linear(" +
            std::to_string(c.embedding) + ", " + std::to_string(c.hidden) + ")";
    return std::nullopt;
  }
  if (!checkHead(m, c, error))
    return std::nullopt;
  return c;
}

llvm::json::Value configJSON(const HfConfig &c, llvm::StringRef dtype) {
  llvm::json::Object o{
      {"architectures", llvm::json::Array{c.spec->architecture}},
      {"model_type", c.modelType},
      {"vocab_size", c.vocab},
      {"hidden_size", c.hidden},
      {"num_hidden_layers", c.layers},
      {"num_attention_heads", c.heads},
      {"intermediate_size", c.ff},
      {"hidden_act", c.activation},
      {"hidden_dropout_prob", c.hiddenDropout},
      {"attention_probs_dropout_prob", c.attentionDropout},
      {"max_position_embeddings", c.maxPositions},
      {"type_vocab_size", c.typeVocab},
      {"layer_norm_eps", c.eps},
      {"initializer_range", 0.02},
      // null: no padding row (transformers then builds nn.Embedding without padding_idx)
      {"pad_token_id", c.padTokenId >= 0 ? llvm::json::Value(c.padTokenId) : llvm::json::Value(nullptr)},
      {"position_embedding_type", "absolute"},
      {"torch_dtype", dtype},
  };
  if (c.spec->family == HfFamily::Electra)
    o["embedding_size"] = c.embedding;
  if (c.spec->family == HfFamily::Longformer)
    o["attention_window"] = llvm::json::Array(std::vector<int64_t>(c.layers, c.attentionWindow));
  if (c.head == HfHead::SequenceClassification) {
    llvm::json::Object id2label, label2id;
    for (int64_t i = 0; i < c.numLabels; ++i) {
      std::string label = "LABEL_" + std::to_string(i);
      id2label[std::to_string(i)] = label;
      label2id[label] = i;
    }
    o["id2label"] = std::move(id2label);
    o["label2id"] = std::move(label2id);
    o["problem_type"] = c.problemType;
  }
  return llvm::json::Value(std::move(o));
}
/// An exported tensor: f32 values, or f16/bf16 bits for --dtype f16|bf16.
struct ExportTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<uint16_t> f16;
};

/// The tensors of `file` that `config`'s weight links name, each split into
/// its Hugging Face tensors (rows of dim 0) in --dtype; `used` receives the
/// nncc names read. Returns the exit status.
int splitWeights(nncc_safetensors *file, const HfConfig &config,
                 std::vector<ExportTensor> &tensors, std::set<std::string> &used) {
  const std::string prefix = config.head == HfHead::None || config.head == HfHead::Pooler
                                 ? ""
                                 : config.spec->prefix + ".";
  const bool half = exportDtype != ExportDtype::F32;
  nncc_error err{};
  for (const HfWeightLink &link : weightLinks(config, prefix)) {
    nncc_tensor_view v{};
    if (nncc_safetensors_find(file, link.name.c_str(), &v, &err) != NNCC_OK)
      return fail("--weights: " + llvm::Twine(err.message) + " (the parameter '" + link.name +
                  "' of " + config.spec->architecture + ")");
    if (llvm::ArrayRef<int64_t>(v.shape, v.rank) != llvm::ArrayRef<int64_t>(link.shape))
      return fail("--weights: tensor '" + link.name + "' is " +
                  shapeString({v.shape, size_t(v.rank)}) + "; the model declares " +
                  shapeString(link.shape));
    if (!isFloatWeight(v.dtype))
      return fail("--weights: tensor '" + link.name + "' is " + nncc_dtype_name(v.dtype) +
                  "; expected F32, F64, F16 or BF16");
    used.insert(link.name);
    const size_t per = size_t(v.numel / link.sources.size());
    for (size_t s = 0; s < link.sources.size(); ++s) {
      ExportTensor t{link.sources[s], link.shape, {}, {}};
      t.shape[0] /= int64_t(link.sources.size());
      for (size_t i = s * per; i < (s + 1) * per; ++i) {
        float f = elementAsF32(v, i);
        if (!half)
          t.f32.push_back(f);
        else
          t.f16.push_back(exportDtype == ExportDtype::F16 ? nncc_f32_to_f16(f)
                                                           : nncc_f32_to_bf16(f));
      }
      tensors.push_back(std::move(t));
    }
  }
  return 0;
}
} // namespace

int runExportHf() {
  mlir::MLIRContext context;
  driver::prepareContext(context);
  llvm::SourceMgr sourceMgr;
  std::optional<unsigned> bufId = driver::readSourceFile(sourceMgr, exportModel);
  if (!bufId)
    return 1;
  driver::CheckedModel checked = driver::checkModel(context, sourceMgr, *bufId);
  if (!checked.model)
    return 1;
  std::string error;
  std::optional<HfConfig> config = configFromModel(*checked.model, error);
  if (!config)
    return fail(error);

  if (int rc = checkInputPath("--weights", exportWeights))
    return rc;
  nncc_safetensors *file = nullptr;
  nncc_error err{};
  if (nncc_safetensors_open(exportWeights.c_str(), &file, &err) != NNCC_OK)
    return fail(err.message);
  std::unique_ptr<nncc_safetensors, void (*)(nncc_safetensors *)> fileOwner(
      file, nncc_safetensors_close);

  // Each nncc parameter split into its Hugging Face tensors (rows of dim 0).
  const bool half = exportDtype != ExportDtype::F32;
  std::vector<ExportTensor> tensors;
  std::set<std::string> used;
  if (int rc = splitWeights(file, *config, tensors, used))
    return rc;

  std::string out = exportOut;
  if (std::error_code ec = llvm::sys::fs::create_directories(out))
    return fail("-o '" + out + "': cannot create the folder: " + ec.message());
  const char *dtypeName[] = {"float32", "float16", "bfloat16"};
  std::string json;
  llvm::raw_string_ostream os(json);
  if (config->spec->family == HfFamily::Reformer)
    os << reformerConfigJSON(*config, dtypeName[int(exportDtype.getValue())]);
  else
    os << llvm::formatv("{0:2}", configJSON(*config, dtypeName[int(exportDtype.getValue())]))
       << "\n";
  if (int rc = replaceFile(out + "/config.json", json, "-o"))
    return rc;
  const nncc_dtype dtype = std::array<nncc_dtype, 3>{
      NNCC_DTYPE_F32, NNCC_DTYPE_F16, NNCC_DTYPE_BF16}[int(exportDtype.getValue())];
  std::vector<OutTensor> written;
  for (const ExportTensor &t : tensors)
    written.push_back({t.name, t.shape, dtype,
                       half ? static_cast<const void *>(t.f16.data()) : t.f32.data(),
                       half ? t.f16.size() * 2 : t.f32.size() * 4});
  if (int rc = writeSafetensors(out + "/model.safetensors", written, {}))
    return rc;
  // The tokenizer beside the model (an imported folder keeps one).
  if (int rc = copyTokenizerFiles(llvm::sys::path::parent_path(exportModel).str().empty()
                                      ? std::string(".")
                                      : llvm::sys::path::parent_path(exportModel).str(),
                                  out))
    return rc;

  std::vector<std::string> left;
  for (size_t i = 0, n = nncc_safetensors_count(file); i < n; ++i) {
    nncc_tensor_view v{};
    if (nncc_safetensors_tensor_at(file, i, &v, nullptr) == NNCC_OK && !used.count(v.name))
      left.push_back(v.name);
  }
  if (!left.empty())
    llvm::errs() << "nncc: note: " << left.size() << " tensor(s) of --weights are not part of "
                 << config->spec->architecture << " and were left out: '"
                 << printable(left[0]) << "'" << (left.size() > 1 ? ", ..." : "") << "\n";
  llvm::outs() << "exported " << config->spec->architecture << " (" << config->layers
               << " layers, hidden " << config->hidden << ", " << tensors.size()
               << " tensors) to " << printable(out + "/config.json") << " and "
               << printable(out + "/model.safetensors") << "\n";
  return 0;
}

} // namespace nncc::tool
