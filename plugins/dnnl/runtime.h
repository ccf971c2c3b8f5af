//===- plugins/dnnl/runtime.h - The dnnl plugin's runtime module -*- C++ -*-===//
//
// DnnlModule: the JsonRuntime subclass that runs each function as oneDNN
// primitives. The SDK base keeps the graphs and constants, validates calls
// and saves/loads (nothing ISA-specific is saved: the primitives are rebuilt
// at load and oneDNN dispatches on the CPU it finds).
//
//   init(): one Plan per function (plan.h): primitives built, constant
//           weights reordered into the layouts they want, arena planned;
//           a constant read only through its reordered copy has its plain
//           bytes released (the SDK asks for them back to save), so the
//           module holds each weight once;
//   run():  takes a Context (arena + scratchpad + memory objects + stream)
//           from a free list, binds the caller's tensors zero-copy, executes
//           the steps, returns the Context. Contexts are created only when
//           more calls run at once than ever before, so a warm module runs
//           without allocating, and concurrent calls never share one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan.h"

#include "tessera/sdk/json_runtime.hpp"

#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace tessera::dnnl_plugin {

class DnnlModule final : public sdk::JsonRuntime {
public:
  /// The module factory that loads these modules.
  static constexpr const char *kTypeKey = "dnnl";

  explicit DnnlModule(std::vector<sdk::JsonFunction> functions);
  ~DnnlModule() override;

  /// Everything per call, for one function (runtime.cpp).
  struct Context;

  /// "json" (the graphs, as every JsonRuntime) or "plan": each function's
  /// oneDNN steps, memory, and what became of each constant.
  std::string source(std::string_view format) const override;

protected:
  void init(std::span<const sdk::JsonFunction> functions) override;
  void run(const sdk::JsonFunction &fn, std::span<const DLTensor *const> inputs,
           std::span<const DLTensor *const> outputs) const override;

private:
  std::unique_ptr<Context> acquire(size_t function) const;
  void release(size_t function, std::unique_ptr<Context> ctx) const;

  std::vector<std::unique_ptr<const Plan>> plans_; // per function, by index
  mutable std::mutex mutex_;
  mutable std::vector<std::vector<std::unique_ptr<Context>>> free_; // per function
};

} // namespace tessera::dnnl_plugin
