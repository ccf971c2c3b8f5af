//===- tessera/sdk/json_runtime.hpp - A module over JSON graphs -*- C++ -*-===//
//
// JsonRuntime: a ready-made tessera::sdk::Module for plugins whose compiled
// form is "the tessera.graph JSON plus the constants", executed at run time
// by the plugin's own code (an interpreter of the graph, or kernels of a
// vendor library picked per node). It does everything that is not about
// computing:
//
//   - keeps one or more functions, each = (symbol, the sdk::Graph parsed from
//     its JSON, the constants copied once from codegen's borrowed views into
//     owned 64-byte-aligned buffers);
//   - answers get_function by symbol and validates every call (argument
//     count, CPU, compact row-major, exact dtype and shape) before handing
//     the DLTensors to the derived class, zero-copy;
//   - saves itself in a self-describing binary format and loads it back with
//     bounds checks (corrupted bytes give an sdk::Error, never a crash);
//   - prints the graphs as source ("json");
//   - lets init() give back a constant's bytes once the module keeps its own
//     copy in another form (weights reordered into a vendor layout), so that
//     weights are held once; save() asks for the plain bytes back.
//
// HOW TO DERIVE (plugins/json/runtime.cpp is the worked example)
//
//   class MyRuntime : public tessera::sdk::JsonRuntime {
//   public:
//     explicit MyRuntime(std::vector<JsonFunction> fns)
//         : JsonRuntime("my_key", std::move(fns)) {}
//   protected:
//     // Once, before any run: plan each function, pre-pack weights.
//     void init(std::span<const JsonFunction> fns) override;
//     // Concurrently from several threads: compute outputs from inputs.
//     void run(const JsonFunction &fn, std::span<const DLTensor *const> inputs,
//              std::span<const DLTensor *const> outputs) const override;
//   };
//
//   // codegen (JsonFunction is move-only: no initializer list):
//   std::vector<JsonFunction> fns;
//   fns.push_back(JsonRuntime::functionFromGraph(view, "my_key"));
//   return JsonRuntime::create<MyRuntime>(std::move(fns));
//   // module factory "my_key":
//   return JsonRuntime::load<MyRuntime>(bytes, "my_key");
//
// SYMBOLIC FUNCTIONS (ABI 1.4, for a plugin whose checker takesSymbolicDims())
//   A function whose graph has symbols is called with their values. The base
//   resolves the graph at those values (resolveGraph: every dim concrete,
//   values checked against the bounds), validates the arguments against it,
//   and hands it to the derived class in two steps:
//     prepareShape(fn, resolved)   once per distinct set of values: what the
//                                  runtime builds for one shape (a Program,
//                                  oneDNN primitives); kept in a cache of the
//                                  kShapeCacheSize most recently used shapes
//                                  of each function;
//     runShape(fn, shape, in, out) every call, with the cached Shape.
//   init() sees symbolic functions too, and should only check them (their
//   dims are not known there). A runtime that does not override runShape
//   refuses symbolic functions by name.
//
// create() and load() construct the module and call init() right away, so
// that a graph the runtime cannot execute fails at compile or load time.
// init() runs exactly once per module, before any run(). run() must keep its
// scratch memory local to the call (or per thread): the module is shared by
// every thread that calls it.
//
// SAVED FORMAT (integers little-endian, sizes in bytes)
//   "TSJR"  u32 format version (1)  str type key  u64 function count
//   per function:  str symbol  str JSON text  u64 constant count
//     per constant:  str name  u8 dtype code  u8 bits  u16 lanes  u32 ndim
//                    i64 dims[ndim]  u64 byte count  raw bytes (host order)
//   where str = u64 length + UTF-8 bytes. Nothing follows the last function.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/json_graph.hpp"
#include "tessera/sdk/plugin.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::sdk {

//===----------------------------------------------------------------------===//
// Helpers on DLTensors
//===----------------------------------------------------------------------===//

/// The first element of a DLTensor (data + byte_offset).
inline void *tensorData(const DLTensor &t) {
  return t.data ? static_cast<char *>(t.data) + t.byte_offset : nullptr;
}

/// The dtype and shape of a DLTensor.
inline TensorType tensorTypeOf(const DLTensor &t) {
  return makeTensorType(t.dtype, t.ndim, t.shape);
}

/// Strides null, or the compact row-major ones (dims of size 1 may have any
/// stride: they are never stepped along).
inline bool isCompactRowMajor(const DLTensor &t) {
  if (!t.strides)
    return true;
  int64_t expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected)
      return false;
    expected *= t.shape[i];
  }
  return true;
}

/// "[12, 4, 1]": the strides of a DLTensor that has them.
inline std::string stridesStr(const DLTensor &t) {
  std::string s = "[";
  for (int32_t i = 0; i < t.ndim; ++i)
    s += (i ? ", " : "") + std::to_string(t.strides[i]);
  return s + "]";
}

/// Why `t` cannot be passed as an argument of type `want` (null, not on the
/// CPU, no shape, another dtype or shape, not compact row-major, no data),
/// or "" when it can. Builds a message only on failure: a module calls it
/// on every argument of every call.
inline std::string argumentMismatch(const DLTensor *t, const TensorType &want) {
  if (!t)
    return "null tensor";
  if (t->device.device_type != kDLCPU)
    return "expected a CPU tensor, got device type " + std::to_string(int(t->device.device_type));
  if (t->ndim < 0 || (t->ndim > 0 && !t->shape))
    return "the tensor has no shape";
  bool same = t->dtype == want.dtype && size_t(t->ndim) == want.shape.size() &&
              std::equal(want.shape.begin(), want.shape.end(), t->shape);
  if (!same)
    return "expected " + want.str() + ", got " + tensorTypeOf(*t).str();
  if (!isCompactRowMajor(*t))
    return "expected a compact row-major tensor, got strides " + stridesStr(*t);
  if (!t->data && want.numel() > 0)
    return "the tensor has no data";
  return {};
}

/// "takes 1 inputs and 1 outputs (2 arguments), got 3" when a function of
/// `numIn` inputs and `numOut` outputs is called with `got` arguments, or "".
inline std::string argumentCountMismatch(size_t numIn, size_t numOut, size_t got) {
  if (got == numIn + numOut)
    return {};
  return "takes " + std::to_string(numIn) + " inputs and " + std::to_string(numOut) + " outputs (" +
         std::to_string(numIn + numOut) + " arguments), got " + std::to_string(got);
}

//===----------------------------------------------------------------------===//
// Functions and constants
//===----------------------------------------------------------------------===//

/// A constant owned by the module: 64-byte-aligned bytes in compact
/// row-major order.
class JsonConstant {
public:
  JsonConstant() = default;
  JsonConstant(std::string name, TensorType type) : name_(std::move(name)), type_(std::move(type)) {
    size_t n = type_.bytes();
    // Round up so that vector loads past the last element stay inside.
    size_t alloc = (n + kAlignment - 1) / kAlignment * kAlignment;
    if (alloc > 0) {
      data_.reset(static_cast<std::byte *>(::operator new(alloc, std::align_val_t(kAlignment))));
      std::memset(data_.get(), 0, alloc);
    }
  }

  static constexpr size_t kAlignment = 64;

  const std::string &name() const { return name_; }
  const TensorType &type() const { return type_; }
  size_t bytes() const { return type_.bytes(); }
  /// Null once the module released the bytes (JsonRuntime::releaseConstant).
  std::byte *data() { return data_.get(); }
  const std::byte *data() const { return data_.get(); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(data_.get()); }
  /// A DLTensor view (CPU, compact); valid while the constant lives.
  DLTensor dl() const {
    DLTensor t{};
    t.data = const_cast<std::byte *>(data_.get());
    t.device = {kDLCPU, 0};
    t.ndim = int32_t(type_.shape.size());
    t.dtype = type_.dtype;
    t.shape = const_cast<int64_t *>(type_.shape.data());
    return t;
  }

private:
  friend class JsonRuntime;
  struct AlignedDelete {
    void operator()(std::byte *p) const { ::operator delete(p, std::align_val_t(kAlignment)); }
  };
  std::string name_;
  TensorType type_;
  std::unique_ptr<std::byte, AlignedDelete> data_;
};

/// One compiled function: what codegen received, in owned form.
struct JsonFunction {
  std::string symbol;
  std::string json; // the tessera.graph text as compiled (saved verbatim)
  Graph graph;
  std::vector<JsonConstant> constants; // indexed by the const nodes' "constant"
  size_t index = 0;                    // position in the module
};

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

class JsonRuntime : public Module {
public:
  static constexpr char kMagic[4] = {'T', 'S', 'J', 'R'};
  static constexpr uint32_t kFormatVersion = 1;

  /// One symbolic function at one set of values of its symbols.
  struct Shape {
    std::vector<int64_t> values;
    Graph graph;                          // resolveGraph(fn.graph, values)
    std::shared_ptr<const void> prepared; // what prepareShape() made of it
  };
  /// The shapes kept per symbolic function (least recently used dropped).
  static constexpr size_t kShapeCacheSize = 8;

  JsonRuntime(std::string typeKey, std::vector<JsonFunction> functions)
      : Module(std::move(typeKey)), functions_(std::move(functions)) {
    for (size_t i = 0; i < functions_.size(); ++i) {
      functions_[i].index = i;
      for (size_t j = 0; j < i; ++j)
        if (functions_[j].symbol == functions_[i].symbol)
          throw Error(prefix() + "function '" + functions_[i].symbol + "' appears twice");
    }
    for (size_t i = 0; i < functions_.size(); ++i)
      bound_.push_back(std::make_unique<BoundFunction>(this, i));
  }

  /// Constructs a D (its constructor takes `args`) and runs its init().
  template <typename D, typename... A> static std::unique_ptr<D> create(A &&...args) {
    auto m = std::make_unique<D>(std::forward<A>(args)...);
    static_cast<JsonRuntime &>(*m).ensureInit();
    return m;
  }

  /// Reads what save() wrote (checking that it was saved under `typeKey`)
  /// and creates a D from it: D(std::vector<JsonFunction>, args...).
  template <typename D, typename... A>
  static std::unique_ptr<D> load(std::string_view bytes, std::string_view typeKey, A &&...args) {
    return create<D>(parse(bytes, typeKey), std::forward<A>(args)...);
  }

  /// A function from codegen's graph: parses the JSON and copies the
  /// constants (borrowed views) into owned aligned buffers.
  static JsonFunction functionFromGraph(const GraphView &g, std::string_view typeKey) {
    std::vector<JsonConstant> constants;
    for (size_t i = 0; i < g.constants.size(); ++i) {
      const DLTensor *t = g.constants[i];
      std::string what = "constant " + std::to_string(i) + " ('" + std::string(g.constantNames[i]) +
                         "') of function '" + std::string(g.symbol) + "'";
      if (!t)
        throw Error(prefix(typeKey) + what + " is null");
      if (t->device.device_type != kDLCPU)
        throw Error(prefix(typeKey) + what + " is not on the CPU");
      if (t->ndim < 0 || (t->ndim > 0 && !t->shape))
        throw Error(prefix(typeKey) + what + " has no shape");
      if (!isCompactRowMajor(*t))
        throw Error(prefix(typeKey) + what + " is not compact row-major");
      JsonConstant c(std::string(g.constantNames[i]), tensorTypeOf(*t));
      if (c.bytes() > 0) {
        if (!t->data)
          throw Error(prefix(typeKey) + what + " has no data");
        std::memcpy(c.data(), tensorData(*t), c.bytes());
      }
      constants.push_back(std::move(c));
    }
    return makeFunction(std::string(g.symbol), std::string(g.json), std::move(constants), typeKey);
  }

  /// A function from its parts; checks that the JSON parses and that every
  /// const node names an existing constant of its type.
  static JsonFunction makeFunction(std::string symbol, std::string json,
                                   std::vector<JsonConstant> constants, std::string_view typeKey) {
    JsonFunction f;
    f.symbol = std::move(symbol);
    f.json = std::move(json);
    f.constants = std::move(constants);
    try {
      f.graph = readGraph(f.json);
    } catch (const Error &e) {
      throw Error(prefix(typeKey) + "function '" + f.symbol + "': " + e.what());
    } catch (const nlohmann::json::exception &e) { // a value of the wrong JSON type
      throw Error(prefix(typeKey) + "function '" + f.symbol + "': tessera.graph JSON: " + e.what());
    }
    checkConstNodes(f, f.graph, typeKey);
    return f;
  }

  /// Parses save()'s bytes into functions; `typeKey` is the key the bytes
  /// must have been saved under.
  static std::vector<JsonFunction> parse(std::string_view bytes, std::string_view typeKey);

  const std::vector<JsonFunction> &functions() const { return functions_; }

  /// Whether init() released constant `constant` of function `function`.
  bool constantReleased(size_t function, size_t constant) const {
    return function < restore_.size() && constant < restore_[function].size() &&
           restore_[function][constant] != nullptr;
  }
  /// How many shapes prepareShape() was asked for, over all functions.
  size_t shapesPrepared() const {
    std::lock_guard<std::mutex> lock(shapesMutex_);
    return shapesPrepared_;
  }
  /// The bytes of the constants the module still holds in their plain form.
  size_t plainConstantBytes() const {
    size_t n = 0;
    for (const JsonFunction &f : functions_)
      for (const JsonConstant &c : f.constants)
        n += c.data() ? c.bytes() : 0;
    return n;
  }

  // sdk::Module
  Function *function(std::string_view symbol) override {
    ensureInit();
    for (size_t i = 0; i < functions_.size(); ++i)
      if (functions_[i].symbol == symbol)
        return bound_[i].get();
    return nullptr;
  }
  void save(const Writer &out) const override;
  std::string source(std::string_view format) const override {
    if (!format.empty() && format != "json")
      throw Error(prefix() + "no '" + std::string(format) + "' source (formats: json)",
                  TESSERA_STATUS_UNIMPLEMENTED);
    auto pretty = [](const JsonFunction &f) {
      return nlohmann::json::parse(f.json, nullptr, false).dump(2);
    };
    if (functions_.size() == 1)
      return pretty(functions_[0]) + "\n";
    std::string s = "[\n";
    for (size_t i = 0; i < functions_.size(); ++i)
      s += pretty(functions_[i]) + (i + 1 < functions_.size() ? ",\n" : "\n");
    return s + "]\n";
  }

  /// "<type key> runtime module: ", the start of every message.
  std::string prefix() const { return prefix(typeKey()); }
  static std::string prefix(std::string_view typeKey) {
    return std::string(typeKey) + " runtime module: ";
  }

protected:
  /// Called exactly once, before any run, with every function (and so the
  /// constants). Throw to refuse the module (compile or load then fails).
  virtual void init(std::span<const JsonFunction> /*functions*/) {}

  /// Writes a released constant's plain bytes (compact row-major, exactly
  /// JsonConstant::bytes() of them) to `out`.
  using RestoreFn = std::function<void(std::byte *out)>;
  /// From init() only: frees the bytes of constant `constant` of function
  /// `function`, which the module no longer reads (it keeps a copy of its
  /// own, e.g. reordered into the layout its kernels want). From then on the
  /// constant's data() is null, and save() calls `restore` for its bytes.
  void releaseConstant(size_t function, size_t constant, RestoreFn restore) {
    if (function >= functions_.size() || constant >= functions_[function].constants.size())
      throw Error(prefix() + "releaseConstant: no constant " + std::to_string(constant) +
                  " in function " + std::to_string(function));
    if (!restore)
      throw Error(prefix() + "releaseConstant: constant " + std::to_string(constant) +
                  " of function '" + functions_[function].symbol + "' needs a restore function");
    if (restore_.size() < functions_.size())
      restore_.resize(functions_.size());
    auto &fn = restore_[function];
    fn.resize(functions_[function].constants.size());
    fn[constant] = std::move(restore);
    functions_[function].constants[constant].data_.reset();
  }
  /// Computes fn's outputs from its inputs. The tensors were validated: CPU,
  /// compact row-major, exactly the graph's types. Called concurrently.
  virtual void run(const JsonFunction &fn, std::span<const DLTensor *const> inputs,
                   std::span<const DLTensor *const> outputs) const = 0;

  /// Symbolic functions: builds what runShape needs at one shape (`resolved`
  /// has every dim concrete). Called concurrently; the result is cached.
  virtual std::shared_ptr<const void> prepareShape(const JsonFunction & /*fn*/,
                                                   const Graph & /*resolved*/) const {
    return nullptr;
  }
  /// Symbolic functions: computes fn's outputs at `shape`. The tensors were
  /// validated against shape.graph. Called concurrently.
  virtual void runShape(const JsonFunction &fn, const Shape & /*shape*/,
                        std::span<const DLTensor *const> /*inputs*/,
                        std::span<const DLTensor *const> /*outputs*/) const {
    throw Error(prefix() + "function '" + fn.symbol +
                    "' has symbolic dims, which this module does not run",
                TESSERA_STATUS_UNIMPLEMENTED);
  }

private:
  class BoundFunction : public Function {
  public:
    BoundFunction(JsonRuntime *rt, size_t index) : rt_(rt), index_(index) {}
    void run(std::span<const DLTensor *const> args) override { rt_->call(index_, args, {}); }
    void run(std::span<const DLTensor *const> args, std::span<const int64_t> symbols) override {
      rt_->call(index_, args, symbols);
    }

  private:
    JsonRuntime *rt_;
    size_t index_;
  };

  void ensureInit() {
    std::call_once(initOnce_, [&] { init(std::span<const JsonFunction>(functions_)); });
  }

  /// Validates the arguments and runs the function. Messages are built only
  /// on failure: this is the hot path of every call.
  void call(size_t index, std::span<const DLTensor *const> args,
            std::span<const int64_t> symbols) const {
    const JsonFunction &f = functions_[index];
    auto fn = [&] { return prefix() + "function '" + f.symbol + "'"; };
    std::shared_ptr<const Shape> shape;
    if (isSymbolic(f.graph)) {
      if (symbols.size() != f.graph.symbols.size())
        throw Error(fn() + " has " + std::to_string(f.graph.symbols.size()) +
                        " symbols, but the call gave " + std::to_string(symbols.size()) +
                        " values",
                    TESSERA_STATUS_INVALID_ARGUMENT);
      shape = shapeOf(f, symbols);
    } else if (!symbols.empty()) {
      throw Error(fn() + " has no symbolic dims, but the call gave " +
                      std::to_string(symbols.size()) + " symbol values",
                  TESSERA_STATUS_INVALID_ARGUMENT);
    }
    const Graph &g = shape ? shape->graph : f.graph;
    size_t numIn = g.inputs.size(), numOut = g.outputs.size();
    if (std::string why = argumentCountMismatch(numIn, numOut, args.size()); !why.empty())
      throw Error(fn() + " " + why);
    for (size_t i = 0; i < args.size(); ++i) {
      const TensorType &want =
          i < numIn ? g.nodes[size_t(g.inputs[i])].outputs[0] : g.typeOf(g.outputs[i - numIn]);
      if (std::string why = argumentMismatch(args[i], want); !why.empty())
        throw Error(fn() + " argument " + std::to_string(i) + " (" + argName(g, i) + "): " + why);
    }
    if (shape)
      runShape(f, *shape, args.subspan(0, numIn), args.subspan(numIn));
    else
      run(f, args.subspan(0, numIn), args.subspan(numIn));
  }

  /// The cached shape of `f` at `values`, prepared now if it is new.
  std::shared_ptr<const Shape> shapeOf(const JsonFunction &f,
                                       std::span<const int64_t> values) const {
    auto find = [&]() -> std::shared_ptr<const Shape> {
      auto &list = shapes_[f.index];
      for (auto it = list.begin(); it != list.end(); ++it)
        if (std::equal((*it)->values.begin(), (*it)->values.end(), values.begin(), values.end())) {
          list.splice(list.begin(), list, it); // most recently used first
          return list.front();
        }
      return nullptr;
    };
    {
      std::lock_guard<std::mutex> lock(shapesMutex_);
      if (shapes_.size() < functions_.size())
        shapes_.resize(functions_.size());
      if (auto hit = find())
        return hit;
    }
    // Built outside the lock (oneDNN primitives take a while); a thread that
    // built the same shape meanwhile wins.
    auto made = std::make_shared<Shape>();
    made->values.assign(values.begin(), values.end());
    try {
      made->graph = resolveGraph(f.graph, values);
    } catch (const Error &e) {
      throw Error(prefix() + "function '" + f.symbol + "': " + e.what(), e.code());
    }
    {
      ProfileScope scope("prepare shape");
      made->prepared = prepareShape(f, made->graph);
    }
    std::lock_guard<std::mutex> lock(shapesMutex_);
    ++shapesPrepared_;
    if (auto hit = find())
      return hit;
    auto &list = shapes_[f.index];
    list.push_front(std::move(made));
    if (list.size() > kShapeCacheSize)
      list.pop_back(); // a call still running on it holds its own reference
    return list.front();
  }

  /// "input 'x'" or "output 0 ('fc1')".
  static std::string argName(const Graph &g, size_t i) {
    if (i < g.inputs.size())
      return "input '" + g.nodes[size_t(g.inputs[i])].name + "'";
    size_t k = i - g.inputs.size();
    const NodeRef &r = g.outputs[k];
    std::string node = g.nodes[size_t(r.node)].name;
    if (r.index > 0)
      node += ":" + std::to_string(r.index);
    return "output " + std::to_string(k) + " ('" + node + "')";
  }

  /// Every const node (composite bodies included) names an existing
  /// constant whose type is the node's.
  static void checkConstNodes(const JsonFunction &f, const Graph &g, std::string_view typeKey) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node &n = g.nodes[i];
      if (n.kind == Node::Kind::Composite && n.body)
        checkConstNodes(f, *n.body, typeKey);
      if (n.kind != Node::Kind::Const)
        continue;
      std::string at = prefix(typeKey) + "function '" + f.symbol + "': const node " +
                       std::to_string(i) + " ('" + n.name + "')";
      if (n.constant < 0 || size_t(n.constant) >= f.constants.size())
        throw Error(at + " refers to constant " + std::to_string(n.constant) + ", but there are " +
                    std::to_string(f.constants.size()));
      const TensorType &have = f.constants[size_t(n.constant)].type();
      if (n.outputs.size() != 1 || !(n.outputs[0] == have))
        throw Error(at + " has type " + n.outputs[0].str() + ", but constant " +
                    std::to_string(n.constant) + " is " + have.str());
    }
  }

  std::vector<JsonFunction> functions_;
  std::vector<std::unique_ptr<BoundFunction>> bound_;
  // By function and constant: how to get a released constant's bytes back
  // (empty where nothing was released).
  std::vector<std::vector<RestoreFn>> restore_;
  std::once_flag initOnce_;
  mutable std::mutex shapesMutex_;
  mutable std::vector<std::list<std::shared_ptr<const Shape>>> shapes_; // per function
  mutable size_t shapesPrepared_ = 0;
};

} // namespace tessera::sdk

// JsonRuntime::save and load, and the byte readers and writers under them.
#include "tessera/sdk/json_runtime_bytes.hpp"
