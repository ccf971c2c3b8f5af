//===- plugins/json/checker.h - Which ops the json plugin takes -*- C++ -*-===//
//
// The checker answers the partitioner: the core ops the plugin may take
// (ops()), the composite patterns it would like outlined (patterns()), and,
// per op call, yes or no with a reason (check()). The answer comes from the
// same prepareOp() the runtime uses, so what the checker accepts runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <string>
#include <utility>
#include <vector>

namespace tessera::json_plugin {

class JsonChecker final : public sdk::Checker {
public:
  std::vector<std::string> ops() const override;
  std::vector<std::pair<std::string, std::string>> patterns() const override;
  bool check(const sdk::OpDesc &op, std::string &reason) const override;
  /// Symbolic dims: a Program per shape at run time (runtime.h).
  bool takesSymbolicDims() const override { return true; }
  /// Cost hint for placement by measurement: a region with a convolution
  /// or a matrix product is estimated at 0.2x the host's speed (its plain
  /// loops against the host's compiled code), others are not estimated.
  bool estimatesRegions() const override { return true; }
  double estimateRegion(const sdk::GraphView &region, std::string &reason) const override;
};

} // namespace tessera::json_plugin
