//===- tests/unit/test_targets.h - The partition test targets -*- C++ -*-===//
//
// The test targets of tests/plugins/targets (tgt_a, tgt_b, tgt_picky,
// tgt_hook, tgt_hook_bad, tgt_prune: real plugins with deterministic
// checkers), discovered once from TESSERA_TARGETS_DIR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plugin/registry.h"

namespace tessera::test {

/// Discovered without the probe: the test targets are well-behaved.
inline const plugin::PluginRegistry &testTargets() {
  static const plugin::PluginRegistry registry = [] {
    plugin::DiscoveryOptions options;
    options.searchPath = std::vector<plugin::SearchEntry>{{TESSERA_TARGETS_DIR, "test"}};
    options.probe = false;
    return plugin::PluginRegistry::discover(options);
  }();
  return registry;
}

} // namespace tessera::test
