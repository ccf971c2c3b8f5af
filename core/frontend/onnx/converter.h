//===- frontend/onnx/converter.h - ONNX op converters ----------*- C++ -*-===//
//
// A converter turns one ONNX node into core IR. It sees the node through
// NodeContext (inputs as IR expressions, attributes as plain values, the
// model's opset) and never touches protobuf. Converters are registered
// explicitly per family (registerXxxConverters); an op type without a
// converter is "unsupported" and reported by name, with counts, before any
// conversion starts.
//
// Constant folding happens as the graph is built: NodeContext::call()
// evaluates a call whose arguments are all constants with the op's reference
// kernel, so shape sub-graphs (Shape -> Gather -> Concat -> Reshape ...)
// become constants once the input shapes are known.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "support/error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tessera::frontend::onnx {

/// An ONNX attribute: INT, FLOAT, STRING, TENSOR, INTS, FLOATS, STRINGS.
using OnnxAttr = std::variant<int64_t, float, std::string, ir::Tensor, std::vector<int64_t>,
                              std::vector<float>, std::vector<std::string>>;

/// Converts one sub-graph attribute of the current node (If's branches,
/// Loop's, Scan's and SequenceMap's body) with `inputs` bound to the
/// sub-graph's inputs in order (null for an absent optional) and the outer
/// scopes' values visible by name; returns the sub-graph's outputs. Set by
/// the importer (see NodeContext::convertSubgraph).
using SubgraphConverter = std::function<Expected<std::vector<ir::Expr>>(
    std::string_view attr, std::vector<ir::Expr> inputs)>;

/// Sub-graphs converted into closed functions (run-time If and Loop; see
/// NodeContext::outlineSubgraphs).
struct OutlinedSubgraphs {
  /// The enclosing scopes' values the graphs read (constants excepted, which
  /// stay visible and foldable), in order of first use: the op passes them
  /// after its own arguments.
  std::vector<ir::Expr> captured;
  /// Per graph: fn(leading..., one parameter per captured value) returning
  /// the tuple of the graph's outputs; the leading parameters are bound to
  /// the graph's inputs and named after them.
  std::vector<ir::Function> functions;
};
using SubgraphOutliner = std::function<Expected<OutlinedSubgraphs>(
    const std::vector<std::string> &attrs, const std::vector<std::vector<ir::Type>> &leading)>;

/// Whether `t` is a shape value holding symbols (ONNX Shape of a symbolic
/// tensor, and what moves it): a constant whose value is known only at run
/// time.
bool holdsSymbols(const ir::Tensor &t);

/// While alive, the calls converted belong to a closed function (an outlined
/// sub-graph, importer_nodes.cpp): a read of a run-time symbol's value
/// (symbol_values) is ordered after the op that sets the symbol only when
/// that op is in the same function; one set outside has its value before
/// the function runs. Scopes nest; one thread's conversions only.
class SymbolScope {
public:
  SymbolScope();
  ~SymbolScope();
  SymbolScope(const SymbolScope &) = delete;
  SymbolScope &operator=(const SymbolScope &) = delete;
};

class NodeContext {
public:
  NodeContext(std::string opType, std::string nodeName, int64_t opset,
              std::vector<ir::Expr> inputs, size_t numOutputs,
              std::map<std::string, OnnxAttr, std::less<>> attrs, ir::Span span = {})
      : opType_(std::move(opType)), nodeName_(std::move(nodeName)), opset_(opset),
        inputs_(std::move(inputs)), numOutputs_(numOutputs), attrs_(std::move(attrs)),
        span_(span) {}

  const std::string &opType() const { return opType_; }
  /// The ONNX node name (the importer makes one up, e.g. "Conv_3", when the
  /// model has none). Every call built through call() carries it.
  const std::string &nodeName() const { return nodeName_; }
  /// The model's opset for the default ONNX domain.
  int64_t opset() const { return opset_; }

  /// Number of inputs, counting empty (omitted optional) ones.
  size_t numInputs() const { return inputs_.size(); }
  /// Input i is given (not omitted, not an empty name).
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// Input i; null when omitted.
  const ir::Expr &input(size_t i) const;
  /// The input's data when it is a constant (initializer, Constant node or a
  /// folded sub-graph), else null.
  const ir::Tensor *constantInput(size_t i) const;
  /// Number of outputs the node declares (trailing optional ones included).
  size_t numOutputs() const { return numOutputs_; }

  bool hasAttr(std::string_view name) const { return attrs_.find(name) != attrs_.end(); }
  const OnnxAttr *attr(std::string_view name) const;
  // Typed access with a default for absent attributes. A present attribute
  // of the wrong kind is an error naming the node and the attribute.
  Expected<int64_t> attrInt(std::string_view name, std::optional<int64_t> fallback = {}) const;
  Expected<float> attrFloat(std::string_view name, std::optional<float> fallback = {}) const;
  Expected<std::string> attrString(std::string_view name,
                                   std::optional<std::string> fallback = {}) const;
  Expected<std::vector<int64_t>> attrInts(std::string_view name,
                                          std::optional<std::vector<int64_t>> fallback = {}) const;
  Expected<std::vector<float>> attrFloats(std::string_view name,
                                          std::optional<std::vector<float>> fallback = {}) const;
  Expected<ir::Tensor> attrTensor(std::string_view name) const;
  const std::map<std::string, OnnxAttr, std::less<>> &attrs() const { return attrs_; }

  /// Builds a call of a core op annotated with the node name; when every
  /// argument is a constant it is evaluated at once (reference kernel) and a
  /// constant is returned instead.
  Expected<ir::Expr> call(std::string_view op, std::vector<ir::Expr> args, ir::Attrs attrs = {});
  /// `x` with its dims at `axes` those of `like` (symbols or sizes the data
  /// may make equal), checked equal when the model runs: x gathered at
  /// range(dim) along each axis behind a check whose error says
  /// `rule(axis, x's dim, like's dim)` ("dim 1 of argument 2 (N) must equal
  /// ..."), located at this node.
  Expected<ir::Expr> withDimsOf(const ir::Expr &x, const ir::Type &like,
                                const std::vector<int64_t> &axes,
                                const std::function<std::string(int64_t, int64_t, int64_t)> &rule);
  /// A constant annotated with the node name.
  ir::Expr constant(ir::Tensor t) const;

  /// Where constantInput() records the inputs it was asked for that are not
  /// constants. When the conversion fails, the importer reports the graph
  /// inputs they are computed from (ImportReport::wantedConstants), which a
  /// caller may bind as constants. Set by the importer; may stay null.
  void setConstantWishes(std::vector<ir::Expr> *sink) { wishes_ = sink; }

  /// Whether the node has a sub-graph (GRAPH) attribute of that name; such
  /// attributes are not in attrs(). Set by the importer.
  bool hasGraphAttr(std::string_view name) const;
  /// Converts the sub-graph attribute `attr` once, with `inputs` bound to
  /// its inputs (see SubgraphConverter); control-flow converters call it
  /// per branch or per unrolled iteration. An error without an importer.
  Expected<std::vector<ir::Expr>> convertSubgraph(std::string_view attr,
                                                  std::vector<ir::Expr> inputs) const;
  /// Converts the sub-graph attributes `attrs` into closed functions whose
  /// first parameters have the types `leading[i]` (the graph's inputs), for
  /// control flow decided at run time. An error without an importer.
  Expected<OutlinedSubgraphs> outlineSubgraphs(const std::vector<std::string> &attrs,
                                               const std::vector<std::vector<ir::Type>> &leading) const;
  void setSubgraphs(std::vector<std::string> graphAttrs, const SubgraphConverter *convert,
                    const SubgraphOutliner *outline = nullptr) {
    graphAttrs_ = std::move(graphAttrs);
    subgraphs_ = convert;
    outline_ = outline;
  }

  /// "node 'conv_3' (Conv): <message>".
  /// An error located at this node: "node 'NAME' (OpType): message".
  template <typename... Args> Error error(fmt::format_string<Args...> f, Args &&...args) const {
    Error e(fmt::format(f, std::forward<Args>(args)...));
    e.addLocation(fmt::format("node '{}' ({})", nodeName_, opType_));
    return e;
  }

private:
  /// The call of `opName` with every constant argument that holds symbols
  /// replaced by symbol_values of it: a tensor computed at run time (a
  /// comparison of a count the data decides, a shape value added to data).
  Expected<ir::Expr> callOnSymbolValues(std::string_view opName, std::vector<ir::Expr> args,
                                        ir::Attrs attrs);
  Expected<std::vector<ir::Tensor>> foldOverSymbols(const ir::CallNode &call,
                                                    const std::vector<ir::Tensor> &values,
                                                    const std::vector<int64_t> &symbols);
  /// Records `call` as the setter of the run-time symbols it decides
  /// (attribute 'count' of a data-dependent op, range_count or a loop;
  /// 'joins' of an if) in the current SymbolScope.
  static void noteSetter(const ir::Expr &call);
  /// The results that set the run-time symbols `values` depend on, in the
  /// current SymbolScope: what a symbol_values of them must run after.
  static std::vector<ir::Expr> settersOf(const std::vector<int64_t> &values);
  /// A comparison (equal, less, ...) of i64 shape values holding symbols,
  /// decided where the symbols' ranges decide every element; nullopt for
  /// any other op or where an element depends on the values. Operands of
  /// one shape, or one of a single element.
  static std::optional<ir::Tensor> compareByRanges(std::string_view op,
                                                   const std::vector<ir::Tensor> &values,
                                                   const ir::Type &result);
  /// The call of `opName` whose rule failed on `args`, made with dims that
  /// the data decides (different symbols at compile time) checked equal when
  /// the model runs: an argument gathered at range(dim) of another's dim,
  /// behind a check that the two values agree. Nullopt when no such
  /// rewrite makes the rule hold.
  std::optional<ir::Expr> callCheckingDimsAtRunTime(std::string_view opName,
                                                    const std::vector<ir::Expr> &args,
                                                    const ir::Attrs &attrs);
  /// withDimsOf for argument `which` taking argument `likeWhich`'s dims.
  Expected<ir::Expr> withDimsOf(const ir::Expr &x, const ir::Type &like,
                                const std::vector<int64_t> &axes, size_t which,
                                size_t likeWhich);

  std::string opType_;
  std::string nodeName_;
  int64_t opset_;
  std::vector<ir::Expr> inputs_;
  size_t numOutputs_;
  std::map<std::string, OnnxAttr, std::less<>> attrs_;
  ir::Span span_;
  std::vector<ir::Expr> *wishes_ = nullptr;
  std::vector<std::string> graphAttrs_;
  const SubgraphConverter *subgraphs_ = nullptr;
  const SubgraphOutliner *outline_ = nullptr;
};

/// Returns one expression per ONNX output, in order. It may return fewer
/// than numOutputs() when trailing outputs are optional extras that the
/// converter does not produce (e.g. Dropout's mask); the importer reports an
/// error if such an output is actually used.
using Converter = std::function<Expected<std::vector<ir::Expr>>(NodeContext &ctx)>;

struct ConverterSpec {
  std::string opType;   // ONNX op type in the default domain, e.g. "Conv"
  int64_t minOpset = 7; // opsets this converter handles (inclusive)
  int64_t maxOpset = 17;
  Converter convert;
  /// For docs/onnx-support.md: attributes and variants supported, limits.
  std::string notes;
};

class ConverterRegistry {
public:
  /// Adds a converter; an op type registered twice is an error.
  Status add(ConverterSpec spec);
  const ConverterSpec *find(std::string_view opType) const;
  /// All converters sorted by op type.
  std::vector<const ConverterSpec *> all() const;

  /// The registry with every converter of Tessera.
  static const ConverterRegistry &standard();

private:
  std::map<std::string, ConverterSpec, std::less<>> specs_;
};

// The families, one file each in converters/.
Status registerElementwiseConverters(ConverterRegistry &r); // math, activations, logic, compare, cast
Status registerReduceConverters(ConverterRegistry &r);      // Reduce*, ArgMax/ArgMin
Status registerNNConverters(ConverterRegistry &r);          // Conv, Gemm, MatMul, pools, norms, Softmax, Resize
Status registerTensorConverters(ConverterRegistry &r);      // shape and data movement, Constant, Shape, ...
Status registerLossConverters(ConverterRegistry &r);        // NLL and SCE losses, MeanVarianceNormalization
Status registerEinsumConverters(ConverterRegistry &r);      // Einsum
Status registerIndexConverters(ConverterRegistry &r);       // GatherND, Scatter*, Compress, NonZero, Unique, NMS
Status registerQuantizeConverters(ConverterRegistry &r);    // QuantizeLinear, QLinearConv, MatMulInteger, ...
Status registerSequenceConverters(ConverterRegistry &r);    // sequences as tuples of static length
Status registerRecurrentConverters(ConverterRegistry &r);   // RNN, GRU unrolled; LSTM as lstm or unrolled
Status registerSamplingConverters(ConverterRegistry &r);    // GridSample, RoiAlign
Status registerSignalConverters(ConverterRegistry &r);      // DFT, STFT, windows, MelWeightMatrix, Det
Status registerControlFlowConverters(ConverterRegistry &r); // If, Loop, Scan, SequenceMap unrolled (control_flow.cpp)

} // namespace tessera::frontend::onnx
