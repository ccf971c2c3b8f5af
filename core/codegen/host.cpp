//===- codegen/host.cpp - The host shared object of an artifact -----------===//
//
// One LLVM module per model: one step function per distinct host step
// (identical steps are aliases of one function), plus the kernels they call,
// linked in from the kernel library's bitcode (embedded at build time,
// codegen/kernels/kernels.cmake; read lazily, only what is used).
// A library step function fills a tk_args on its stack: the data pointers
// from `buffers`, everything else (shapes, ranks, dtypes, attributes) from
// private constant globals. The kernels are marked always-inline and every
// symbol but the steps is internalised, so after inlining LLVM sees the
// shapes and attributes as constants (loop bounds, strides, the dtype
// switch fold) and GlobalDCE drops the kernels no step uses. Every function
// gets the target CPU and features of the model's target machine (the
// bitcode was compiled for generic x86-64), so the vectoriser uses the
// widest vectors the CPU has.
//
// Known limit: a kernel's parallel body is called through
// ctx->parallel_for, so LLVM cannot see the constants inside it; those loops
// are vectorised with run-time bounds (docs/design/0007).
//
//===----------------------------------------------------------------------===//
#include "codegen/host.h"

#include "codegen/llvm_util.h"
#include "ir/structural.h"
#include "ir/symbol.h"
#include "runtime/cpu_features.h"
#include "runtime/host_abi.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Support/Error.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_map>
#include <unordered_set>

namespace tessera::codegen {

namespace {

/// A fused elementwise step of at least this many elements runs its loop
/// nest on the runtime's threads (a smaller one is not worth waking them:
/// an LSTM gate of 512 values).
constexpr int64_t kParallelFusedElements = int64_t(1) << 15;

/// Builds the step functions into the kernel library's module.
class StepBuilder {
public:
  explicit StepBuilder(llvm::Module &m) : m_(m), ctx_(m.getContext()), b_(ctx_) {
    ptr_ = b_.getPtrTy();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    // struct tk_tensor { void *data; const int64_t *shape; int32_t rank, dtype; }
    tensorTy_ = llvm::StructType::get(ctx_, {ptr_, ptr_, i32_, i32_});
    // struct tk_args { in, out, ia, fa, scratch; int32_t nin, nout, nia, nfa; }
    argsTy_ = llvm::StructType::get(ctx_, {ptr_, ptr_, ptr_, ptr_, ptr_, i32_, i32_, i32_, i32_});
    stepTy_ = llvm::FunctionType::get(i32_, {ptr_, ptr_}, false);
  }

  Status addLibraryStep(const HostStepSpec &spec) {
    const KernelCall &call = spec.call;
    // Declared here, defined when the library is linked (checked in finish).
    auto *kernel = llvm::cast<llvm::Function>(
        m_.getOrInsertFunction("tk_" + call.kernel, stepTy_).getCallee());
    kernelSteps_.emplace_back(kernel->getName().str(), spec.symbol);
    llvm::Function *fn = newStep(spec.symbol);
    llvm::Value *buffers = fn->getArg(0);
    const size_t nin = spec.types.inputs.size(), nout = spec.types.outputs.size();
    // A step over symbolic shapes: the symbols' values follow its buffers.
    symbols_ = spec.symbols.empty()
                   ? nullptr
                   : loadBuffer(buffers, nin + nout + (call.scratchBytes ? 1 : 0));
    symbolIndex_.clear();
    for (const auto &[dim, index] : spec.symbols)
      symbolIndex_[dim] = index;
    llvm::Value *in = tensors(spec.types.inputs, buffers, 0, spec.symbol + ".in");
    llvm::Value *out = tensors(spec.types.outputs, buffers, nin, spec.symbol + ".out");
    llvm::Value *scratch = call.scratchBytes ? loadBuffer(buffers, nin + nout)
                                             : llvm::ConstantPointerNull::get(ptr_);
    llvm::Value *args = b_.CreateAlloca(argsTy_, nullptr, "args");
    llvm::Value *fields[] = {
        in,
        out,
        spec.ia.empty() ? constantArray(call.ia, spec.symbol + ".ia") : symbolicArray(spec.ia),
        constantArray(call.fa, spec.symbol + ".fa"),
        scratch,
        b_.getInt32(uint32_t(nin)),
        b_.getInt32(uint32_t(nout)),
        b_.getInt32(uint32_t(call.ia.size())),
        b_.getInt32(uint32_t(call.fa.size())),
    };
    for (unsigned i = 0; i < std::size(fields); ++i)
      b_.CreateStore(fields[i], b_.CreateStructGEP(argsTy_, args, i));
    b_.CreateRet(b_.CreateCall(kernel, {args, fn->getArg(1)}));
    return okStatus();
  }

  Status addFusedStep(const HostStepSpec &spec) {
    const ir::Function &f = *spec.fused;
    ElementwiseKernel k{spec.symbol + ".fused", f, {}};
    if (!spec.rows)
      k.symbols = spec.symbols; // a loop nest over symbolic shapes
    TS_ASSIGN_OR_RETURN(int64_t outer, emitElementwiseKernel(m_, k));
    llvm::Function *body = m_.getFunction(k.symbol);
    inlined_.insert(body->getName().str());
    llvm::Function *fn = newStep(spec.symbol);
    llvm::Value *buffers = fn->getArg(0);
    const size_t nin = f->params().size();
    llvm::Value *out = loadBuffer(buffers, nin);
    const int64_t n = f->resultType().numElements();
    auto compute = [&](llvm::Value *inputs, llvm::Value *result) {
      if (n >= kParallelFusedElements && outer >= 2) {
        // Ranges of the outermost loop on the runtime's threads
        // (kernels/elementwise.cpp's tk_fused_parallel).
        llvm::FunctionCallee parallel = m_.getOrInsertFunction(
            "tk_fused_parallel", b_.getVoidTy(), ptr_, i64_, ptr_, ptr_, ptr_);
        b_.CreateCall(parallel, {fn->getArg(1), b_.getInt64(uint64_t(outer)),
                                 m_.getFunction(elementwiseRangeSymbol(k.symbol)), inputs, result});
      } else {
        b_.CreateCall(body, {inputs, result, b_.getInt64(uint64_t(n))});
      }
    };
    if (!spec.rows && !k.symbols.empty()) {
      // Extents known at run time: nothing to do for no elements, the
      // outermost loop's ranges on the threads for many.
      auto extent = [&](bool outerOnly) {
        return b_.CreateCall(
            m_.getOrInsertFunction(elementwiseExtentSymbol(k.symbol, outerOnly), i64_, ptr_),
            {buffers});
      };
      llvm::Value *count = extent(false), *outerValue = extent(true);
      for (bool outerOnly : {true, false})
        inlined_.insert(elementwiseExtentSymbol(k.symbol, outerOnly));
      auto *parallel = llvm::BasicBlock::Create(ctx_, "parallel", fn);
      auto *serial = llvm::BasicBlock::Create(ctx_, "serial", fn);
      auto *done = llvm::BasicBlock::Create(ctx_, "done", fn);
      auto *some = llvm::BasicBlock::Create(ctx_, "some", fn);
      b_.CreateCondBr(b_.CreateICmpSGT(count, b_.getInt64(0)), some, done);
      b_.SetInsertPoint(some);
      b_.CreateCondBr(b_.CreateAnd(b_.CreateICmpSGE(count, b_.getInt64(kParallelFusedElements)),
                                   b_.CreateICmpSGE(outerValue, b_.getInt64(2))),
                      parallel, serial);
      b_.SetInsertPoint(parallel);
      b_.CreateCall(m_.getOrInsertFunction("tk_fused_parallel", b_.getVoidTy(), ptr_, i64_, ptr_,
                                           ptr_, ptr_),
                    {fn->getArg(1), outerValue, m_.getFunction(elementwiseRangeSymbol(k.symbol)),
                     buffers, out});
      b_.CreateBr(done);
      b_.SetInsertPoint(serial);
      b_.CreateCall(body, {buffers, out, b_.getInt64(0)});
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      b_.CreateRet(b_.getInt32(TESSERA_HOST_OK));
      return okStatus();
    }
    if (!spec.rows) {
      compute(buffers, out);
      b_.CreateRet(b_.getInt32(TESSERA_HOST_OK));
      return okStatus();
    }
    // Rows of a static shape: `f` computes one; run it once per row with
    // the inputs and the output advanced (the symbols follow the buffers).
    symbols_ = loadBuffer(buffers, nin + 1);
    llvm::Value *rows = symbolValue(*spec.rows);
    llvm::Value *inputs = b_.CreateAlloca(ptr_, b_.getInt64(std::max<size_t>(nin, 1)), "row.in");
    llvm::BasicBlock *entry = b_.GetInsertBlock();
    auto *loop = llvm::BasicBlock::Create(ctx_, "row", fn);
    auto *done = llvm::BasicBlock::Create(ctx_, "done", fn);
    b_.CreateCondBr(b_.CreateICmpSGT(rows, b_.getInt64(0)), loop, done);
    b_.SetInsertPoint(loop);
    llvm::PHINode *r = b_.CreatePHI(i64_, 2, "r");
    r->addIncoming(b_.getInt64(0), entry);
    auto advance = [&](llvm::Value *base, int64_t elements) {
      return elements == 0 ? base
                           : b_.CreateInBoundsGEP(b_.getFloatTy(), base,
                                                  b_.CreateMul(r, b_.getInt64(uint64_t(elements))));
    };
    for (size_t j = 0; j < nin; ++j)
      b_.CreateStore(advance(loadBuffer(buffers, j), spec.rowElements[j]),
                     b_.CreateConstInBoundsGEP1_64(ptr_, inputs, j));
    compute(inputs, advance(out, spec.outputRowElements));
    llvm::Value *next = b_.CreateAdd(r, b_.getInt64(1));
    r->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, rows), loop, done);
    b_.SetInsertPoint(done);
    b_.CreateRet(b_.getInt32(TESSERA_HOST_OK));
    return okStatus();
  }

  /// `symbol` as another name of the step `of` (built before): identical
  /// steps share their code.
  void addAlias(const std::string &symbol, const std::string &of) {
    steps_.insert(symbol);
    llvm::GlobalAlias::create(stepTy_, 0, llvm::GlobalValue::ExternalLinkage, symbol,
                              m_.getFunction(of));
  }

  /// After the library is linked: checks that every kernel is defined,
  /// internalises everything but the steps, forces the kernels inline and
  /// retargets every function to `tm`'s CPU.
  Status finish(const llvm::TargetMachine &tm) {
    for (const auto &[kernel, step] : kernelSteps_) {
      llvm::Function *f = m_.getFunction(kernel);
      if (!f || f->isDeclaration())
        return Error::format("step '{}': the kernel library has no kernel '{}'", step, kernel);
      inlined_.insert(kernel);
    }
    new llvm::GlobalVariable(m_, i32_, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                             b_.getInt32(TESSERA_HOST_ABI_VERSION), "tessera_host_abi_version");
    for (llvm::Function &f : m_) {
      if (f.isDeclaration())
        continue;
      if (!steps_.count(f.getName().str())) {
        // Internal, and out of its comdat: the linker would otherwise keep
        // one part's copy of a template instantiation and drop the others.
        f.setLinkage(llvm::GlobalValue::InternalLinkage);
        f.setComdat(nullptr);
      }
      if (inlined_.count(f.getName().str())) {
        f.removeFnAttr(llvm::Attribute::NoInline);
        f.removeFnAttr(llvm::Attribute::OptimizeNone);
        f.addFnAttr(llvm::Attribute::AlwaysInline);
      }
    }
    retarget(m_, tm);
    // The library marks the fast_math.h exports used, so that its bitcode
    // keeps them; here only what the steps call is kept.
    for (const char *name : {"llvm.used", "llvm.compiler.used"})
      if (llvm::GlobalVariable *used = m_.getGlobalVariable(name))
        used->eraseFromParent();
    for (llvm::GlobalVariable &g : m_.globals())
      if (!g.isDeclaration() && g.getName() != "tessera_host_abi_version") {
        g.setLinkage(llvm::GlobalValue::InternalLinkage);
        g.setComdat(nullptr);
      }
    return okStatus();
  }

private:
  llvm::Function *newStep(const std::string &symbol) {
    steps_.insert(symbol);
    auto *fn = llvm::Function::Create(stepTy_, llvm::Function::ExternalLinkage, symbol, m_);
    fn->getArg(0)->setName("buffers");
    fn->getArg(1)->setName("ctx");
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    return fn;
  }

  llvm::Value *loadBuffer(llvm::Value *buffers, size_t index) {
    return b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, buffers, index),
                         fmt::format("buf{}", index));
  }

  /// A stack array of tk_tensor for `types`, data from buffers[first...].
  llvm::Value *tensors(const std::vector<ir::Type> &types, llvm::Value *buffers, size_t first,
                       const std::string &name) {
    if (types.empty())
      return llvm::ConstantPointerNull::get(ptr_);
    llvm::Value *array = b_.CreateAlloca(tensorTy_, b_.getInt64(types.size()), name);
    for (size_t i = 0; i < types.size(); ++i) {
      llvm::Value *t = b_.CreateConstInBoundsGEP1_64(tensorTy_, array, i);
      b_.CreateStore(loadBuffer(buffers, first + i), b_.CreateStructGEP(tensorTy_, t, 0));
      llvm::Value *shape =
          types[i].isStatic()
              ? static_cast<llvm::Value *>(
                    constantArray(types[i].shape(), fmt::format("{}.shape{}", name, i)))
              : symbolicShape(types[i].shape());
      b_.CreateStore(shape, b_.CreateStructGEP(tensorTy_, t, 1));
      b_.CreateStore(b_.getInt32(uint32_t(types[i].rank())), b_.CreateStructGEP(tensorTy_, t, 2));
      b_.CreateStore(b_.getInt32(uint32_t(types[i].dtype())), b_.CreateStructGEP(tensorTy_, t, 3));
    }
    return array;
  }

  /// The value of plan symbol `index` for this run.
  llvm::Value *symbolValue(uint32_t index) {
    return b_.CreateLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, symbols_, index),
                         fmt::format("sym{}", index));
  }

  /// A stack array of a symbolic shape's dims: constants, or this run's
  /// symbol values.
  llvm::Value *symbolicShape(const ir::Shape &shape) {
    llvm::Value *array = b_.CreateAlloca(i64_, b_.getInt64(shape.size()), "shape");
    for (size_t d = 0; d < shape.size(); ++d) {
      llvm::Value *v = ir::isSymbol(shape[d]) ? symbolValue(symbolIndex_.at(shape[d]))
                                              : b_.getInt64(uint64_t(shape[d]));
      b_.CreateStore(v, b_.CreateConstInBoundsGEP1_64(i64_, array, d));
    }
    return array;
  }

  /// A stack array of kernel parameters computed from this run's symbols.
  llvm::Value *symbolicArray(const std::vector<SymbolicInt> &values) {
    llvm::Value *array = b_.CreateAlloca(i64_, b_.getInt64(values.size()), "ia");
    for (size_t i = 0; i < values.size(); ++i) {
      llvm::Value *sum = b_.getInt64(uint64_t(values[i].constant));
      for (const SymbolicInt::Term &t : values[i].terms) {
        llvm::Value *product = b_.getInt64(uint64_t(t.coefficient));
        for (uint32_t k : t.symbols)
          product = b_.CreateMul(product, symbolValue(k));
        sum = b_.CreateAdd(sum, product);
      }
      b_.CreateStore(sum, b_.CreateConstInBoundsGEP1_64(i64_, array, i));
    }
    return array;
  }

  template <typename T> llvm::Constant *constantArray(const std::vector<T> &values,
                                                      const std::string &name) {
    if (values.empty())
      return llvm::ConstantPointerNull::get(ptr_);
    llvm::Constant *data;
    if constexpr (std::is_same_v<T, double>)
      data = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<double>(values));
    else
      data = llvm::ConstantDataArray::get(
          ctx_, llvm::ArrayRef<uint64_t>(reinterpret_cast<const uint64_t *>(values.data()),
                                         values.size()));
    auto *g = new llvm::GlobalVariable(m_, data->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::PrivateLinkage, data, name);
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    g->setAlignment(llvm::Align(8));
    return g;
  }

  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  llvm::PointerType *ptr_;
  llvm::Type *i32_, *i64_;
  llvm::StructType *tensorTy_, *argsTy_;
  llvm::FunctionType *stepTy_;
  std::unordered_set<std::string> steps_;
  std::vector<std::pair<std::string, std::string>> kernelSteps_; // (kernel, step)
  std::unordered_set<std::string> inlined_;
  llvm::Value *symbols_ = nullptr;                     // the step being built: symbol values
  std::unordered_map<int64_t, uint32_t> symbolIndex_;  // its ir symbol -> plan symbol
};

/// What makes a library step's code: the kernel, its attributes, scratch
/// size and types (everything the step function bakes in as constants).
std::string libraryKey(const HostStepSpec &s) {
  std::string key = fmt::format("{}|{}|{}|{}", s.call.kernel, fmt::join(s.call.ia, ","),
                                fmt::join(s.call.fa, ","), s.call.scratchBytes);
  for (const SymbolicInt &v : s.ia)
    key += "|" + v.str();
  for (const auto &[dim, index] : s.symbols)
    key += fmt::format("|{}={}", dim, index);
  for (const auto *types : {&s.types.inputs, &s.types.outputs}) {
    key += '|';
    for (const ir::Type &t : *types)
      key += t.str() + ";";
  }
  return key;
}

/// For each step, the index of an earlier step with the same code, or -1.
std::vector<int> identicalSteps(const std::vector<HostStepSpec> &steps) {
  std::vector<int> sameAs(steps.size(), -1);
  std::unordered_map<std::string, int> library;
  std::unordered_map<size_t, std::vector<int>> fused; // by structural hash
  for (size_t i = 0; i < steps.size(); ++i) {
    const HostStepSpec &s = steps[i];
    if (!s.fused) {
      auto [it, fresh] = library.emplace(libraryKey(s), int(i));
      if (!fresh)
        sameAs[i] = it->second;
      continue;
    }
    std::vector<int> &bucket = fused[ir::structuralHash(*s.fused)];
    auto sameRows = [&](const HostStepSpec &o) {
      return o.rows == s.rows && o.rowElements == s.rowElements &&
             o.outputRowElements == s.outputRowElements;
    };
    for (int j : bucket)
      if (sameRows(steps[size_t(j)]) && ir::structuralEqual(*steps[size_t(j)].fused, *s.fused)) {
        sameAs[i] = j;
        break;
      }
    if (sameAs[i] < 0)
      bucket.push_back(int(i));
  }
  return sameAs;
}

/// The features `tm`'s CPU and feature string enable, among those the
/// runtime checks before it maps the code.
std::vector<std::string> enabledCpuFeatures(const llvm::TargetMachine &tm) {
  std::vector<std::string> out;
  const llvm::MCSubtargetInfo *sti = tm.getMCSubtargetInfo();
  if (!sti)
    return out;
  for (std::string_view name : runtime::knownCpuFeatures())
    for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
      if (name == kv.Key && sti->getFeatureBits().test(kv.Value))
        out.emplace_back(name);
  return out;
}

} // namespace

std::string SymbolicInt::str() const {
  std::string out = std::to_string(constant);
  for (const Term &t : terms) {
    out += fmt::format(" + {}", t.coefficient);
    for (uint32_t k : t.symbols)
      out += fmt::format("*s{}", k);
  }
  return out;
}

Expected<std::vector<std::string>> cpuFeatures(const CodegenOptions &options) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, makeTargetMachine(options));
  return enabledCpuFeatures(*tm);
}

Expected<std::vector<std::string>>
buildHostLibraries(const std::vector<HostStepSpec> &steps, const CodegenOptions &options,
                   const std::vector<std::string> &cpus, std::vector<HostBuildInfo> *info,
                   const std::function<void(std::string_view)> &progress) {
  auto say = [&](const std::string &line) {
    if (progress)
      progress(line);
  };
  if (cpus.empty())
    return Error("internal error: host code for no CPU");
  // Each CPU's options, the most portable (fewest ISA extensions) first:
  // the steps are built and simplified once, for it, then copied for the
  // others (optimiseAndEmitParallel).
  std::vector<CodegenOptions> targets;
  std::vector<HostBuildInfo> infos;
  for (const std::string &cpu : cpus) {
    CodegenOptions o = options;
    o.cpu = cpu;
    TS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, makeTargetMachine(o));
    targets.push_back(o);
    infos.push_back({tm->getTargetTriple().str(), tm->getTargetCPU().str(),
                     enabledCpuFeatures(*tm)});
  }
  std::vector<size_t> order(cpus.size()); // order[k]: the k-th target's index in `cpus`
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return infos[a].features.size() < infos[b].features.size();
  });
  std::vector<CodegenOptions> sorted;
  for (size_t i : order)
    sorted.push_back(targets[i]);
  TS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, makeTargetMachine(sorted[0]));
  llvm::LLVMContext ctx;
  auto m = std::make_unique<llvm::Module>("tessera_host", ctx);
  m->setTargetTriple(tm->getTargetTriple().str());
  m->setDataLayout(tm->createDataLayout());

  std::unordered_set<std::string> seen;
  StepBuilder builder(*m);
  const std::vector<int> sameAs = identicalSteps(steps);
  size_t distinct = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const HostStepSpec &spec = steps[i];
    if (!seen.insert(spec.symbol).second || m->getNamedValue(spec.symbol))
      return Error::format("host step symbol '{}' is used twice", spec.symbol);
    if (sameAs[i] >= 0) {
      builder.addAlias(spec.symbol, steps[size_t(sameAs[i])].symbol);
      continue;
    }
    ++distinct;
    TS_RETURN_IF_ERROR(spec.fused ? builder.addFusedStep(spec) : builder.addLibraryStep(spec));
  }
  TS_RETURN_IF_ERROR(linkKernelLibrary(*m));
  TS_RETURN_IF_ERROR(builder.finish(*tm));
  std::vector<std::string> names;
  for (size_t i : order)
    names.push_back(infos[i].cpu);
  say(fmt::format("host code: {} steps ({} distinct), optimising for {} at O{}", steps.size(),
                  distinct, fmt::join(names, ", "), options.optLevel));
  // Inline the kernels into the steps and fold their constants first, then
  // drop what no step reaches, so that the main pipeline only optimises the
  // code the steps run (not every dtype/op instantiation of the kernels).
  // Only the steps are simplified here (the kernels' out-of-line bodies get
  // O2 after the split, on both cores). GVN forwards the constants a step
  // stored into its tk_args to the kernel's loads, which folds the dtype
  // switch: without it the switch folded only inside O2, after O2 had
  // simplified every dtype's instantiation (ViT-B/16: 499 functions where
  // 194 remain; O2 of the whole module 1.25 s -> 0.65 s).
  const PrePipeline specialise{
      "always-inline",
      "sroa,early-cse,gvn,instcombine<no-verify-fixpoint>,sccp,simplifycfg",
      "globaldce",
  };
  TS_ASSIGN_OR_RETURN(std::vector<std::vector<std::string>> objects,
                      optimiseAndEmitParallel(*m, sorted, specialise, options.threads));
  std::vector<std::string> out(cpus.size());
  for (size_t k = 0; k < order.size(); ++k) {
    size_t bytes = 0;
    for (const std::string &o : objects[k])
      bytes += o.size();
    say(fmt::format("host code for {}: linking ({} KiB of object code from {} part{})",
                    infos[order[k]].cpu, bytes / 1024, objects[k].size(),
                    objects[k].size() == 1 ? "" : "s"));
    TS_ASSIGN_OR_RETURN(out[order[k]], linkSharedObject(objects[k]));
  }
  if (info)
    *info = std::move(infos);
  return out;
}

Expected<std::string> buildHostLibrary(const std::vector<HostStepSpec> &steps,
                                       const CodegenOptions &options, HostBuildInfo *info,
                                       const std::function<void(std::string_view)> &progress) {
  std::vector<HostBuildInfo> infos;
  TS_ASSIGN_OR_RETURN(std::vector<std::string> libraries,
                      buildHostLibraries(steps, options, {options.cpu}, &infos, progress));
  if (info)
    *info = infos[0];
  return std::move(libraries[0]);
}

} // namespace tessera::codegen
