//===- ir/module.cpp - A module of named global functions ----------------===//
#include "ir/module.h"

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

Expected<Type> Module::globalType(const std::string &global) const {
  Function f = find(global);
  if (!f)
    return Error::format("no global function '@{}' in module '{}'", global, name_);
  return f->type();
}

} // namespace tessera::ir
