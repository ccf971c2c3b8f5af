//===- ir/module.h - A module of named global functions --------*- C++ -*-===//
//
// A Module maps global names (printed as @name) to Functions and keeps them in
// insertion order, so printing is deterministic. "main" is the entry point by
// convention. Functions are immutable; a pass changes a module by replacing
// functions.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::ir {

class Module {
public:
  explicit Module(std::string name = "module") : name_(std::move(name)) {}

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  /// The text file the spans of its nodes refer to (the parser sets it;
  /// empty for a module not parsed from text).
  const std::string &sourceFile() const { return sourceFile_; }
  void setSourceFile(std::string file) { sourceFile_ = std::move(file); }
  /// "FILE:LINE:COL" of `node` in sourceFile(), for Error::setPosition; empty
  /// when the node has no span (built by a pass or an importer).
  std::string position(const ExprNode &node) const;

  /// Adds or replaces (in place, keeping the order) a global function.
  void set(const std::string &global, Function fn);
  bool erase(const std::string &global);
  /// The function, or null.
  Function find(const std::string &global) const;
  bool has(const std::string &global) const { return index_.count(global) != 0; }

  /// (name, function) in insertion order.
  const std::vector<std::pair<std::string, Function>> &functions() const { return functions_; }
  size_t size() const { return functions_.size(); }

  /// The function type of a global, for building calls to it.
  Expected<Type> globalType(const std::string &global) const;

  /// An error when global functions call each other in a cycle ("@a calls
  /// @b, which calls @a"). The IR has no control flow, so such a call never
  /// returns: the verifier and the interpreter refuse it. Calls of globals
  /// the module lacks are not followed (the verifier reports them).
  Status checkNoRecursion() const;

private:
  std::string name_, sourceFile_;
  std::vector<std::pair<std::string, Function>> functions_;
  std::unordered_map<std::string, size_t> index_;
};

} // namespace tessera::ir
