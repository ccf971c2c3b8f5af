//===- tessera/sdk/json_graph.hpp - The JSON subgraph format -----*- C++ -*-===//
//
// Reader and writer of the "tessera.graph" JSON format (version 1), in which
// the core hands a partitioned function to a plugin's codegen (and a whole
// graph to the partition hook). Header-only, on nlohmann-json.
//
//   {
//     "format": "tessera.graph", "version": 1,
//     "symbol": "tessera_main_json_0",
//     "nodes": [
//       {"kind": "input", "name": "x", "outputs": [{"dtype": "f32", "shape": [1, 8]}]},
//       {"kind": "const", "name": "w", "constant": 0,
//        "outputs": [{"dtype": "f32", "shape": [4, 8]}]},
//       {"kind": "op", "op": "dense", "name": "fc1", "inputs": [[0, 0], [1, 0]],
//        "attrs": {"units": 4}, "outputs": [{"dtype": "f32", "shape": [1, 4]}]},
//       {"kind": "composite", "op": "json.dense_relu", "name": "fused_3",
//        "inputs": [[0, 0], [1, 0]], "outputs": [...], "body": { "nodes": [...],
//        "inputs": [...], "outputs": [...] }}
//     ],
//     "inputs": [0],
//     "outputs": [[2, 0]]
//   }
//
// - Nodes are in topological order; an input reference [n, k] is output k of
//   node n (k > 0 only for ops with several results, e.g. split).
// - "inputs" lists the input nodes in the function's parameter order; "outputs"
//   the results in order.
// - "const" nodes name a constant by its index in the tessera_graph_t.
// - Attribute values: JSON integers are int, JSON numbers with a fraction or
//   exponent float, strings string, true/false bool, {"dtype": "f32"} a dtype,
//   arrays of integers ints, arrays with any non-integer floats. An empty
//   array is ints. Infinities and NaN, which JSON lacks, are written
//   {"float": "inf"}, {"float": "-inf"}, {"float": "nan"} (alone or in an
//   array, which makes it floats).
// - A "composite" node is an outlined pattern match ("<plugin>.<pattern>");
//   its "body" is a graph of the same format (no format/version/symbol) whose
//   inputs are bound to the node's inputs in order.
// - Symbolic dims (ABI 1.4, only for plugins that take them): the top level
//   lists the graph's symbols,
//     "symbols": [{"name": "N", "lo": 1, "hi": 8, "runtime": false,
//                  "example": 256}, ...]
//   (hi -1: unbounded; example: tessera_symbol_t's; composite bodies use the
//   top level's list), and a type
//   with symbolic dims has -1 in "shape" and "symbols" beside it, one entry
//   per dim: -1 for a constant dim, else the symbol's index,
//     {"dtype": "f32", "shape": [-1, 3, 224, 224], "symbols": [0, -1, -1, -1]}.
//   An op's int or ints attribute that holds symbolic dims (a resize to
//   [H, W]) has -1 at those values and "attr_symbols" beside "attrs":
//     "attrs": {"size": [-1, -1]}, "attr_symbols": {"size": [1, 2]}.
//   The function is called with the symbols' values (call_symbolic, in this
//   order); resolveGraph() gives the graph at those values, attributes
//   included.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessera::sdk {

inline constexpr const char *kGraphFormat = "tessera.graph";
inline constexpr int kGraphFormatVersion = 1;

/// Output `index` of node `node`.
struct NodeRef {
  int64_t node = 0;
  int64_t index = 0;
  friend bool operator==(const NodeRef &a, const NodeRef &b) {
    return a.node == b.node && a.index == b.index;
  }
};

struct Graph;

struct Node {
  enum class Kind { Input, Const, Op, Composite };
  Kind kind = Kind::Op;
  std::string name;
  std::string op;               // Op: core op name; Composite: "<plugin>.<pattern>"
  std::vector<NodeRef> inputs;  // Op, Composite
  Attrs attrs;                  // Op
  std::vector<TensorType> outputs;
  int64_t constant = -1;        // Const: index into the graph's constants
  std::shared_ptr<Graph> body;  // Composite
};

struct Graph {
  std::string symbol;
  std::vector<Symbol> symbols; // ABI 1.4: the top level's (empty: static)
  std::vector<Node> nodes;
  std::vector<int64_t> inputs;   // node indices of the "input" nodes, in order
  std::vector<NodeRef> outputs;

  /// The type of a reference.
  const TensorType &typeOf(const NodeRef &r) const {
    return nodes.at(size_t(r.node)).outputs.at(size_t(r.index));
  }
};

namespace detail {

inline const char *kindName(Node::Kind k) {
  switch (k) {
  case Node::Kind::Input: return "input";
  case Node::Kind::Const: return "const";
  case Node::Kind::Op: return "op";
  case Node::Kind::Composite: return "composite";
  }
  return "?";
}

inline nlohmann::json typeToJson(const TensorType &t) {
  nlohmann::json j = {{"dtype", dtypeName(t.dtype)}, {"shape", t.shape}};
  if (!t.isStatic())
    j["symbols"] = t.symbols;
  return j;
}

/// A float; JSON has no infinities or NaN, so those are {"float": "inf"}.
inline nlohmann::json floatToJson(double d) {
  if (std::isnan(d))
    return {{"float", "nan"}};
  if (std::isinf(d))
    return {{"float", d > 0 ? "inf" : "-inf"}};
  return d; // an integral double still prints as a float ("2.0")
}

inline nlohmann::json attrToJson(const AttrValue &v) {
  return std::visit(
      [](const auto &x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, DLDataType>)
          return {{"dtype", dtypeName(x)}};
        else if constexpr (std::is_same_v<T, double>)
          return floatToJson(x);
        else if constexpr (std::is_same_v<T, std::vector<double>>) {
          nlohmann::json a = nlohmann::json::array();
          for (double d : x)
            a.push_back(floatToJson(d));
          return a;
        } else
          return x;
      },
      v);
}

/// {"float": "inf" | "-inf" | "nan"}, or nullopt for anything else.
inline std::optional<double> specialFloat(const nlohmann::json &j) {
  if (!j.is_object() || j.size() != 1 || !j.contains("float") || !j["float"].is_string())
    return std::nullopt;
  const std::string s = j["float"].get<std::string>();
  if (s == "inf")
    return HUGE_VAL;
  if (s == "-inf")
    return -HUGE_VAL;
  if (s == "nan")
    return std::nan("");
  return std::nullopt;
}

inline nlohmann::json graphToJson(const Graph &g) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const Node &n : g.nodes) {
    nlohmann::json j;
    j["kind"] = kindName(n.kind);
    if (!n.op.empty())
      j["op"] = n.op;
    j["name"] = n.name;
    if (n.kind == Node::Kind::Op || n.kind == Node::Kind::Composite) {
      nlohmann::json ins = nlohmann::json::array();
      for (const NodeRef &r : n.inputs)
        ins.push_back({r.node, r.index});
      j["inputs"] = ins;
    }
    if (n.kind == Node::Kind::Op) {
      nlohmann::json attrs = nlohmann::json::object();
      for (const auto &[k, v] : n.attrs)
        attrs[k] = attrToJson(v);
      j["attrs"] = attrs;
      if (!n.attrs.symbols().empty()) {
        nlohmann::json syms = nlohmann::json::object();
        for (const auto &[k, v] : n.attrs.symbols())
          syms[k] = v;
        j["attr_symbols"] = syms;
      }
    }
    if (n.kind == Node::Kind::Const)
      j["constant"] = n.constant;
    nlohmann::json outs = nlohmann::json::array();
    for (const TensorType &t : n.outputs)
      outs.push_back(typeToJson(t));
    j["outputs"] = outs;
    if (n.kind == Node::Kind::Composite && n.body)
      j["body"] = graphToJson(*n.body);
    nodes.push_back(std::move(j));
  }
  nlohmann::json outs = nlohmann::json::array();
  for (const NodeRef &r : g.outputs)
    outs.push_back({r.node, r.index});
  return {{"nodes", nodes}, {"inputs", g.inputs}, {"outputs", outs}};
}

[[noreturn]] inline void badGraph(const std::string &where, const std::string &what) {
  throw Error("tessera.graph JSON: " + where + ": " + what);
}

inline TensorType typeFromJson(const nlohmann::json &j, size_t numSymbols,
                               const std::string &where) {
  if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") || !j["dtype"].is_string() ||
      !j["shape"].is_array())
    badGraph(where, "a type needs \"dtype\" (string) and \"shape\" (array)");
  TensorType t;
  auto dt = dtypeFromName(j["dtype"].get<std::string>());
  if (!dt)
    badGraph(where, "unknown dtype '" + j["dtype"].get<std::string>() + "'");
  t.dtype = *dt;
  if (j.contains("symbols")) {
    const auto &sj = j["symbols"];
    if (!sj.is_array() || sj.size() != j["shape"].size())
      badGraph(where, "a type's \"symbols\" must be an array with one entry per dim");
    for (const auto &k : sj) {
      if (!k.is_number_integer() || k.get<int64_t>() < -1 ||
          k.get<int64_t>() >= int64_t(numSymbols))
        badGraph(where, "a dim's symbol " + k.dump() + " is not -1 or an index into the " +
                            std::to_string(numSymbols) + " symbols of the graph");
      t.symbols.push_back(k.get<int32_t>());
    }
    if (t.isStatic())
      t.symbols.clear();
  }
  for (const auto &d : j["shape"]) {
    const bool symbolic = t.symbolOf(t.shape.size()) >= 0;
    if (!d.is_number_integer() || (symbolic ? d.get<int64_t>() != -1 : d.get<int64_t>() < 0))
      badGraph(where, "shape entries must be non-negative integers (-1 for a symbolic dim)");
    t.shape.push_back(d.get<int64_t>());
  }
  if (t.isStatic() && !shapeFits(t.shape))
    badGraph(where, "shape " + t.str() + " has more than 2^48 elements");
  return t;
}

inline AttrValue attrFromJson(const nlohmann::json &j, const std::string &where) {
  if (j.is_boolean())
    return j.get<bool>();
  if (j.is_number_integer())
    return j.get<int64_t>();
  if (j.is_number())
    return j.get<double>();
  if (j.is_string())
    return j.get<std::string>();
  if (auto f = specialFloat(j))
    return *f;
  if (j.is_object() && j.size() == 1 && j.contains("dtype") && j["dtype"].is_string()) {
    auto dt = dtypeFromName(j["dtype"].get<std::string>());
    if (!dt)
      badGraph(where, "unknown dtype '" + j["dtype"].get<std::string>() + "'");
    return *dt;
  }
  if (j.is_array()) {
    bool allInts = true;
    std::vector<double> floats;
    for (const auto &e : j) {
      std::optional<double> f = specialFloat(e);
      if (!f && !e.is_number())
        badGraph(where, "array attributes hold numbers only");
      allInts = allInts && !f && e.is_number_integer();
      floats.push_back(f ? *f : e.get<double>());
    }
    if (allInts)
      return j.get<std::vector<int64_t>>();
    return floats;
  }
  badGraph(where, "unsupported attribute value " + j.dump());
}

inline NodeRef refFromJson(const nlohmann::json &j, size_t limit, const std::string &where) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() || !j[1].is_number_integer())
    badGraph(where, "a reference is [node, output]");
  NodeRef r{j[0].get<int64_t>(), j[1].get<int64_t>()};
  if (r.node < 0 || size_t(r.node) >= limit || r.index < 0)
    badGraph(where, "reference [" + std::to_string(r.node) + ", " + std::to_string(r.index) +
                        "] does not name an earlier node");
  return r;
}

inline Graph graphFromJson(const nlohmann::json &j, size_t numSymbols, const std::string &where) {
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array())
    badGraph(where, "a graph needs \"nodes\" (array)");
  Graph g;
  const auto &nodes = j["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto &nj = nodes[i];
    const std::string at = where + " node " + std::to_string(i);
    if (!nj.is_object() || !nj.contains("kind") || !nj["kind"].is_string())
      badGraph(at, "a node needs \"kind\"");
    Node n;
    const std::string kind = nj["kind"].get<std::string>();
    if (kind == "input")
      n.kind = Node::Kind::Input;
    else if (kind == "const")
      n.kind = Node::Kind::Const;
    else if (kind == "op")
      n.kind = Node::Kind::Op;
    else if (kind == "composite")
      n.kind = Node::Kind::Composite;
    else
      badGraph(at, "unknown kind '" + kind + "'");
    if (nj.contains("name") && nj["name"].is_string())
      n.name = nj["name"].get<std::string>();
    if (nj.contains("op") && nj["op"].is_string())
      n.op = nj["op"].get<std::string>();
    if ((n.kind == Node::Kind::Op || n.kind == Node::Kind::Composite) && n.op.empty())
      badGraph(at, "an op node needs \"op\"");
    if (nj.contains("inputs")) {
      if (!nj["inputs"].is_array())
        badGraph(at, "\"inputs\" must be an array");
      for (const auto &r : nj["inputs"])
        n.inputs.push_back(refFromJson(r, i, at));
    }
    if (nj.contains("attrs")) {
      if (!nj["attrs"].is_object())
        badGraph(at, "\"attrs\" must be an object");
      for (const auto &[k, v] : nj["attrs"].items())
        n.attrs.set(k, attrFromJson(v, at + " attribute '" + k + "'"));
    }
    if (nj.contains("attr_symbols")) {
      if (!nj["attr_symbols"].is_object())
        badGraph(at, "\"attr_symbols\" must be an object");
      for (const auto &[k, v] : nj["attr_symbols"].items()) {
        const AttrValue *a = n.attrs.find(k);
        const size_t count = !a ? 0
                             : std::holds_alternative<int64_t>(*a)
                                 ? 1
                                 : std::holds_alternative<std::vector<int64_t>>(*a)
                                       ? std::get<std::vector<int64_t>>(*a).size()
                                       : 0;
        if (!v.is_array() || v.size() != count || count == 0)
          badGraph(at, "\"attr_symbols\" of '" + k +
                           "' must list one entry per value of an int or ints attribute");
        std::vector<int32_t> syms;
        for (const auto &e : v) {
          if (!e.is_number_integer() || e.get<int64_t>() < -1 ||
              e.get<int64_t>() >= int64_t(numSymbols))
            badGraph(at, "attribute '" + k + "': symbol " + e.dump() +
                             " is not -1 or an index into the graph's symbols");
          syms.push_back(e.get<int32_t>());
        }
        n.attrs.setSymbols(k, std::move(syms));
      }
    }
    if (!nj.contains("outputs") || !nj["outputs"].is_array() || nj["outputs"].empty())
      badGraph(at, "a node needs \"outputs\" (a non-empty array of types)");
    for (const auto &t : nj["outputs"])
      n.outputs.push_back(typeFromJson(t, numSymbols, at));
    if (n.kind == Node::Kind::Const) {
      if (!nj.contains("constant") || !nj["constant"].is_number_integer() ||
          nj["constant"].get<int64_t>() < 0)
        badGraph(at, "a const node needs \"constant\" (an index)");
      n.constant = nj["constant"].get<int64_t>();
    }
    if (n.kind == Node::Kind::Composite) {
      if (!nj.contains("body"))
        badGraph(at, "a composite node needs \"body\"");
      n.body = std::make_shared<Graph>(graphFromJson(nj["body"], numSymbols, at + " body"));
    }
    g.nodes.push_back(std::move(n));
  }
  for (const auto &r : g.nodes)
    for (const NodeRef &in : r.inputs)
      if (size_t(in.index) >= g.nodes[size_t(in.node)].outputs.size())
        badGraph(where, "reference to output " + std::to_string(in.index) + " of node " +
                            std::to_string(in.node) + ", which has fewer outputs");
  if (j.contains("inputs")) {
    for (const auto &x : j["inputs"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 ||
          size_t(x.get<int64_t>()) >= g.nodes.size() ||
          g.nodes[size_t(x.get<int64_t>())].kind != Node::Kind::Input)
        badGraph(where, "\"inputs\" must list input nodes");
      g.inputs.push_back(x.get<int64_t>());
    }
  }
  if (!j.contains("outputs") || !j["outputs"].is_array())
    badGraph(where, "a graph needs \"outputs\"");
  for (const auto &r : j["outputs"]) {
    NodeRef ref = refFromJson(r, g.nodes.size(), where + " outputs");
    if (size_t(ref.index) >= g.nodes[size_t(ref.node)].outputs.size())
      badGraph(where, "an output names a missing result");
    g.outputs.push_back(ref);
  }
  return g;
}

inline std::vector<Symbol> symbolsFromJson(const nlohmann::json &j) {
  std::vector<Symbol> out;
  if (!j.contains("symbols"))
    return out;
  if (!j["symbols"].is_array())
    badGraph("graph", "\"symbols\" must be an array");
  for (const auto &sj : j["symbols"]) {
    const std::string at = "graph symbol " + std::to_string(out.size());
    if (!sj.is_object() || !sj.contains("name") || !sj["name"].is_string() || !sj.contains("lo") ||
        !sj["lo"].is_number_integer() || !sj.contains("hi") || !sj["hi"].is_number_integer())
      badGraph(at, "a symbol needs \"name\" (string), \"lo\" and \"hi\" (integers)");
    Symbol s{sj["name"].get<std::string>(), sj["lo"].get<int64_t>(), sj["hi"].get<int64_t>(),
             sj.contains("runtime") && sj["runtime"].is_boolean() && sj["runtime"].get<bool>()};
    if (sj.contains("example") && sj["example"].is_number_integer())
      s.example = sj["example"].get<int64_t>();
    if (s.lo < 0 || s.hi < -1 || (s.hi >= 0 && s.hi < s.lo))
      badGraph(at, "bounds " + std::to_string(s.lo) + ".." + std::to_string(s.hi) +
                       " are not 0 <= lo <= hi (hi -1: unbounded)");
    out.push_back(std::move(s));
  }
  return out;
}

inline TensorType resolveType(const TensorType &t, std::span<const int64_t> values) {
  TensorType out{t.dtype, t.shape, {}};
  for (size_t i = 0; i < out.shape.size(); ++i)
    if (int32_t k = t.symbolOf(i); k >= 0)
      out.shape[i] = values[size_t(k)];
  return out;
}

inline Graph resolveBody(const Graph &g, std::span<const int64_t> values) {
  Graph out;
  out.symbol = g.symbol;
  out.inputs = g.inputs;
  out.outputs = g.outputs;
  out.nodes.reserve(g.nodes.size());
  for (const Node &n : g.nodes) {
    Node r = n;
    for (TensorType &t : r.outputs)
      t = resolveType(t, values);
    r.attrs.resolveSymbols(values);
    if (n.body)
      r.body = std::make_shared<Graph>(resolveBody(*n.body, values));
    out.nodes.push_back(std::move(r));
  }
  return out;
}

} // namespace detail

/// Graph -> JSON text (with the format header).
inline std::string writeGraph(const Graph &g, int indent = -1) {
  nlohmann::json j = detail::graphToJson(g);
  j["format"] = kGraphFormat;
  j["version"] = kGraphFormatVersion;
  j["symbol"] = g.symbol;
  if (!g.symbols.empty()) {
    nlohmann::json syms = nlohmann::json::array();
    for (const Symbol &s : g.symbols)
      syms.push_back({{"name", s.name},
                      {"lo", s.lo},
                      {"hi", s.hi},
                      {"runtime", s.runtime},
                      {"example", s.example}});
    j["symbols"] = syms;
  }
  return j.dump(indent);
}

/// Whether some dim of the graph is symbolic.
inline bool isSymbolic(const Graph &g) { return !g.symbols.empty(); }

/// The values of `symbols`' examples (tessera_symbol_t::example), in order.
inline std::vector<int64_t> exampleValues(const std::vector<Symbol> &symbols) {
  std::vector<int64_t> v;
  for (const Symbol &s : symbols)
    v.push_back(s.example);
  return v;
}

/// The graph at concrete values of its symbols (in Graph::symbols' order):
/// every dim a constant, no symbols. Throws Error when a value is missing or
/// (with `checkBounds`; not for the examples) outside its symbol's bounds,
/// or a shape grows past 2^48 elements.
inline Graph resolveGraph(const Graph &g, std::span<const int64_t> values,
                          bool checkBounds = true) {
  if (values.size() != g.symbols.size())
    throw Error("graph '" + g.symbol + "' has " + std::to_string(g.symbols.size()) +
                    " symbols, but " + std::to_string(values.size()) + " values were given",
                TESSERA_STATUS_INVALID_ARGUMENT);
  for (size_t k = 0; k < values.size(); ++k) {
    const Symbol &s = g.symbols[k];
    if (checkBounds && (values[k] < s.lo || (s.hi >= 0 && values[k] > s.hi)))
      throw Error("symbol " + std::to_string(k) + " ('" + s.name + "') of graph '" + g.symbol +
                      "' is " + std::to_string(values[k]) + ", outside its bounds " +
                      std::to_string(s.lo) + ".." + (s.hi >= 0 ? std::to_string(s.hi) : ""),
                  TESSERA_STATUS_INVALID_ARGUMENT);
  }
  Graph out = detail::resolveBody(g, values);
  out.symbols.clear();
  for (const Node &n : out.nodes)
    for (const TensorType &t : n.outputs)
      if (!shapeFits(t.shape))
        throw Error("graph '" + g.symbol + "': node '" + n.name + "' would be " + t.str() +
                        ", more than 2^48 elements",
                    TESSERA_STATUS_INVALID_ARGUMENT);
  return out;
}

/// JSON text -> Graph; throws Error naming what is wrong and where.
inline Graph readGraph(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded())
    throw Error("tessera.graph JSON: not valid JSON");
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>() != kGraphFormat)
    throw Error("tessera.graph JSON: \"format\" is not \"tessera.graph\"");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int64_t>() != kGraphFormatVersion)
    throw Error("tessera.graph JSON: unsupported \"version\" (this SDK reads version 1)");
  try {
    std::vector<Symbol> symbols = detail::symbolsFromJson(j);
    Graph g = detail::graphFromJson(j, symbols.size(), "graph");
    g.symbols = std::move(symbols);
    if (j.contains("symbol") && j["symbol"].is_string())
      g.symbol = j["symbol"].get<std::string>();
    return g;
  } catch (const nlohmann::json::exception &e) {
    throw Error(std::string("tessera.graph JSON: ") + e.what());
  }
}

} // namespace tessera::sdk
