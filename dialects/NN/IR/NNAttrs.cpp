//===- NNAttrs.cpp - nn dialect attributes and enums ------------*- C++ -*-===//

#include "dialects/NN/IR/NNAttrs.h"

#include "dialects/NN/IR/NNDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace nncc::nn;

#include "dialects/NN/IR/NNEnums.cpp.inc"
#include "dialects/NN/IR/NNInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Parameter helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
nncc::nn::parseBracketedI64List(AsmParser &parser) {
  SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(values.emplace_back());
      }))
    return failure();
  return values;
}

void nncc::nn::printBracketedI64List(AsmPrinter &printer,
                                     ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

size_t InitAttr::getNumValues(InitKind kind) {
  switch (kind) {
  case InitKind::uniform:
  case InitKind::normal:
    return 2;
  case InitKind::constant:
    return 1;
  case InitKind::zeros:
  case InitKind::ones:
    return 0;
  }
  llvm_unreachable("unknown InitKind");
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, DenseF64ArrayAttr values) {
  if (!values)
    return emitError() << "init values must not be null";
  ArrayRef<double> numbers = values.asArrayRef();
  size_t expected = getNumValues(kind);
  if (numbers.size() != expected)
    return emitError() << "'" << stringifyInitKind(kind) << "' init takes "
                       << expected << " value(s), got " << numbers.size();
  if (kind == InitKind::uniform && !(numbers[0] <= numbers[1]))
    return emitError() << "uniform init needs lo <= hi, got " << numbers[0]
                       << " > " << numbers[1];
  if (kind == InitKind::normal && !(numbers[1] >= 0))
    return emitError() << "normal init needs std >= 0, got " << numbers[1];
  return success();
}

/// init ::= `<` kind (`,` float)* `>`
Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc kindLoc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(kindLoc, "unknown init kind '")
        << keyword << "', expected uniform, normal, constant, zeros or ones";
    return {};
  }
  SmallVector<double> values;
  while (succeeded(parser.parseOptionalComma()))
    if (parser.parseFloat(values.emplace_back()))
      return {};
  if (parser.parseGreater())
    return {};
  MLIRContext *ctx = parser.getContext();
  return getChecked([&] { return parser.emitError(kindLoc); }, ctx, *kind,
                    DenseF64ArrayAttr::get(ctx, values));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  for (double value : getValues().asArrayRef()) {
    printer << ", ";
    printer.printFloat(llvm::APFloat(value));
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// Attention kinds
//===----------------------------------------------------------------------===//

int64_t DenseAttentionAttr::getNumInputProjections() const { return 3; }
int64_t DilatedAttentionAttr::getNumInputProjections() const { return isHf() ? 6 : 3; }
int64_t LshAttentionAttr::getNumInputProjections() const { return 2; }
int64_t LocalAttentionAttr::getNumInputProjections() const { return 3; }

LogicalResult LocalAttentionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                         int64_t chunk, int64_t before, int64_t after,
                                         int64_t padToMultiple, int64_t padAbove) {
  if (padToMultiple < 0 || padAbove < 0)
    return emitError() << "local attention pad_to_multiple and pad_above must be >= 0, got "
                       << padToMultiple << " and " << padAbove;
  if (chunk < 1)
    return emitError() << "local attention chunk must be >= 1, got " << chunk;
  if (before < 0 || after < 0)
    return emitError() << "local attention before and after must be >= 0, got " << before
                       << " and " << after;
  return success();
}

LogicalResult
DilatedAttentionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             int64_t window, int64_t dilation,
                             ArrayRef<int64_t> global, StringRef convention) {
  if (convention != "hf" && convention != "nncc")
    return emitError() << "dilated attention convention must be \"hf\" or \"nncc\", got \""
                       << convention << "\"";
  if (convention == "hf" && !global.empty())
    return emitError() << "dilated attention in convention \"hf\" takes its global tokens "
                          "from the attention's global_mask, not a global list";
  if (window < 1)
    return emitError() << "dilated attention window must be >= 1, got "
                       << window;
  if (dilation < 1)
    return emitError() << "dilated attention dilation must be >= 1, got "
                       << dilation;
  for (int64_t position : global)
    if (position < 0)
      return emitError()
             << "dilated attention global positions must be >= 0, got "
             << position;
  return success();
}

LogicalResult
LshAttentionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t hashes, int64_t chunk, StringRef convention,
                         int64_t padToMultiple, int64_t padAbove) {
  if (padToMultiple < 0 || padAbove < 0)
    return emitError() << "lsh attention pad_to_multiple and pad_above must be >= 0, got "
                       << padToMultiple << " and " << padAbove;
  if (padToMultiple > 0 && convention != "hf")
    return emitError() << "lsh attention pad_to_multiple is ReformerModel's padding: "
                          "convention \"hf\" only";
  if (convention != "hf" && convention != "nncc")
    return emitError() << "lsh attention convention must be \"hf\" or \"nncc\", got \""
                       << convention << "\"";
  if (hashes < 1)
    return emitError() << "lsh attention hashes must be >= 1, got " << hashes;
  if (chunk < 1)
    return emitError() << "lsh attention chunk must be >= 1, got " << chunk;
  return success();
}


//===----------------------------------------------------------------------===//
// Training configuration
//===----------------------------------------------------------------------===//

namespace {
APFloat f64(double v) { return APFloat(v); }

/// Parses `key = value` pairs up to `>`, after the leading `<` (and the kind,
/// if any) has been consumed; `first` says whether a comma comes before the
/// first pair. `onKey` parses the value of a key and returns failure (after
/// reporting) on an unknown key or a bad value. Reports duplicate keys.
ParseResult parseKeyValues(AsmParser &parser, bool first,
                           function_ref<ParseResult(StringRef, SMLoc)> onKey) {
  llvm::StringSet<> seen;
  if (first && succeeded(parser.parseOptionalGreater()))
    return success();
  while (true) {
    if (!first && succeeded(parser.parseOptionalGreater()))
      return success();
    if (!first && parser.parseComma())
      return failure();
    first = false;
    SMLoc loc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return failure();
    if (!seen.insert(key).second)
      return parser.emitError(loc, "key '") << key << "' given more than once";
    if (onKey(key, loc))
      return failure();
  }
}

/// A number (float or integer literal) for `key`.
ParseResult parseNumber(AsmParser &parser, StringRef key, double &out) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  if (auto f = dyn_cast<FloatAttr>(attr))
    out = f.getValueAsDouble();
  else if (auto i = dyn_cast<IntegerAttr>(attr); i && !i.getType().isInteger(1))
    out = double(i.getInt());
  else
    return parser.emitError(loc, "'") << key << "' expects a number, got "
                                      << attr;
  return success();
}

ParseResult parseInt(AsmParser &parser, StringRef key, int64_t &out) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  auto i = dyn_cast<IntegerAttr>(attr);
  if (!i || i.getType().isInteger(1))
    return parser.emitError(loc, "'") << key << "' expects an integer, got "
                                      << attr;
  out = i.getInt();
  return success();
}

ParseResult parseBool(AsmParser &parser, StringRef key, bool &out) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  auto b = dyn_cast<BoolAttr>(attr);
  if (!b)
    return parser.emitError(loc, "'") << key << "' expects true or false, got "
                                      << attr;
  out = b.getValue();
  return success();
}

void printNumber(AsmPrinter &printer, StringRef key, const APFloat &v) {
  printer << ", " << key << " = ";
  printer.printFloat(v);
}

bool isAdam(OptimizerKind kind) { return kind != OptimizerKind::sgd; }
} // namespace

OptimizerAttr OptimizerAttr::getDefault(MLIRContext *ctx, OptimizerKind kind) {
  return get(ctx, kind, f64(1e-3), f64(0.9), f64(0.999), f64(1e-8),
             f64(kind == OptimizerKind::adamw ? 0.01 : 0.0), f64(0.0),
             /*nesterov=*/false);
}

OptimizerAttr OptimizerAttr::withFloat(StringRef key, double value) const {
  APFloat lr = getLr(), b1 = getBeta1(), b2 = getBeta2(), eps = getEps(),
          wd = getWeightDecay(), mom = getMomentum();
  if (key == "lr") lr = f64(value);
  else if (key == "beta1") b1 = f64(value);
  else if (key == "beta2") b2 = f64(value);
  else if (key == "eps") eps = f64(value);
  else if (key == "weight_decay") wd = f64(value);
  else if (key == "momentum") mom = f64(value);
  else return {};
  return get(getContext(), getKind(), lr, b1, b2, eps, wd, mom, getNesterov());
}

OptimizerAttr OptimizerAttr::withNesterov(bool nesterov) const {
  return get(getContext(), getKind(), getLr(), getBeta1(), getBeta2(), getEps(),
             getWeightDecay(), getMomentum(), nesterov);
}

LogicalResult
OptimizerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      OptimizerKind kind, APFloat lr, APFloat beta1,
                      APFloat beta2, APFloat eps, APFloat weightDecay,
                      APFloat momentum, bool nesterov) {
  StringRef name = stringifyOptimizerKind(kind);
  if (!(lr.convertToDouble() > 0.0))
    return emitError() << name << ": lr must be > 0, got "
                       << lr.convertToDouble();
  for (const APFloat &b : {beta1, beta2})
    if (!(b.convertToDouble() >= 0.0 && b.convertToDouble() < 1.0))
      return emitError() << name << ": betas must be in [0, 1), got "
                         << b.convertToDouble();
  if (!(eps.convertToDouble() > 0.0))
    return emitError() << name << ": eps must be > 0, got "
                       << eps.convertToDouble();
  if (!(weightDecay.convertToDouble() >= 0.0))
    return emitError() << name << ": weight_decay must be >= 0, got "
                       << weightDecay.convertToDouble();
  if (!(momentum.convertToDouble() >= 0.0))
    return emitError() << name << ": momentum must be >= 0, got "
                       << momentum.convertToDouble();
  return success();
}

/// optimizer ::= `<` kind (`,` key `=` value)* `>`
Attribute OptimizerAttr::parse(AsmParser &parser, Type) {
  SMLoc kindLoc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<OptimizerKind> kind = symbolizeOptimizerKind(keyword);
  if (!kind) {
    parser.emitError(kindLoc, "unknown optimizer '")
        << keyword << "' (expected adam, adamw or sgd)";
    return {};
  }
  MLIRContext *ctx = parser.getContext();
  OptimizerAttr attr = getDefault(ctx, *kind);
  bool hasLr = false;
  auto onKey = [&](StringRef key, SMLoc loc) -> ParseResult {
    if (key == "betas" && isAdam(*kind)) {
      SMLoc betasLoc = parser.getCurrentLocation();
      SmallVector<double, 2> betas;
      if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
            return parseNumber(parser, "betas", betas.emplace_back());
          }))
        return failure();
      if (betas.size() != 2)
        return parser.emitError(betasLoc, "'betas' expects two numbers, got ")
               << betas.size();
      attr = attr.withFloat("beta1", betas[0]).withFloat("beta2", betas[1]);
      return success();
    }
    if (key == "nesterov" && !isAdam(*kind)) {
      bool v = false;
      if (parseBool(parser, key, v))
        return failure();
      attr = attr.withNesterov(v);
      return success();
    }
    bool known = key == "lr" || key == "weight_decay" ||
                 (isAdam(*kind) ? key == "eps" : key == "momentum");
    if (!known)
      return parser.emitError(loc, "unknown key '")
             << key << "' for optimizer " << keyword
             << (isAdam(*kind) ? " (expected lr, betas, eps or weight_decay)"
                               : " (expected lr, momentum, weight_decay or "
                                 "nesterov)");
    double v;
    if (parseNumber(parser, key, v))
      return failure();
    hasLr |= key == "lr";
    attr = attr.withFloat(key, v);
    return success();
  };
  if (parseKeyValues(parser, /*first=*/false, onKey))
    return {};
  if (*kind == OptimizerKind::sgd && !hasLr) {
    parser.emitError(kindLoc, "optimizer sgd needs 'lr'");
    return {};
  }
  return getChecked([&] { return parser.emitError(kindLoc); }, ctx, *kind,
                    attr.getLr(), attr.getBeta1(), attr.getBeta2(),
                    attr.getEps(), attr.getWeightDecay(), attr.getMomentum(),
                    attr.getNesterov());
}

void OptimizerAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyOptimizerKind(getKind());
  printNumber(printer, "lr", getLr());
  if (isAdam(getKind())) {
    printer << ", betas = [";
    printer.printFloat(getBeta1());
    printer << ", ";
    printer.printFloat(getBeta2());
    printer << ']';
    printNumber(printer, "eps", getEps());
    printNumber(printer, "weight_decay", getWeightDecay());
  } else {
    printNumber(printer, "momentum", getMomentum());
    printNumber(printer, "weight_decay", getWeightDecay());
    printer << ", nesterov = " << (getNesterov() ? "true" : "false");
  }
  printer << '>';
}

ScheduleAttr ScheduleAttr::getDefault(MLIRContext *ctx, ScheduleKind kind) {
  return get(ctx, kind, /*warmup=*/-1, f64(0.0), /*total=*/0,
             f64(0.5), /*stepSize=*/1,
             f64(0.1));
}

ScheduleAttr ScheduleAttr::with(StringRef key, double value) const {
  int64_t warmup = getWarmup(), total = getTotal(), stepSize = getStepSize();
  APFloat fraction = getWarmupFraction(), cycles = getCycles(),
          gamma = getGamma();
  if (key == "warmup") warmup = int64_t(value);
  else if (key == "warmup_fraction") fraction = f64(value);
  else if (key == "total") total = int64_t(value);
  else if (key == "cycles") cycles = f64(value);
  else if (key == "step_size") stepSize = int64_t(value);
  else if (key == "gamma") gamma = f64(value);
  else return {};
  return get(getContext(), getKind(), warmup, fraction, total, cycles,
             stepSize, gamma);
}

namespace {
/// The keys each schedule kind takes, in printing order.
ArrayRef<StringRef> scheduleKeys(ScheduleKind kind) {
  static const StringRef warmupCosine[] = {"warmup", "warmup_fraction",
                                           "total", "cycles"};
  static const StringRef cosine[] = {"total"};
  static const StringRef linear[] = {"warmup", "total"};
  static const StringRef step[] = {"step_size", "gamma"};
  switch (kind) {
  case ScheduleKind::constant: return {};
  case ScheduleKind::warmup_cosine: return warmupCosine;
  case ScheduleKind::cosine: return cosine;
  case ScheduleKind::linear: return linear;
  case ScheduleKind::step: return step;
  }
  llvm_unreachable("unknown ScheduleKind");
}
} // namespace

LogicalResult
ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     ScheduleKind kind, int64_t warmup, APFloat warmupFraction,
                     int64_t total, APFloat cycles, int64_t stepSize,
                     APFloat gamma) {
  StringRef name = stringifyScheduleKind(kind);
  if (warmup < -1)
    return emitError() << name << ": warmup must be >= 0, got " << warmup;
  double f = warmupFraction.convertToDouble();
  if (!(f >= 0.0 && f < 1.0))
    return emitError() << name << ": warmup_fraction must be in [0, 1), got "
                       << f;
  if (total < 0)
    return emitError() << name << ": total must be >= 1, got " << total;
  double c = cycles.convertToDouble();
  if (!(c >= 0.0 && c <= 1.0))
    return emitError() << name << ": cycles must be in [0, 1], got " << c;
  if (stepSize < 1)
    return emitError() << name << ": step_size must be >= 1, got " << stepSize;
  if (!(gamma.convertToDouble() > 0.0))
    return emitError() << name << ": gamma must be > 0, got "
                       << gamma.convertToDouble();
  return success();
}

/// schedule ::= `<` kind (`,` key `=` value)* `>`
Attribute ScheduleAttr::parse(AsmParser &parser, Type) {
  SMLoc kindLoc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<ScheduleKind> kind = symbolizeScheduleKind(keyword);
  if (!kind) {
    parser.emitError(kindLoc, "unknown schedule '")
        << keyword
        << "' (expected constant, warmup_cosine, cosine, linear or step)";
    return {};
  }
  MLIRContext *ctx = parser.getContext();
  ScheduleAttr attr = getDefault(ctx, *kind);
  ArrayRef<StringRef> keys = scheduleKeys(*kind);
  bool hasStepSize = false;
  auto onKey = [&](StringRef key, SMLoc loc) -> ParseResult {
    if (!llvm::is_contained(keys, key)) {
      auto diag = parser.emitError(loc, "unknown key '")
                  << key << "' for schedule " << keyword;
      if (keys.empty())
        diag << " (it takes none)";
      else
        diag << " (expected " << llvm::join(keys, ", ") << ")";
      return diag;
    }
    double v;
    if (key == "warmup" || key == "total" || key == "step_size") {
      int64_t i;
      if (parseInt(parser, key, i))
        return failure();
      if (key == "warmup" && i < 0)
        return parser.emitError(loc, "'warmup' must be >= 0, got ") << i;
      if (key == "total" && i < 1)
        return parser.emitError(loc, "'total' must be >= 1, got ") << i;
      v = double(i);
    } else if (parseNumber(parser, key, v)) {
      return failure();
    }
    hasStepSize |= key == "step_size";
    attr = attr.with(key, v);
    return success();
  };
  if (parseKeyValues(parser, /*first=*/false, onKey))
    return {};
  if (*kind == ScheduleKind::step && !hasStepSize) {
    parser.emitError(kindLoc, "schedule step needs 'step_size'");
    return {};
  }
  return getChecked([&] { return parser.emitError(kindLoc); }, ctx, *kind,
                    attr.getWarmup(), attr.getWarmupFraction(),
                    attr.getTotal(), attr.getCycles(), attr.getStepSize(),
                    attr.getGamma());
}

void ScheduleAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyScheduleKind(getKind());
  for (StringRef key : scheduleKeys(getKind())) {
    if (key == "warmup" && getWarmup() >= 0)
      printer << ", warmup = " << getWarmup();
    else if (key == "warmup_fraction" && !getWarmupFraction().isZero())
      printNumber(printer, key, getWarmupFraction());
    else if (key == "total" && getTotal() > 0)
      printer << ", total = " << getTotal();
    else if (key == "cycles")
      printNumber(printer, key, getCycles());
    else if (key == "step_size")
      printer << ", step_size = " << getStepSize();
    else if (key == "gamma")
      printNumber(printer, key, getGamma());
  }
  printer << '>';
}

TrainAttr TrainAttr::getDefault(MLIRContext *ctx) {
  return get(ctx, OptimizerAttr::getDefault(ctx, OptimizerKind::adam),
             ScheduleAttr::getDefault(ctx, ScheduleKind::constant), f64(0.0),
             f64(1.0), /*epochs=*/1, /*batch=*/32, /*seed=*/0);
}

LogicalResult TrainAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                OptimizerAttr optimizer, ScheduleAttr schedule,
                                APFloat clip, APFloat layerDecay,
                                int64_t epochs, int64_t batch, int64_t seed) {
  if (!optimizer || !schedule)
    return emitError() << "train: optimizer and schedule must not be null";
  if (!(clip.convertToDouble() >= 0.0))
    return emitError() << "train: clip must be > 0, got "
                       << clip.convertToDouble();
  double fd = layerDecay.convertToDouble();
  if (!(fd > 0.0 && fd <= 1.0))
    return emitError() << "train: layer_decay must be in (0, 1], got " << fd;
  if (epochs < 1)
    return emitError() << "train: epochs must be >= 1, got " << epochs;
  if (batch < 1)
    return emitError() << "train: batch must be >= 1, got " << batch;
  return success();
}

/// train ::= `<` (key `=` value (`,` key `=` value)*)? `>`
Attribute TrainAttr::parse(AsmParser &parser, Type) {
  SMLoc startLoc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  MLIRContext *ctx = parser.getContext();
  TrainAttr d = getDefault(ctx);
  OptimizerAttr optimizer = d.getOptimizer();
  ScheduleAttr schedule = d.getSchedule();
  double clip = d.getClipValue(), layerDecay = d.getLayerDecayValue();
  int64_t epochs = d.getEpochs(), batch = d.getBatch(), seed = d.getSeed();
  auto onKey = [&](StringRef key, SMLoc loc) -> ParseResult {
    if (key == "optimizer" || key == "schedule") {
      SMLoc valueLoc = parser.getCurrentLocation();
      Attribute attr;
      if (parser.parseAttribute(attr))
        return failure();
      if (key == "optimizer" && (optimizer = dyn_cast<OptimizerAttr>(attr)))
        return success();
      if (key == "schedule" && (schedule = dyn_cast<ScheduleAttr>(attr)))
        return success();
      return parser.emitError(valueLoc, "'")
             << key << "' expects an #nn." << key << "<...>, got " << attr;
    }
    if (key == "clip") {
      if (parseNumber(parser, key, clip))
        return failure();
      if (!(clip > 0.0))
        return parser.emitError(loc, "'clip' must be > 0, got ") << clip;
      return success();
    }
    if (key == "layer_decay")
      return parseNumber(parser, key, layerDecay);
    if (key == "epochs")
      return parseInt(parser, key, epochs);
    if (key == "batch")
      return parseInt(parser, key, batch);
    if (key == "seed")
      return parseInt(parser, key, seed);
    return parser.emitError(loc, "unknown key '")
           << key << "' in #nn.train (expected optimizer, schedule, clip, "
                     "layer_decay, epochs, batch or seed)";
  };
  if (parseKeyValues(parser, /*first=*/true, onKey))
    return {};
  return getChecked([&] { return parser.emitError(startLoc); }, ctx, optimizer,
                    schedule, f64(clip), f64(layerDecay), epochs, batch, seed);
}

void TrainAttr::print(AsmPrinter &printer) const {
  printer << "<optimizer = " << getOptimizer()
          << ", schedule = " << getSchedule();
  if (!getClip().isZero())
    printNumber(printer, "clip", getClip());
  printNumber(printer, "layer_decay", getLayerDecay());
  printer << ", epochs = " << getEpochs() << ", batch = " << getBatch()
          << ", seed = " << getSeed() << '>';
}

//===----------------------------------------------------------------------===//
// ParamGroupAttr
//===----------------------------------------------------------------------===//

int64_t ParamGroupAttr::getLrDepth(int64_t numLayers) const {
  switch (getLrGroup()) {
  case LrGroup::none:
    return 0;
  case LrGroup::layer:
    return numLayers - 1 - getLayer();
  case LrGroup::embedding:
    return numLayers + 1;
  }
  llvm_unreachable("unknown LrGroup");
}

LogicalResult
ParamGroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       bool decay, LrGroup lrGroup, int64_t layer) {
  if (lrGroup == LrGroup::layer && layer < 0)
    return emitError() << "param_group: layer must be >= 0, got " << layer;
  if (lrGroup != LrGroup::layer && layer != 0)
    return emitError() << "param_group: only a 'layer' group has an index";
  return success();
}

/// param_group ::= `<` (`decay` | `no_decay`)
///                     (`,` (`layer` integer | `embedding`))? `>`
Attribute ParamGroupAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef word;
  if (parser.parseLess() || parser.parseKeyword(&word))
    return {};
  if (word != "decay" && word != "no_decay") {
    parser.emitError(loc, "expected 'decay' or 'no_decay', got '")
        << word << "'";
    return {};
  }
  bool decay = word == "decay";
  LrGroup group = LrGroup::none;
  int64_t layer = 0;
  if (succeeded(parser.parseOptionalComma())) {
    SMLoc groupLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&word))
      return {};
    if (word == "layer") {
      group = LrGroup::layer;
      if (parser.parseInteger(layer))
        return {};
    } else if (word == "embedding") {
      group = LrGroup::embedding;
    } else {
      parser.emitError(groupLoc, "expected 'layer <index>' or 'embedding', "
                                 "got '")
          << word << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), decay, group, layer);
}

void ParamGroupAttr::print(AsmPrinter &printer) const {
  printer << '<' << (getDecay() ? "decay" : "no_decay");
  if (getLrGroup() == LrGroup::layer)
    printer << ", layer " << getLayer();
  else if (getLrGroup() == LrGroup::embedding)
    printer << ", embedding";
  printer << '>';
}

//===----------------------------------------------------------------------===//
// InputRoleAttr
//===----------------------------------------------------------------------===//

static bool roleHasLimit(InputRoleKind kind) {
  return kind == InputRoleKind::token_ids ||
         kind == InputRoleKind::class_targets ||
         kind == InputRoleKind::lengths;
}

LogicalResult
InputRoleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      InputRoleKind kind, int64_t size, StringAttr symbol) {
  if (size < 0)
    return emitError() << "role: limit must be > 0, got " << size;
  if (size > 0 && symbol)
    return emitError() << "role: limit is either a size or a symbol";
  if ((size > 0 || symbol) && !roleHasLimit(kind))
    return emitError() << "role: '" << stringifyInputRoleKind(kind)
                       << "' takes no limit";
  return success();
}

/// role ::= `<` kind (`,` `limit` `=` (integer | bare-id))? `>`
Attribute InputRoleAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef word;
  if (parser.parseLess() || parser.parseKeyword(&word))
    return {};
  std::optional<InputRoleKind> kind = symbolizeInputRoleKind(word);
  if (!kind) {
    parser.emitError(loc, "unknown input role '") << word << "'";
    return {};
  }
  int64_t size = 0;
  StringAttr symbol;
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("limit") || parser.parseEqual())
      return {};
    OptionalParseResult isInt = parser.parseOptionalInteger(size);
    if (isInt.has_value()) {
      if (failed(*isInt))
        return {};
      if (size <= 0) {
        parser.emitError(loc, "role: limit must be > 0, got ") << size;
        return {};
      }
    } else {
      StringRef name;
      if (parser.parseKeyword(&name))
        return {};
      symbol = StringAttr::get(parser.getContext(), name);
    }
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), *kind, size, symbol);
}

void InputRoleAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInputRoleKind(getKind());
  if (getSize() > 0)
    printer << ", limit = " << getSize();
  else if (getSymbol())
    printer << ", limit = " << getSymbol().getValue();
  printer << '>';
}

#define GET_ATTRDEF_CLASSES
#include "dialects/NN/IR/NNAttrs.cpp.inc"

void NNDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/NN/IR/NNAttrs.cpp.inc"
      >();
}
