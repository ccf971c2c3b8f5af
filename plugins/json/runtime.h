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
// A symbolic function (ABI 1.4) is checked at init at its symbols' examples
// and gets a Program per shape at run time (prepareShape, cached by the base).
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
  /// Symbolic functions (ABI 1.4): a Program per shape, which the SDK base
  /// caches.
  std::shared_ptr<const void> prepareShape(const sdk::JsonFunction &fn,
                                           const sdk::Graph &resolved) const override;
  void runShape(const sdk::JsonFunction &fn, const Shape &shape,
                std::span<const DLTensor *const> inputs,
                std::span<const DLTensor *const> outputs) const override;

public:
  /// A function's graph as a straight-line program (runtime.cpp).
  struct Program;

private:
  static void execute(const Program &p, std::span<const DLTensor *const> inputs,
                      std::span<const DLTensor *const> outputs);

  std::vector<std::unique_ptr<const Program>> programs_; // per function, by index
};

} // namespace tessera::json_plugin
