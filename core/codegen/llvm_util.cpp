//===- codegen/llvm_util.cpp - Target machine, pipeline, object emission ---===//
#include "codegen/llvm_util.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <fmt/format.h>

#include <mutex>

namespace tessera::codegen {

namespace {

void initLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

} // namespace

Expected<std::unique_ptr<llvm::TargetMachine>> makeTargetMachine(const CodegenOptions &options) {
  initLLVM();
  const std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return Error::format("LLVM has no target for {}: {}", triple, error);
  std::string cpu = options.cpu.empty() ? std::string(llvm::sys::getHostCPUName()) : options.cpu;
  std::string features;
  if (options.cpu.empty())
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") +
                  f.first().str();
  if (!options.cpu.empty()) {
    // An unknown CPU name would silently fall back to a generic one.
    const llvm::MCSubtargetInfo *sti = target->createMCSubtargetInfo(triple, "", "");
    bool known = sti && sti->isCPUStringValid(cpu);
    delete sti;
    if (!known)
      return Error::format("unknown CPU '{}' for {} (try 'x86-64', 'x86-64-v3', 'skylake-avx512', "
                           "or leave it empty for the host CPU)",
                           cpu, triple);
  }
  llvm::TargetOptions to;
  auto level = options.optLevel <= 0   ? llvm::CodeGenOptLevel::None
               : options.optLevel == 1 ? llvm::CodeGenOptLevel::Less
               : options.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                       : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm)
    return Error::format("LLVM cannot make a target machine for {} (cpu '{}')", triple, cpu);
  return tm;
}

Expected<std::string> optimiseAndEmit(llvm::Module &m, llvm::TargetMachine &tm, int optLevel,
                                      std::string_view prePipeline) {
  std::string verifyErrors;
  llvm::raw_string_ostream verifyOut(verifyErrors);
  if (llvm::verifyModule(m, &verifyOut))
    return Error::format("internal error: the generated LLVM IR does not verify: {}",
                         verifyOut.str());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // PassBuilder's tuning defaults leave both vectorisers off; clang turns
  // them on from -O2, and so do we.
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = optLevel >= 2;
  tuning.SLPVectorization = optLevel >= 2;
  tuning.LoopInterleaving = optLevel >= 2;
  tuning.LoopUnrolling = optLevel >= 1;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel o = optLevel <= 0   ? llvm::OptimizationLevel::O0
                              : optLevel == 1 ? llvm::OptimizationLevel::O1
                              : optLevel == 2 ? llvm::OptimizationLevel::O2
                                              : llvm::OptimizationLevel::O3;
  if (!prePipeline.empty()) {
    llvm::ModulePassManager pre;
    if (auto err = pb.parsePassPipeline(pre, prePipeline))
      return Error::format("internal error: bad pass pipeline '{}': {}", prePipeline,
                           llvm::toString(std::move(err)));
    pre.run(m, mam);
  }
  llvm::ModulePassManager mpm =
      optLevel <= 0 ? pb.buildO0DefaultPipeline(o) : pb.buildPerModuleDefaultPipeline(o);
  mpm.run(m, mam);

  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager emit;
  if (tm.addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return Error("LLVM cannot emit object files for this target");
  emit.run(m);
  return std::string(buffer.begin(), buffer.end());
}

} // namespace tessera::codegen
