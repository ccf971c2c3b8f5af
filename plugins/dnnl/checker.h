//===- plugins/dnnl/checker.h - Which ops the dnnl plugin takes -*- C++ -*-===//
//
// The checker answers the partitioner: the core ops the plugin takes, the
// composite patterns it wants outlined ("dnnl.<name>"), and per op call yes
// or no with a reason naming the plugin, the op and what is unsupported
// ("dnnl: conv2d: only f32, got f16"). A call is accepted only when
// analyzeOp() accepts it and its primitive can be built (the same plan
// builder the runtime uses, on a one-node graph), so what the checker takes
// runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <string>
#include <utility>
#include <vector>

namespace tessera::dnnl_plugin {

class DnnlChecker final : public sdk::Checker {
public:
  std::vector<std::string> ops() const override;
  std::vector<std::pair<std::string, std::string>> patterns() const override;
  bool check(const sdk::OpDesc &op, std::string &reason) const override;
  bool checkPattern(std::string_view pattern, const std::vector<sdk::OpDesc> &ops,
                    std::string &reason) const override;
  /// Symbolic dims: every shape gets its own primitives at run time
  /// (runtime.h); an op is checked at its symbols' examples.
  bool takesSymbolicDims() const override { return true; }
};

} // namespace tessera::dnnl_plugin
