//===- codegen/llvm_util.h - LLVM plumbing shared by the codegen -*- C++ -*-===//
//
// Private to core/codegen (it includes LLVM headers): the target machine for
// CodegenOptions, the optimisation pipeline, object emission, and the
// elementwise kernel emitter that host.cpp wraps into host steps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/elementwise.h"

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <string_view>

namespace tessera::codegen {

/// The target machine for the process's triple and options.cpu ("" = the
/// host CPU with its features).
Expected<std::unique_ptr<llvm::TargetMachine>> makeTargetMachine(const CodegenOptions &options);

/// Verifies `m`, runs `prePipeline` (LLVM's textual pipeline syntax; empty:
/// none), then the default pipeline at `optLevel`, and emits an object file.
Expected<std::string> optimiseAndEmit(llvm::Module &m, llvm::TargetMachine &tm, int optLevel,
                                      std::string_view prePipeline = {});

/// Adds one elementwise kernel (ABI of codegen/elementwise.h) to `m`.
Status emitElementwiseKernel(llvm::Module &m, const ElementwiseKernel &kernel);

} // namespace tessera::codegen
