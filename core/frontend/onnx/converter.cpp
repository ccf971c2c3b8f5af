//===- frontend/onnx/converter.cpp - NodeContext and the registry --------===//
//
// NodeContext's typed attribute access (ONNX types strictly, except that an
// INT is accepted where a FLOAT is expected, and INTS where FLOATS are),
// call() with constant folding through the ops' reference kernels, and the
// converter registry.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converter.h"

#include "ir/symbol.h"
#include "support/log.h"

#include <algorithm>
#include <array>
#include <cstdlib>

namespace tessera::frontend::onnx {

namespace {

/// Results larger than this stay calls (as in the fold-constants pass).
constexpr int64_t kMaxFoldedBytes = int64_t(64) << 20;

const char *kindName(const OnnxAttr &a) {
  switch (a.index()) {
  case 0: return "an int";
  case 1: return "a float";
  case 2: return "a string";
  case 3: return "a tensor";
  case 4: return "a list of ints";
  case 5: return "a list of floats";
  case 6: return "a list of strings";
  }
  return "?";
}

int64_t resultBytes(const ir::Type &t) {
  if (t.isTensor())
    return t.numElements() * int64_t(ir::dtypeSize(t.dtype()));
  int64_t total = 0;
  for (const auto &f : t.fields())
    total += resultBytes(f);
  return total;
}

} // namespace

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

const ir::Expr &NodeContext::input(size_t i) const {
  static const ir::Expr kNull;
  return i < inputs_.size() ? inputs_[i] : kNull;
}

bool holdsSymbols(const ir::Tensor &t) {
  if (t.dtype() != ir::DType::I64)
    return false;
  for (int64_t x : t.toInts())
    if (ir::isKnownSymbol(x))
      return true;
  return false;
}

const ir::Tensor *NodeContext::constantInput(size_t i) const {
  if (!hasInput(i))
    return nullptr;
  if (const auto *c = inputs_[i]->as<ir::ConstantNode>())
    return &c->data();
  if (wishes_)
    wishes_->push_back(inputs_[i]);
  return nullptr;
}

bool NodeContext::hasGraphAttr(std::string_view name) const {
  return std::find(graphAttrs_.begin(), graphAttrs_.end(), name) != graphAttrs_.end();
}

Expected<std::vector<ir::Expr>> NodeContext::convertSubgraph(std::string_view attr,
                                                             std::vector<ir::Expr> inputs) const {
  if (!hasGraphAttr(attr))
    return error("missing sub-graph attribute '{}'", attr);
  if (!subgraphs_)
    return error("sub-graph attribute '{}' cannot be converted here (no importer)", attr);
  return (*subgraphs_)(attr, std::move(inputs));
}

Expected<OutlinedSubgraphs>
NodeContext::outlineSubgraphs(const std::vector<std::string> &attrs,
                              const std::vector<std::vector<ir::Type>> &leading) const {
  for (const std::string &a : attrs)
    if (!hasGraphAttr(a))
      return error("missing sub-graph attribute '{}'", a);
  if (!outline_)
    return error("sub-graphs cannot be converted here (no importer)");
  return (*outline_)(attrs, leading);
}

const OnnxAttr *NodeContext::attr(std::string_view name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

Expected<int64_t> NodeContext::attrInt(std::string_view name,
                                       std::optional<int64_t> fallback) const {
  const OnnxAttr *a = attr(name);
  if (!a) {
    if (fallback)
      return *fallback;
    return error("missing required attribute '{}'", name);
  }
  if (const auto *v = std::get_if<int64_t>(a))
    return *v;
  return error("attribute '{}' must be an int, got {}", name, kindName(*a));
}

Expected<float> NodeContext::attrFloat(std::string_view name,
                                       std::optional<float> fallback) const {
  const OnnxAttr *a = attr(name);
  if (!a) {
    if (fallback)
      return *fallback;
    return error("missing required attribute '{}'", name);
  }
  if (const auto *v = std::get_if<float>(a))
    return *v;
  if (const auto *v = std::get_if<int64_t>(a))
    return float(*v);
  return error("attribute '{}' must be a float, got {}", name, kindName(*a));
}

Expected<std::string> NodeContext::attrString(std::string_view name,
                                              std::optional<std::string> fallback) const {
  const OnnxAttr *a = attr(name);
  if (!a) {
    if (fallback)
      return *fallback;
    return error("missing required attribute '{}'", name);
  }
  if (const auto *v = std::get_if<std::string>(a))
    return *v;
  return error("attribute '{}' must be a string, got {}", name, kindName(*a));
}

Expected<std::vector<int64_t>>
NodeContext::attrInts(std::string_view name, std::optional<std::vector<int64_t>> fallback) const {
  const OnnxAttr *a = attr(name);
  if (!a) {
    if (fallback)
      return *fallback;
    return error("missing required attribute '{}'", name);
  }
  if (const auto *v = std::get_if<std::vector<int64_t>>(a))
    return *v;
  return error("attribute '{}' must be a list of ints, got {}", name, kindName(*a));
}

Expected<std::vector<float>>
NodeContext::attrFloats(std::string_view name, std::optional<std::vector<float>> fallback) const {
  const OnnxAttr *a = attr(name);
  if (!a) {
    if (fallback)
      return *fallback;
    return error("missing required attribute '{}'", name);
  }
  if (const auto *v = std::get_if<std::vector<float>>(a))
    return *v;
  if (const auto *v = std::get_if<std::vector<int64_t>>(a))
    return std::vector<float>(v->begin(), v->end());
  return error("attribute '{}' must be a list of floats, got {}", name, kindName(*a));
}

Expected<ir::Tensor> NodeContext::attrTensor(std::string_view name) const {
  const OnnxAttr *a = attr(name);
  if (!a)
    return error("missing required attribute '{}'", name);
  if (const auto *v = std::get_if<ir::Tensor>(a))
    return *v;
  return error("attribute '{}' must be a tensor, got {}", name, kindName(*a));
}

Expected<ir::Expr> NodeContext::call(std::string_view opName, std::vector<ir::Expr> args,
                                     ir::Attrs attrs) {
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i])
      return error("internal: argument {} of {} is null", i, opName);
  const std::vector<ir::Expr> given = args;
  auto built = ir::makeCall(opName, std::move(args), attrs, nodeName_, span_);
  if (!built.ok()) {
    // Dims the data decides may be equal although nothing shows it here.
    if (auto checked = callCheckingDimsAtRunTime(opName, given, attrs))
      return *checked;
    return std::move(built).withLocation(fmt::format("node '{}' ({})", nodeName_, opType_));
  }
  const auto *c = (*built)->as<ir::CallNode>();
  noteSetter(*built);
  if (c->args().empty() && c->attrs().holdsSymbols()) {
    // symbol_values: run time computes it, after the ops that set its symbols.
    if (c->op()->name == "symbol_values")
      if (std::vector<ir::Expr> after = settersOf(c->attrs().getInts("values")); !after.empty())
        return ir::makeCall(c->op(), std::move(after), c->attrs(), nodeName_, span_);
    return built;
  }
  std::vector<ir::Tensor> values;
  bool constants = true, symbolic = false;
  for (const auto &a : c->args()) {
    const auto *k = a->as<ir::ConstantNode>();
    constants = constants && k;
    symbolic = symbolic || (k && holdsSymbols(k->data()));
    if (k)
      values.push_back(k->data());
  }
  if (!constants) // a shape value used as data is computed at run time
    return symbolic ? callOnSymbolValues(opName, {c->args().begin(), c->args().end()}, c->attrs())
                    : built;
  if (resultBytes(c->type()) > kMaxFoldedBytes || !c->type().isStatic())
    return built;
  // Shape tensors of symbolic inputs hold their symbols (Shape's output):
  // moving them (gather, concat, unsqueeze, slice) keeps them; arithmetic on
  // them (b * n, c // heads) is evaluated at the symbols' probe values and
  // read back as symbols, the way types are (ir/symbol.h).
  const bool moves = c->op()->pattern == ir::OpPattern::Injective ||
                     (c->op()->name == "cast" && c->type().dtype() == ir::DType::I64);
  if (!moves) {
    std::vector<int64_t> symbols;
    for (const ir::Tensor &v : values)
      if (v.dtype() == ir::DType::I64)
        for (int64_t x : v.toInts())
          if (ir::isKnownSymbol(x) && std::find(symbols.begin(), symbols.end(), x) == symbols.end())
            symbols.push_back(x);
    // A comparison or a cast away from i64 cannot hold a symbol: computed
    // at run time from the symbols' values.
    std::vector<ir::Type> results = c->type().isTuple() ? c->type().fields()
                                                        : std::vector<ir::Type>{c->type()};
    const bool intsOnly = std::all_of(results.begin(), results.end(), [](const ir::Type &t) {
      return t.isTensor() && t.dtype() == ir::DType::I64;
    });
    if (!symbols.empty())
      if (auto decided = compareByRanges(c->op()->name, values, c->type()))
        return constant(std::move(*decided));
    if (!symbols.empty() && !intsOnly)
      return callOnSymbolValues(opName, {c->args().begin(), c->args().end()}, c->attrs());
    if (!symbols.empty()) {
      TS_ASSIGN_OR_RETURN(std::vector<ir::Tensor> folded, foldOverSymbols(*c, values, symbols));
      if (folded.size() != 1)
        return error("internal: {} returned {} tensors", c->op()->name, folded.size());
      return constant(std::move(folded[0]));
    }
  }
  auto out = c->op()->kernel(values, c->attrs(), c->type());
  if (!out.ok())
    return std::move(out)
        .withContext(fmt::format("while folding {} on constants", c->op()->name))
        .withLocation(fmt::format("node '{}' ({})", nodeName_, opType_))
        .error();
  if (!c->type().isTuple()) {
    if (out->size() != 1)
      return error("internal: {} returned {} tensors", c->op()->name, out->size());
    return constant(std::move(out->at(0)));
  }
  std::vector<ir::Expr> fields;
  for (auto &t : *out)
    fields.push_back(ir::makeConstant(std::move(t), nodeName_, span_));
  return ir::makeTuple(std::move(fields), nodeName_, span_);
}

ir::Expr NodeContext::constant(ir::Tensor t) const {
  return ir::makeConstant(std::move(t), nodeName_, span_);
}

//===----------------------------------------------------------------------===//
// ConverterRegistry
//===----------------------------------------------------------------------===//

Status ConverterRegistry::add(ConverterSpec spec) {
  if (spec.opType.empty())
    return Error("ONNX converter with an empty op type");
  if (!spec.convert)
    return Error::format("ONNX converter for '{}' has no conversion function", spec.opType);
  if (spec.minOpset > spec.maxOpset)
    return Error::format("ONNX converter for '{}': opsets {}..{} are empty", spec.opType,
                         spec.minOpset, spec.maxOpset);
  if (specs_.count(spec.opType))
    return Error::format("ONNX converter for '{}' registered twice", spec.opType);
  std::string key = spec.opType;
  specs_.emplace(std::move(key), std::move(spec));
  return okStatus();
}

const ConverterSpec *ConverterRegistry::find(std::string_view opType) const {
  auto it = specs_.find(opType);
  return it == specs_.end() ? nullptr : &it->second;
}

std::vector<const ConverterSpec *> ConverterRegistry::all() const {
  std::vector<const ConverterSpec *> out;
  for (const auto &[name, spec] : specs_)
    out.push_back(&spec);
  return out;
}

const ConverterRegistry &ConverterRegistry::standard() {
  static const ConverterRegistry registry = [] {
    ConverterRegistry r;
    for (auto *family : {&registerElementwiseConverters, &registerReduceConverters,
                         &registerNNConverters, &registerTensorConverters,
                         &registerLossConverters, &registerEinsumConverters,
                         &registerIndexConverters, &registerQuantizeConverters,
                         &registerSequenceConverters,
                         &registerRecurrentConverters, &registerSamplingConverters,
                         &registerSignalConverters,
                         &registerControlFlowConverters}) {
      Status s = family(r);
      if (!s.ok()) {
        // A malformed built-in converter is a bug in Tessera, not user input.
        TS_LOG_ERROR("internal error: {}", s.error().str());
        std::abort();
      }
    }
    return r;
  }();
  return registry;
}

} // namespace tessera::frontend::onnx#include "ir/symbol.h"

