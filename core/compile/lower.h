//===- compile/lower.h - @main to an executor plan -------------*- C++ -*-===//
//
// The middle of compile/compile.h, split so that it can be tested without
// LLVM code generation:
//   compileRegions  each region global (attribute Compiler) compiled by its
//                   plugin's codegen and saved through the plugin: the bytes
//                   of one ExternalModule section per region;
//   lowerMain       @main walked once in post order into a runtime::Plan:
//                   each parameter an Input buffer, each constant node a
//                   Constant buffer in the weights (64-byte aligned, each
//                   node once), each op call one Host step (its KernelCall,
//                   codegen/host_ops.h) writing new Activation buffers (and
//                   a u8 scratch Activation after its outputs when the
//                   kernel asks for scratch memory), each
//                   HostFused call (compile/fuse.h) one Host step computing
//                   its elementwise tree in one loop, each region call one
//                   External step; tuples and TupleGetItem
//                   are bookkeeping. The result's buffers become the model
//                   outputs: the step that writes one writes the Output
//                   buffer itself; an output that is an input, a constant or
//                   an earlier output is filled by a Copy step. Memory is
//                   then planned and the plan validated.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/host.h"
#include "ir/module.h"
#include "runtime/plan.h"
#include "support/error.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::plugin {
class PluginRegistry;
}

namespace tessera::compile {

/// One region global compiled by its plugin.
struct CompiledRegion {
  std::string global; // the global function's name in the module
  std::string symbol; // its global_symbol attribute (the module's function)
  std::string plugin; // the Compiler attribute
  std::string pluginVersion;
  std::string typeKey; // the module factory that loads the module
  // The artifact's ExternalModule section: runtime::externalModuleHeader(
  // typeKey), then Module::save()'s bytes, written there by the plugin.
  std::string moduleSection;
  /// The CPU the module's native code was compiled for (its plugin says;
  /// empty: none), and the ISA extensions that CPU has, which the artifact
  /// records and loading checks.
  std::string targetCpu;
  std::vector<std::string> cpuFeatures;
  /// With TESSERA_CODEGEN_CONSTANTS_AS_INPUTS: the tensors the call passes
  /// after the region's parameters (bridge::GraphHolder::extraInputs()).
  std::vector<ir::Tensor> extraInputs;
  int64_t ops = 0; // core op calls inside (composites counted by their ops)
  /// The region's symbols (ABI 1.4), in the order its function takes their
  /// values (bridge::GraphHolder::symbolDims()); empty when it is static.
  std::vector<int64_t> symbolDims;
  std::vector<std::string> symbolWhere; // where each first appears in the region
};

/// Compiles every region global of `m` (module order), one plugin module
/// each. Errors name the region and the plugin ("region
/// @tessera_main_json_0: plugin 'json' is not loaded", or the plugin's own
/// message with the region as context). `progress` gets one line per plugin.
Expected<std::vector<CompiledRegion>>
compileRegions(const ir::Module &m, const plugin::PluginRegistry *registry,
               const std::function<void(std::string_view)> &progress = {},
               const std::string &targetCpu = {});

struct LoweredModel {
  runtime::Plan plan;                           // memory planned and validated
  std::string weights;                          // the Weights section (plan.weightsBytes bytes)
  std::vector<codegen::HostStepSpec> hostSteps; // one per Host step, in order
};

/// Lowers @main of `m` (types inferred; partitioned or not). A call of a
/// region global becomes an External step on module `i` where `regions[i]`
/// is that global; plan.modules is one ModuleRef per region, in order
/// (section i = the i-th ExternalModule section). Output names come from
/// @main's attribute "output_names" (';'-separated, as the ONNX importer
/// sets it) when it has one per output, else per output from the returned
/// value's name when it has one that no other output has and it is not a
/// parameter, else "output_<i>".
Expected<LoweredModel> lowerMain(const ir::Module &m, const std::vector<CompiledRegion> &regions);

/// The names of @main's `count` outputs, as lowerMain gives them
/// (output_names.cpp).
std::vector<std::string> outputNames(const ir::FunctionNode &main, size_t count);

/// `main` with the attribute "output_names" set from the names of the
/// values it returns (when it has none and those names are usable, see
/// lowerMain), so that the names survive the passes that rename or replace
/// those values (partitioning, fusion).
ir::Function withOutputNames(const ir::Function &main);

} // namespace tessera::compile
