//===- plugins/dnnl/runtime.h - The dnnl plugin's runtime module -*- C++ -*-===//
//
// DnnlModule: the JsonRuntime subclass that runs each function as oneDNN
// primitives. The SDK base keeps the graphs and constants, validates calls
// and saves/loads (nothing ISA-specific is saved: the primitives are rebuilt
// at load and oneDNN dispatches on the CPU it finds).
//
//   init(): one PrimitivePlan per static function (plan.h): primitives built, constant
//           weights reordered into the layouts they want, arena planned;
//           a constant read only through its reordered copy has its plain
//           bytes released (the SDK asks for them back to save), so the
//           module holds each weight once. A module from codegen, which the
//           compiler saves and never runs, only checks at init that every
//           primitive and reorder can be built, and copies no weight (ViT-B/16:
//           330 MB); its plans are built at its first run, if it has one;
//   run():  takes a Context (arena + scratchpad + memory objects + stream +
//           the primitives for the caller's OpenMP thread count, which the
//           runtime sets to the session's) from a free list, binds the
//           caller's tensors zero-copy, executes the steps, returns the
//           Context. Contexts are created only when more calls run at once
//           (or at another thread count) than ever before, so a warm module
//           runs without allocating, and concurrent calls never share one.
//   A symbolic function (ABI 1.4) gets a plan per shape, built at the first
//   call at that shape (prepareShape) and cached by the SDK base; its
//   weights are reordered per plan, since oneDNN picks their layout per shape.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan.h"

#include "tessera/sdk/json_runtime.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace tessera::dnnl_plugin {

class DnnlModule final : public sdk::JsonRuntime {
public:
  /// The module factory that loads these modules.
  static constexpr const char *kTypeKey = "dnnl";

  /// Where the module comes from: codegen (checked at init, plans built at
  /// the first run) or a saved module being loaded (plans built at init).
  enum class Origin { Codegen, Load };

  DnnlModule(std::vector<sdk::JsonFunction> functions, Origin origin);
  ~DnnlModule() override;

  /// Everything per call, for one plan (runtime.cpp).
  struct Context;
  /// One plan and its calls' state (runtime.cpp).
  class Runner;

  /// "json" (the graphs, as every JsonRuntime) or "plan": each function's
  /// oneDNN steps, memory, and what became of each constant.
  std::string source(std::string_view format) const override;

protected:
  void init(std::span<const sdk::JsonFunction> functions) override;
  void run(const sdk::JsonFunction &fn, std::span<const DLTensor *const> inputs,
           std::span<const DLTensor *const> outputs) const override;
  /// A symbolic function at one shape: its plan, built for that shape (the
  /// base caches the kShapeCacheSize most recent shapes of each function).
  std::shared_ptr<const void> prepareShape(const sdk::JsonFunction &fn,
                                           const sdk::Graph &resolved) const override;
  void runShape(const sdk::JsonFunction &fn, const Shape &shape,
                std::span<const DLTensor *const> inputs,
                std::span<const DLTensor *const> outputs) const override;

private:
  /// The runners of the static functions (null for symbolic ones), built
  /// now if the module came from codegen.
  const std::vector<std::unique_ptr<const Runner>> &runners() const;

  Origin origin_;
  mutable std::vector<std::unique_ptr<const Runner>> runners_; // per function, by index
  mutable std::once_flag runnersOnce_;                         // Codegen: builds runners_
};

} // namespace tessera::dnnl_plugin
