//===- compile/output_names.cpp - The names of a model's outputs -----------===//
//
// How lowerMain names the model outputs and how withOutputNames keeps those
// names through the passes (compile/lower.h).
//
//===----------------------------------------------------------------------===//
#include "compile/lower.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace tessera::compile {

using namespace ir;

namespace {

/// The names of the values `main` returns (a tuple body's fields, else the
/// body), one per tensor: a value's name when it has one that no other
/// returned value has and it is not a parameter (whose name is the input's),
/// else "output_<i>". Empty when a returned value is not a tensor or a
/// sequence.
std::vector<std::string> returnedNames(const FunctionNode &main) {
  const Expr &body = main.body();
  std::vector<const ExprNode *> leaves;
  if (const auto *t = body->as<TupleNode>()) {
    for (const Expr &f : t->fields())
      leaves.push_back(f.get());
  } else {
    leaves.push_back(body.get());
  }
  std::map<std::string, int> uses;
  for (const ExprNode *l : leaves) {
    if (!l->type().isTensor() && !l->type().isSequence())
      return {};
    ++uses[l->name()];
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const ExprNode *l = leaves[i];
    // All-digit names are the text format's numbering of unnamed values.
    const std::string &n = l->name();
    bool numbered = std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
    bool usable = !numbered && l->kind() != ExprKind::Var && uses[n] == 1;
    names.push_back(usable ? l->name() : fmt::format("output_{}", i));
  }
  return names;
}

} // namespace

/// The names of the model outputs (see lowerMain): `count` of them.
std::vector<std::string> outputNames(const FunctionNode &main, size_t count) {
  std::vector<std::string> names;
  std::string joined = main.attrs().getString("output_names");
  if (!joined.empty()) {
    size_t start = 0;
    while (true) {
      size_t end = joined.find(';', start);
      names.push_back(joined.substr(start, end == std::string::npos ? end : end - start));
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
    if (names.size() == count)
      return names;
  }
  names = returnedNames(main);
  if (names.size() == count)
    return names;
  names.clear();
  for (size_t i = 0; i < count; ++i)
    names.push_back(fmt::format("output_{}", i));
  return names;
}

Function withOutputNames(const Function &main) {
  if (main->attrs().has("output_names"))
    return main;
  std::vector<std::string> names = returnedNames(*main);
  if (names.empty())
    return main;
  Attrs attrs = main->attrs();
  attrs.set("output_names", fmt::format("{}", fmt::join(names, ";")));
  return makeFunction(main->params(), main->body(), std::move(attrs), main->name(), main->span());
}

} // namespace tessera::compile
