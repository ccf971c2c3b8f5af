//===- codegen/llvm_util.cpp - Target machine, pipeline, object emission ---===//
#include "codegen/llvm_util.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

// The kernel library's bitcode (codegen/kernels/embed.S.in).
extern "C" const char tessera_tk_bitcode_begin[];
extern "C" const char tessera_tk_bitcode_end[];

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

Status linkKernelLibrary(llvm::Module &m) {
  llvm::StringRef bytes(tessera_tk_bitcode_begin,
                        size_t(tessera_tk_bitcode_end - tessera_tk_bitcode_begin));
  auto lib = llvm::getLazyBitcodeModule(llvm::MemoryBufferRef(bytes, "tk_kernels.bc"),
                                        m.getContext());
  if (!lib)
    return Error::format("internal error: the embedded kernel library does not load: {}",
                         llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded))
    return Error("internal error: linking the kernel library failed");
  return okStatus();
}

Expected<std::unique_ptr<llvm::TargetMachine>> makeTargetMachine(const CodegenOptions &options) {
  initLLVM();
  const std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return Error::format("LLVM has no target for {}: {}", triple, error);
  const bool native = options.cpu.empty() || options.cpu == "native";
  std::string cpu = native ? std::string(llvm::sys::getHostCPUName()) : options.cpu;
  std::string features;
  if (native)
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") +
                  f.first().str();
  if (!native) {
    // An unknown CPU name would silently fall back to a generic one.
    const llvm::MCSubtargetInfo *sti = target->createMCSubtargetInfo(triple, "", "");
    bool known = sti && sti->isCPUStringValid(cpu);
    delete sti;
    if (!known)
      return Error::format("unknown CPU '{}' for {} (try an x86-64 level: 'x86-64', 'x86-64-v2', "
                           "'x86-64-v3', 'x86-64-v4'; a CPU such as 'skylake-avx512'; or 'native' "
                           "for this machine's)",
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

namespace {

/// 32 vector registers of 64 bytes: AVX-512.
bool hasAvx512(const llvm::TargetMachine &tm) {
  return tm.getMCSubtargetInfo()->checkFeatures("+avx512f");
}

} // namespace

void retarget(llvm::Module &m, const llvm::TargetMachine &tm) {
  const std::string cpu = tm.getTargetCPU().str(), features = tm.getTargetFeatureString().str();
  // The kernels' explicit 64-byte vectors (nn_gemm.h's Vec64) in one
  // register each where the CPU has them: AVX-512 CPUs prefer 256-bit
  // vectors, and without this the backend splits every Vec64 into two
  // (the GEMM's twelve accumulators became 24 ymm registers, half the
  // throughput). Loops the vectoriser widens keep the preferred width.
  const bool zmm = hasAvx512(tm);
  for (llvm::Function &f : m) {
    if (f.isDeclaration())
      continue;
    f.removeFnAttr("tune-cpu");
    f.addFnAttr("target-cpu", cpu);
    f.addFnAttr("target-features", features);
    if (zmm)
      f.addFnAttr("min-legal-vector-width", "512");
    else
      f.removeFnAttr("min-legal-vector-width");
  }
}

void defineTargetConstants(llvm::Module &m, const llvm::TargetMachine &tm) {
  llvm::GlobalVariable *wide = m.getGlobalVariable("tk_target_wide_gemm");
  if (!wide || !wide->isDeclaration())
    return;
  wide->setInitializer(llvm::ConstantInt::get(wide->getValueType(), hasAvx512(tm) ? 1 : 0));
  wide->setConstant(true);
  wide->setLinkage(llvm::GlobalValue::InternalLinkage);
}

namespace {

/// A pipeline builder with its analysis managers (one per thread).
struct Pipelines {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb;

  Pipelines(llvm::TargetMachine &tm, int optLevel) : pb(&tm, tuning(optLevel)) {
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
  }

  // PassBuilder's tuning defaults leave both vectorisers off; clang turns
  // them on from -O2, and so do we.
  static llvm::PipelineTuningOptions tuning(int optLevel) {
    llvm::PipelineTuningOptions t;
    t.LoopVectorization = optLevel >= 2;
    t.SLPVectorization = optLevel >= 2;
    t.LoopInterleaving = optLevel >= 2;
    t.LoopUnrolling = optLevel >= 1;
    return t;
  }

  Status run(llvm::Module &m, const PrePipeline &pre) {
    auto bad = [](std::string_view text, llvm::Error err) {
      return Error::format("internal error: bad pass pipeline '{}': {}", text,
                           llvm::toString(std::move(err)));
    };
    auto onModule = [&](std::string_view text) -> Status {
      if (text.empty())
        return okStatus();
      llvm::ModulePassManager mpm;
      if (auto err = pb.parsePassPipeline(mpm, text))
        return bad(text, std::move(err));
      mpm.run(m, mam);
      return okStatus();
    };
    TS_RETURN_IF_ERROR(onModule(pre.module));
    if (!pre.exported.empty()) {
      llvm::FunctionPassManager fpm;
      if (auto err = pb.parsePassPipeline(fpm, pre.exported))
        return bad(pre.exported, std::move(err));
      for (llvm::Function &f : m)
        if (!f.isDeclaration() && !f.hasLocalLinkage())
          fpm.run(f, fam);
    }
    return onModule(pre.cleanup);
  }

  void runDefault(llvm::Module &m, int optLevel) {
    llvm::OptimizationLevel o = optLevel <= 0   ? llvm::OptimizationLevel::O0
                                : optLevel == 1 ? llvm::OptimizationLevel::O1
                                : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                : llvm::OptimizationLevel::O3;
    llvm::ModulePassManager mpm =
        optLevel <= 0 ? pb.buildO0DefaultPipeline(o) : pb.buildPerModuleDefaultPipeline(o);
    mpm.run(m, mam);
  }
};

Status verify(llvm::Module &m) {
  std::string errors;
  llvm::raw_string_ostream out(errors);
  if (llvm::verifyModule(m, &out))
    return Error::format("internal error: the generated LLVM IR does not verify: {}", out.str());
  return okStatus();
}

Expected<std::string> emitObject(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager emit;
  if (tm.addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return Error("LLVM cannot emit object files for this target");
  emit.run(m);
  return std::string(buffer.begin(), buffer.end());
}

/// Whether the internal function `f` is compiled in one part of a split
/// module and called from the others, rather than copied into each: a
/// kernel's generic body (the GEMM, softmax, a broadcast walk) that several
/// functions call or that is called through a pointer (a parallel body).
/// Such a function is never inlined, so nothing is lost; copied, ViT-B/16's
/// GEMM and softmax bodies were optimised and compiled in both parts (one
/// part cost 90% of the whole module). Small functions stay copied: the
/// inliner may still want them.
bool sharedInternally(const llvm::Function &f) {
  constexpr unsigned kMinInstructions = 200; // ~5x O2's inline threshold
  if (f.isDeclaration() || !f.hasLocalLinkage() || f.getInstructionCount() < kMinInstructions)
    return false;
  const llvm::Function *caller = nullptr;
  for (const llvm::Use &use : f.uses()) {
    const auto *call = llvm::dyn_cast<llvm::CallBase>(use.getUser());
    if (!call || !call->isCallee(&use))
      return true; // its address is taken
    if (caller && call->getFunction() != caller)
      return true; // a second caller
    caller = call->getFunction();
  }
  return false;
}

/// The internal functions `f` reaches through its instructions' operands
/// (calls, addresses taken, constants), not through other non-internal
/// functions: what a part that defines `f` must also hold.
std::vector<const llvm::Function *> internalFunctionsReached(const llvm::Function &f) {
  std::vector<const llvm::Function *> out;
  std::unordered_set<const llvm::Value *> seen{&f};
  std::vector<const llvm::Value *> work;
  auto visitOperands = [&](const llvm::User &u) {
    for (const llvm::Value *op : u.operands())
      if (llvm::isa<llvm::Constant>(op) && seen.insert(op).second)
        work.push_back(op);
  };
  auto visitFunction = [&](const llvm::Function &g) {
    for (const llvm::BasicBlock &bb : g)
      for (const llvm::Instruction &i : bb)
        visitOperands(i);
  };
  visitFunction(f);
  while (!work.empty()) {
    const llvm::Value *v = work.back();
    work.pop_back();
    if (const auto *g = llvm::dyn_cast<llvm::Function>(v)) {
      if (!g->isDeclaration() && g->hasLocalLinkage()) {
        out.push_back(g);
        visitFunction(*g);
      }
    } else if (const auto *gv = llvm::dyn_cast<llvm::GlobalVariable>(v)) {
      if (gv->hasInitializer())
        visitOperands(*gv);
    } else if (const auto *c = llvm::dyn_cast<llvm::Constant>(v)) {
      if (!llvm::isa<llvm::GlobalValue>(c))
        visitOperands(*c);
    }
  }
  return out;
}

std::string bitcodeOf(const llvm::Module &m) {
  std::string bitcode;
  llvm::raw_string_ostream os(bitcode);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  return bitcode;
}

/// The default pipeline at `optLevel`, then the object file.
Expected<std::string> optimiseThenEmit(llvm::Module &m, llvm::TargetMachine &tm, int optLevel) {
  Pipelines(tm, optLevel).runDefault(m, optLevel);
  return emitObject(m, tm);
}

/// `m` split into up to `threads` parts, each as bitcode: the exported
/// functions (the host steps) and the shared internal ones
/// (sharedInternally) are shared out by size, the largest first to the
/// least loaded part. A shared function becomes hidden: defined in its
/// part, called from the others, never exported from the shared object.
/// Every part keeps its own copy of the other internal functions and
/// constants it uses, still internal, so that each part optimises them as
/// the whole module would. Each part travels as bitcode into a context of
/// its own: an LLVMContext is not thread-safe.
std::vector<std::string> splitModule(llvm::Module &m, unsigned threads) {
  for (llvm::Function &f : m)
    if (sharedInternally(f)) {
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
      f.setVisibility(llvm::GlobalValue::HiddenVisibility);
      f.setDSOLocal(true);
    }
  // A function costs its own size plus that of the internal functions it
  // reaches that its part does not have yet (they are copied into it).
  struct Root {
    const llvm::Function *f;
    std::vector<const llvm::Function *> copies; // internal functions it reaches
    size_t size = 0;                              // its own and theirs
  };
  std::vector<Root> roots;
  for (const llvm::Function &f : m)
    if (!f.isDeclaration() && !f.hasLocalLinkage()) {
      Root r{&f, internalFunctionsReached(f)};
      r.size = f.getInstructionCount();
      for (const llvm::Function *g : r.copies)
        r.size += g->getInstructionCount();
      roots.push_back(std::move(r));
    }
  std::sort(roots.begin(), roots.end(), [](const Root &a, const Root &b) {
    return a.size != b.size ? a.size > b.size : a.f->getName() < b.f->getName();
  });
  std::vector<size_t> load(threads, 0);
  std::vector<std::unordered_set<const llvm::Function *>> has(threads);
  std::unordered_map<const llvm::GlobalValue *, unsigned> partOf;
  for (const Root &r : roots) {
    unsigned best = 0;
    size_t bestLoad = SIZE_MAX;
    for (unsigned p = 0; p < threads; ++p) {
      size_t n = load[p] + r.f->getInstructionCount() + 1;
      for (const llvm::Function *g : r.copies)
        n += has[p].count(g) ? 0 : g->getInstructionCount();
      if (n < bestLoad)
        best = p, bestLoad = n;
    }
    load[best] = bestLoad;
    has[best].insert(r.copies.begin(), r.copies.end());
    partOf[r.f] = best;
  }
  for (const llvm::GlobalVariable &g : m.globals())
    if (!g.isDeclaration() && !g.hasLocalLinkage())
      partOf[&g] = 0; // exported data (the host ABI version): defined once
  std::vector<std::string> parts;
  for (unsigned p = 0; p < threads; ++p) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part = llvm::CloneModule(m, map, [&](const llvm::GlobalValue *g) {
      const llvm::GlobalValue *base = g;
      if (const auto *a = llvm::dyn_cast<llvm::GlobalAlias>(g))
        base = llvm::dyn_cast<llvm::GlobalValue>(a->getAliasee()->stripPointerCasts());
      auto it = partOf.find(base);
      return it == partOf.end() || it->second == p; // internal, or this part's
    });
    parts.push_back(bitcodeOf(*part));
  }
  return parts;
}

} // namespace

Expected<std::vector<std::vector<std::string>>>
optimiseAndEmitParallel(llvm::Module &m, const std::vector<CodegenOptions> &targets,
                        const PrePipeline &pre, unsigned threads) {
  if (targets.empty())
    return std::vector<std::vector<std::string>>{};
  TS_RETURN_IF_ERROR(verify(m));
  std::vector<std::unique_ptr<llvm::TargetMachine>> tms;
  for (const CodegenOptions &t : targets) {
    TS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, makeTargetMachine(t));
    tms.push_back(std::move(tm));
  }
  TS_RETURN_IF_ERROR(Pipelines(*tms[0], targets[0].optLevel).run(m, pre));
  if (threads == 0)
    threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  size_t functions = 0;
  for (const llvm::Function &f : m)
    functions += !f.isDeclaration();
  const unsigned split = unsigned(std::min<size_t>(threads, functions / 2));
  if (targets.size() == 1 && split <= 1) {
    defineTargetConstants(m, *tms[0]);
    TS_ASSIGN_OR_RETURN(std::string object, optimiseThenEmit(m, *tms[0], targets[0].optLevel));
    return std::vector<std::vector<std::string>>{{std::move(object)}};
  }
  // Every target's parts, then all of them over one pool of `threads`
  // workers, largest first: one target's serial leftovers overlap another's.
  struct Job {
    size_t target;
    std::string bitcode;
  };
  std::vector<Job> jobs;
  for (size_t t = targets.size(); t-- > 0;) { // `m` itself last: the others are its copies
    std::unique_ptr<llvm::Module> copy;
    if (t > 0) {
      copy = llvm::CloneModule(m);
      retarget(*copy, *tms[t]);
    }
    llvm::Module &mt = t > 0 ? *copy : m;
    defineTargetConstants(mt, *tms[t]);
    if (split <= 1)
      jobs.push_back({t, bitcodeOf(mt)});
    else
      for (std::string &part : splitModule(mt, split))
        jobs.push_back({t, std::move(part)});
  }
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[a].bitcode.size() > jobs[b].bitcode.size();
  });
  std::vector<Expected<std::string>> objects(jobs.size(), Error("not run"));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t n; (n = next.fetch_add(1)) < order.size();) {
      const size_t i = order[n];
      const CodegenOptions &options = targets[jobs[i].target];
      objects[i] = [&]() -> Expected<std::string> {
        llvm::LLVMContext ctx;
        auto part = llvm::parseBitcodeFile(
            llvm::MemoryBufferRef(jobs[i].bitcode, "part" + std::to_string(i)), ctx);
        if (!part)
          return Error::format("internal error: a split part does not load: {}",
                               llvm::toString(part.takeError()));
        TS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, makeTargetMachine(options));
        return optimiseThenEmit(**part, *tm, options.optLevel);
      }();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < std::min<size_t>(threads, jobs.size()); ++w)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  std::vector<std::vector<std::string>> out(targets.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!objects[i].ok())
      return std::move(objects[i]).error();
    out[jobs[i].target].push_back(std::move(*objects[i]));
  }
  return out;
}

Expected<std::string> optimiseAndEmit(llvm::Module &m, llvm::TargetMachine &tm, int optLevel) {
  TS_RETURN_IF_ERROR(verify(m));
  defineTargetConstants(m, tm);
  return optimiseThenEmit(m, tm, optLevel);
}

} // namespace tessera::codegen
