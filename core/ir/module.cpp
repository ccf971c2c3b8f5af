//===- ir/module.cpp - A module of named global functions ----------------===//
#include "ir/module.h"

#include "ir/visit.h"

#include <algorithm>

namespace tessera::ir {

void Module::set(const std::string &global, Function fn) {
  auto it = index_.find(global);
  if (it != index_.end()) {
    functions_[it->second].second = std::move(fn);
    return;
  }
  index_.emplace(global, functions_.size());
  functions_.emplace_back(global, std::move(fn));
}

bool Module::erase(const std::string &global) {
  auto it = index_.find(global);
  if (it == index_.end())
    return false;
  functions_.erase(functions_.begin() + long(it->second));
  index_.clear();
  for (size_t i = 0; i < functions_.size(); ++i)
    index_.emplace(functions_[i].first, i);
  return true;
}

Function Module::find(const std::string &global) const {
  auto it = index_.find(global);
  return it == index_.end() ? nullptr : functions_[it->second].second;
}

std::string Module::position(const ExprNode &node) const {
  if (!node.span().known())
    return "";
  return fmt::format("{}:{}:{}", sourceFile_.empty() ? "<input>" : sourceFile_,
                     node.span().line, node.span().col);
}

Expected<Type> Module::globalType(const std::string &global) const {
  Function f = find(global);
  if (!f)
    return Error::format("no global function '@{}' in module '{}'", global, name_);
  return f->type();
}

Status Module::checkNoRecursion() const {
  // The globals each function calls (from nested functions too), by index.
  std::vector<std::vector<size_t>> callees(functions_.size());
  for (size_t f = 0; f < functions_.size(); ++f) {
    for (const ExprNode *n : postOrder(functions_[f].second->body(), /*intoFunctions=*/true)) {
      const auto *c = n->as<CallNode>();
      if (!c || c->calleeKind() != CallNode::CalleeKind::Global)
        continue;
      auto it = index_.find(c->global());
      if (it != index_.end() && std::find(callees[f].begin(), callees[f].end(), it->second) ==
                                    callees[f].end())
        callees[f].push_back(it->second);
    }
  }
  // Depth first, iteratively; a callee on the current path closes a cycle.
  enum : char { kNew, kOnPath, kDone };
  std::vector<char> state(functions_.size(), kNew);
  for (size_t root = 0; root < functions_.size(); ++root) {
    if (state[root] != kNew)
      continue;
    std::vector<std::pair<size_t, size_t>> path{{root, 0}}; // (function, next callee)
    state[root] = kOnPath;
    while (!path.empty()) {
      auto &[f, next] = path.back();
      if (next == callees[f].size()) {
        state[f] = kDone;
        path.pop_back();
        continue;
      }
      const size_t g = callees[f][next++];
      if (state[g] == kOnPath) {
        size_t from = 0;
        while (path[from].first != g)
          ++from;
        std::string cycle = "@" + functions_[g].first + " calls ";
        for (size_t k = from + 1; k < path.size(); ++k)
          cycle += "@" + functions_[path[k].first].first + ", which calls ";
        cycle += from + 1 == path.size() ? "itself" : "@" + functions_[g].first;
        return Error::format("{}: a recursive call never returns (the IR has no control flow)",
                             cycle);
      }
      if (state[g] == kNew) {
        state[g] = kOnPath;
        path.emplace_back(g, 0);
      }
    }
  }
  return okStatus();
}

} // namespace tessera::ir
