//===- unit/shipped_plugins.h - The build tree's plugins, loaded -*- C++ -*-===//
//
// For tests that compile or partition through real plugins: a registry of
// the plugins built in this tree (json, dnnl, ccompiler: the folder of
// TESSERA_JSON_PLUGIN), discovered once (plugin_test_harness.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plugin/registry.h"

namespace tessera::test {

const plugin::PluginRegistry &shippedPlugins();

} // namespace tessera::test
