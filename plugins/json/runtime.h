//===- plugins/json/runtime.h - The json plugin's runtime module -*- C++ -*-===//
//
// InterpreterModule: the JsonRuntime subclass that executes a function's
// graph node by node with the kernels of kernels.h. The SDK base does the
// bookkeeping (symbols, argument checks, save/load, source); this class only
//   init(): turns each graph into a Program (validating every node, fusing
//           conv2d/dense + bias + activation composites, pre-packing
//           constant weights), once;
//   run():  executes a Program with the caller's tensors, allocating the
//           intermediates of that call only.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/json_runtime.hpp"

#include <memory>
#include <span>
#include <vector>

namespace tessera::json_plugin {

class InterpreterModule final : public sdk::JsonRuntime {
public:
  /// The module factory that loads these modules.
  static constexpr const char *kTypeKey = "json";

  explicit InterpreterModule(std::vector<sdk::JsonFunction> functions);
  ~InterpreterModule() override;

protected:
  void init(std::span<const sdk::JsonFunction> functions) override;
  void run(const sdk::JsonFunction &fn, std::span<const DLTensor *const> inputs,
           std::span<const DLTensor *const> outputs) const override;

public:
  /// A function's graph as a straight-line program (runtime.cpp).
  struct Program;

private:
  std::vector<std::unique_ptr<const Program>> programs_; // per function, by index
};

} // namespace tessera::json_plugin
