//===- codegen/elementwise.cpp - Fused elementwise kernels with LLVM ------===//
//
// Each kernel is one counted loop over n elements; the loop body evaluates
// the function's expression tree for one element, reading each input once.
// LLVM's O2 pipeline (loop vectoriser included) runs on the module, and the
// target machine for the host CPU (or the requested one) emits an object
// file. NaN semantics follow the reference kernels: relu/max/min/clip use
// compare-and-select, so a NaN input stays NaN where the reference's does.
//
//===----------------------------------------------------------------------===//
#include "codegen/elementwise.h"

#include "codegen/llvm_util.h"
#include "ir/symbol.h"
#include "ir/visit.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>

namespace tessera::codegen {

namespace {

namespace fs = std::filesystem;

const std::unordered_map<std::string, int> &fusibleOps() {
  // op -> arity
  static const std::unordered_map<std::string, int> ops = {
      {"add", 2},   {"subtract", 2},   {"multiply", 2},     {"divide", 2},     {"maximum", 2},
      {"minimum", 2}, {"power", 2},    {"neg", 1},          {"abs", 1},        {"relu", 1},
      {"leaky_relu", 1}, {"exp", 1},   {"log", 1},          {"sqrt", 1},       {"sigmoid", 1},
      {"tanh", 1},  {"erf", 1},        {"floor", 1},        {"ceil", 1},       {"clip", 1},
      {"hard_sigmoid", 1}, {"hard_swish", 1}, {"silu", 1},       {"mish", 1},       {"gelu", 1}};
  return ops;
}

bool isF32(const ir::Type &t) { return t.isTensor() && t.dtype() == ir::DType::F32; }

/// A loop extent or stride: a constant times a product of plan symbols
/// (sorted), so that equal products compare equal when dims merge.
struct Mono {
  int64_t k = 1;
  std::vector<uint32_t> symbols;
  bool operator==(const Mono &o) const { return k == o.k && symbols == o.symbols; }
  Mono operator*(const Mono &o) const {
    Mono out{k * o.k, symbols};
    out.symbols.insert(out.symbols.end(), o.symbols.begin(), o.symbols.end());
    std::sort(out.symbols.begin(), out.symbols.end());
    return out;
  }
  bool isOne() const { return k == 1 && symbols.empty(); }
};

/// Builds one kernel's IR.
class KernelBuilder {
public:
  KernelBuilder(llvm::Module &m, const ElementwiseKernel &k) : m_(m), b_(m.getContext()), k_(k) {}

  Status build() {
    const ir::Function &fn = k_.fn;
    if (!isF32(fn->resultType()))
      return Error::format("kernel '{}': the result must be an f32 tensor, got {}", k_.symbol,
                           fn->resultType().str());
    const ir::Shape &shape = fn->resultType().shape();
    for (const ir::Var &p : fn->params())
      if (!isF32(p->type()) || !broadcastsTo(p->type().shape(), shape))
        return Error::format("kernel '{}': parameter %{} is {}, which does not broadcast to f32{}",
                             k_.symbol, p->name(), p->type().str(), ir::shapeStr(shape));
    // Intermediate values are computed per output element: each must have
    // the result's shape (a smaller one would be recomputed, or be wrong).
    for (const ir::ExprNode *node : ir::postOrder(fn->body(), /*intoFunctions=*/false))
      if (node->as<ir::CallNode>() && node->type() != fn->resultType())
        return Error::format("kernel '{}': {} produces {}, expected f32{}", k_.symbol,
                             node->as<ir::CallNode>()->op() ? node->as<ir::CallNode>()->op()->name
                                                            : std::string("a call"),
                             node->type().str(), ir::shapeStr(shape));
    for (const ir::Var &p : fn->params())
      for (int64_t d : p->type().shape())
        if (ir::isSymbol(d) && dim(d).k == 0)
          return Error::format("kernel '{}': symbol {} of %{} has no plan index", k_.symbol,
                               ir::dimStr(d), p->name());
    plan(shape);

    llvm::LLVMContext &ctx = m_.getContext();
    llvm::Type *ptr = b_.getPtrTy();
    llvm::Type *i64 = b_.getInt64Ty();
    // The loop nest, over [begin, end) of its outermost loop.
    auto *rangeType = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, i64, i64}, false);
    fn_ = llvm::Function::Create(rangeType, llvm::Function::ExternalLinkage,
                                 elementwiseRangeSymbol(k_.symbol), m_);
    llvm::Argument *inputs = fn_->getArg(0), *out = fn_->getArg(1);
    inputs->setName("inputs");
    out->setName("out");
    begin_ = fn_->getArg(2), end_ = fn_->getArg(3);
    begin_->setName("begin");
    end_->setName("end");
    // Outputs never alias inputs (the executor's contract): lets LLVM vectorise.
    out->addAttr(llvm::Attribute::NoAlias);

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn_));
    bases_.clear();
    for (size_t i = 0; i < fn->params().size(); ++i) {
      llvm::Value *slot = b_.CreateConstInBoundsGEP1_64(ptr, inputs, i);
      bases_.push_back(b_.CreateLoad(ptr, slot, fmt::format("in{}", i)));
    }
    out_ = out;
    // Extents and strides, computed once (constants fold).
    llvm::Value *symbols = symbolsOf(inputs);
    dimValues_.clear();
    strideValues_.assign(strides_.size(), {});
    for (size_t level = 0; level < dims_.size(); ++level) {
      dimValues_.push_back(value(dims_[level], symbols));
      for (size_t p = 0; p < strides_.size(); ++p)
        strideValues_[p].push_back(value(strides_[p][level], symbols));
    }
    if (!ir::isStatic(shape) || ir::numElements(shape) > 0) {
      auto *nest = llvm::BasicBlock::Create(ctx, "nest", fn_);
      auto *done = llvm::BasicBlock::Create(ctx, "done", fn_);
      b_.CreateCondBr(b_.CreateICmpSLT(begin_, end_), nest, done);
      b_.SetInsertPoint(nest);
      std::vector<llvm::Value *> offsets(fn->params().size() + 1, b_.getInt64(0));
      TS_RETURN_IF_ERROR(loop(0, offsets));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    }
    b_.CreateRetVoid();

    // The kernel ABI: the whole nest.
    auto *type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, i64}, false);
    llvm::Function *whole =
        llvm::Function::Create(type, llvm::Function::ExternalLinkage, k_.symbol, m_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", whole));
    b_.CreateCall(fn_, {whole->getArg(0), whole->getArg(1), b_.getInt64(0),
                        outerValue(symbolsOf(whole->getArg(0)))});
    b_.CreateRetVoid();
    if (!k_.symbols.empty())
      for (bool outer : {true, false}) {
        auto *extentType = llvm::FunctionType::get(i64, {ptr}, false);
        llvm::Function *extent =
            llvm::Function::Create(extentType, llvm::Function::ExternalLinkage,
                                   elementwiseExtentSymbol(k_.symbol, outer), m_);
        b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", extent));
        llvm::Value *at = symbolsOf(extent->getArg(0));
        llvm::Value *v = outerValue(at);
        for (size_t level = combineOuter() ? 2 : 1; !outer && level < dims_.size(); ++level)
          v = b_.CreateMul(v, value(dims_[level], at));
        b_.CreateRet(v);
      }
    return okStatus();
  }

  /// The extent of the outermost loop (ranges of it may run in parallel);
  /// -1 over symbolic shapes (known at run time).
  int64_t outerExtent() const { return k_.symbols.empty() ? dims_[0].k : -1; }

private:
  /// Whether `from` broadcasts to `to` (numpy rules, right-aligned).
  static bool broadcastsTo(const ir::Shape &from, const ir::Shape &to) {
    if (from.size() > to.size())
      return false;
    for (size_t i = 0; i < from.size(); ++i) {
      int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
      if (f != t && f != 1)
        return false;
    }
    return true;
  }

  /// The loop nest: the result's dims without size-1 dims, adjacent dims
  /// merged where every operand walks them contiguously (or not at all);
  /// per dim, each parameter's element stride (0 where it is broadcast) and
  /// the output's stride (the last entry).
  void plan(const ir::Shape &shape) {
    const size_t nParams = k_.fn->params().size(), rank = shape.size();
    std::vector<std::vector<Mono>> strides(nParams + 1, std::vector<Mono>(rank, Mono{0, {}}));
    for (size_t p = 0; p <= nParams; ++p) {
      const ir::Shape &ps = p < nParams ? k_.fn->params()[p]->type().shape() : shape;
      Mono stride;
      for (size_t i = 0; i < ps.size(); ++i) {
        size_t pd = ps.size() - 1 - i, d = rank - 1 - i;
        if (ps[pd] != 1)
          strides[p][d] = stride;
        stride = stride * dim(ps[pd]);
      }
    }
    dims_.clear();
    strides_.assign(nParams + 1, {});
    for (size_t d = 0; d < rank; ++d) {
      if (shape[d] == 1)
        continue;
      bool merge = !dims_.empty();
      for (size_t p = 0; merge && p <= nParams; ++p)
        merge = strides_[p].back() == strides[p][d] * dim(shape[d]);
      if (merge) {
        dims_.back() = dims_.back() * dim(shape[d]);
        for (size_t p = 0; p <= nParams; ++p)
          strides_[p].back() = strides[p][d];
      } else {
        dims_.push_back(dim(shape[d]));
        for (size_t p = 0; p <= nParams; ++p)
          strides_[p].push_back(strides[p][d]);
      }
    }
    if (dims_.empty()) { // one element
      dims_.push_back(Mono{});
      for (auto &s : strides_)
        s.push_back(Mono{0, {}});
    }
  }

  /// Over symbolic shapes the outermost loop, the one split over threads,
  /// runs over the first two levels together: a batch (N, often 1) is
  /// never merged with the channels a per-channel operand walks.
  bool combineOuter() const { return !k_.symbols.empty() && dims_.size() >= 2; }
  llvm::Value *outerValue(llvm::Value *symbols) {
    llvm::Value *v = value(dims_[0], symbols);
    return combineOuter() ? b_.CreateMul(v, value(dims_[1], symbols)) : v;
  }

  /// A dim as a Mono: a constant, or the plan symbol it stands for.
  Mono dim(int64_t d) const {
    if (!ir::isSymbol(d))
      return Mono{d, {}};
    for (const auto &[symbol, index] : k_.symbols)
      if (symbol == d)
        return Mono{1, {index}};
    return Mono{0, {}}; // build() refuses a symbol with no plan index first
  }

  /// `m`'s value at the insert point; symbol values from `symbols`.
  llvm::Value *value(const Mono &m, llvm::Value *symbols) {
    llvm::Value *v = b_.getInt64(uint64_t(m.k));
    for (uint32_t j : m.symbols)
      v = b_.CreateMul(v, b_.CreateLoad(b_.getInt64Ty(),
                                        b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), symbols, j)),
                       "", /*HasNUW=*/true, /*HasNSW=*/true);
    return v;
  }

  /// The symbol values' pointer of a symbolic kernel: inputs[params + 1].
  llvm::Value *symbolsOf(llvm::Value *inputs) {
    if (k_.symbols.empty())
      return nullptr;
    return b_.CreateLoad(b_.getPtrTy(),
                         b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), inputs,
                                                       k_.fn->params().size() + 1),
                         "symbols");
  }

  /// Level `level` of the loop nest; `offsets` are the element offsets of
  /// the parameters and (last) the output at the enclosing iteration.
  Status loop(size_t level, const std::vector<llvm::Value *> &offsets) {
    llvm::LLVMContext &ctx = m_.getContext();
    llvm::Type *i64 = b_.getInt64Ty();
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    auto *body = llvm::BasicBlock::Create(ctx, fmt::format("loop{}", level), fn_);
    auto *after = llvm::BasicBlock::Create(ctx, fmt::format("after{}", level), fn_);
    b_.CreateBr(body);
    b_.SetInsertPoint(body);
    llvm::PHINode *i = b_.CreatePHI(i64, 2, fmt::format("i{}", level));
    i->addIncoming(level == 0 ? begin_ : b_.getInt64(0), pre);
    std::vector<llvm::Value *> inner = offsets;
    auto advance = [&](llvm::Value *index, size_t at) {
      for (size_t p = 0; p < inner.size(); ++p)
        if (strides_[p][at].k != 0)
          inner[p] = b_.CreateAdd(inner[p], b_.CreateMul(index, strideValues_[p][at]), "",
                                  /*HasNUW=*/true, /*HasNSW=*/true);
    };
    size_t nextLevel = level + 1;
    if (level == 0 && combineOuter()) { // i runs over levels 0 and 1 together
      advance(b_.CreateUDiv(i, dimValues_[1]), 0);
      advance(b_.CreateURem(i, dimValues_[1]), 1);
      nextLevel = 2;
    } else {
      advance(i, level);
    }
    if (nextLevel < dims_.size()) {
      TS_RETURN_IF_ERROR(loop(nextLevel, inner));
    } else {
      TS_RETURN_IF_ERROR(element(inner));
    }
    llvm::Value *next = b_.CreateAdd(i, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(
        b_.CreateICmpSLT(next, level == 0 ? end_ : dimValues_[level]), body,
        after);
    b_.SetInsertPoint(after);
    return okStatus();
  }

  /// The tree for one element at `offsets`.
  Status element(const std::vector<llvm::Value *> &offsets) {
    llvm::Type *f32 = b_.getFloatTy();
    const ir::Function &fn = k_.fn;
    values_.clear();
    for (size_t p = 0; p < fn->params().size(); ++p)
      values_[fn->params()[p].get()] = b_.CreateLoad(
          f32, b_.CreateInBoundsGEP(f32, bases_[p], offsets[p]), fn->params()[p]->name());
    for (const ir::ExprNode *node : ir::postOrder(fn->body(), /*intoFunctions=*/false)) {
      if (values_.count(node))
        continue;
      TS_ASSIGN_OR_RETURN(llvm::Value * v, emit(*node));
      values_[node] = v;
    }
    b_.CreateStore(values_.at(fn->body().get()),
                   b_.CreateInBoundsGEP(f32, out_, offsets.back()));
    return okStatus();
  }

  llvm::Value *c(double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); }
  llvm::Value *intrinsic(llvm::Intrinsic::ID id, llvm::Value *x) {
    return b_.CreateUnaryIntrinsic(id, x);
  }
  /// A float function of the kernel library (kernels/fast_math.h), linked
  /// in after the kernels are emitted.
  llvm::Value *library(const char *name, llvm::Value *x) { return libm(name, {x}); }
  llvm::Value *libm(const char *name, std::vector<llvm::Value *> args) {
    std::vector<llvm::Type *> types(args.size(), b_.getFloatTy());
    auto callee =
        m_.getOrInsertFunction(name, llvm::FunctionType::get(b_.getFloatTy(), types, false));
    return b_.CreateCall(callee, args);
  }
  // NaN-propagating max/min like the reference (std::max(x, y) with x NaN is x).
  llvm::Value *maxOf(llvm::Value *x, llvm::Value *y) {
    return b_.CreateSelect(b_.CreateFCmpULT(x, y), y, x);
  }
  llvm::Value *minOf(llvm::Value *x, llvm::Value *y) {
    return b_.CreateSelect(b_.CreateFCmpUGT(x, y), y, x);
  }
  llvm::Value *clamp01(llvm::Value *x) { return minOf(maxOf(x, c(0)), c(1)); }

  Expected<llvm::Value *> emit(const ir::ExprNode &node) {
    if (const auto *k = node.as<ir::ConstantNode>()) {
      if (k->data().numel() != 1 || k->data().dtype() != ir::DType::F32)
        return Error::format("kernel '{}': only single-element f32 constants fuse, got {}",
                             k_.symbol, k->type().str());
      return c(k->data().getDouble(0));
    }
    const auto *call = node.as<ir::CallNode>();
    if (!call || call->calleeKind() != ir::CallNode::CalleeKind::Op)
      return Error::format("kernel '{}': cannot fuse a {} node", k_.symbol,
                           node.kind() == ir::ExprKind::Tuple ? "tuple" : "non-op");
    const std::string &op = call->op()->name;
    auto it = fusibleOps().find(op);
    if (it == fusibleOps().end())
      return Error::format("kernel '{}': op '{}' is not an elementwise op this codegen fuses",
                           k_.symbol, op);
    std::vector<llvm::Value *> a;
    for (const ir::Expr &arg : call->args())
      a.push_back(values_.at(arg.get()));
    const ir::Attrs &attrs = call->attrs();
    if (op == "add") return b_.CreateFAdd(a[0], a[1]);
    if (op == "subtract") return b_.CreateFSub(a[0], a[1]);
    if (op == "multiply") return b_.CreateFMul(a[0], a[1]);
    if (op == "divide") return b_.CreateFDiv(a[0], a[1]);
    if (op == "maximum") return maxOf(a[0], a[1]);
    if (op == "minimum") return minOf(a[0], a[1]);
    if (op == "power") return libm("powf", {a[0], a[1]});
    if (op == "neg") return b_.CreateFNeg(a[0]);
    if (op == "abs") return intrinsic(llvm::Intrinsic::fabs, a[0]);
    if (op == "relu") return b_.CreateSelect(b_.CreateFCmpOLT(a[0], c(0)), c(0), a[0]);
    if (op == "leaky_relu")
      return b_.CreateSelect(b_.CreateFCmpOLT(a[0], c(0)),
                             b_.CreateFMul(a[0], c(attrs.getFloat("alpha"))), a[0]);
    if (op == "exp") return library("tk_math_expf", a[0]);
    if (op == "log") return intrinsic(llvm::Intrinsic::log, a[0]);
    if (op == "sqrt") return intrinsic(llvm::Intrinsic::sqrt, a[0]);
    if (op == "floor") return intrinsic(llvm::Intrinsic::floor, a[0]);
    if (op == "ceil") return intrinsic(llvm::Intrinsic::ceil, a[0]);
    if (op == "sigmoid")
      return b_.CreateFDiv(c(1),
                           b_.CreateFAdd(c(1), library("tk_math_expf", b_.CreateFNeg(a[0]))));
    if (op == "silu")
      return b_.CreateFDiv(a[0],
                           b_.CreateFAdd(c(1), library("tk_math_expf", b_.CreateFNeg(a[0]))));
    if (op == "mish") return library("tk_math_mishf", a[0]);
    if (op == "gelu") {
      // 0.5 x (1 + erf(x / sqrt 2)), with 1 + erf(u) as erfc(-u) (accurate
      // where erf(u) is near -1), or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
      llvm::Value *factor;
      if (attrs.getString("approximate") == "tanh") {
        llvm::Value *x3 = b_.CreateFMul(b_.CreateFMul(a[0], a[0]), a[0]);
        llvm::Value *u = b_.CreateFAdd(a[0], b_.CreateFMul(c(0.044715), x3));
        factor = b_.CreateFAdd(
            c(1), library("tk_math_tanhf", b_.CreateFMul(c(0.7978845608028654), u)));
      } else {
        factor = library("tk_math_erfcf", b_.CreateFMul(a[0], c(-0.7071067811865476)));
      }
      return b_.CreateFMul(b_.CreateFMul(c(0.5), a[0]), factor);
    }
    if (op == "tanh") return library("tk_math_tanhf", a[0]);
    if (op == "erf") return library("tk_math_erff", a[0]);
    if (op == "clip")
      return minOf(maxOf(a[0], c(attrs.getFloat("min"))), c(attrs.getFloat("max")));
    if (op == "hard_sigmoid")
      return clamp01(b_.CreateFAdd(b_.CreateFMul(a[0], c(attrs.getFloat("alpha"))),
                                   c(attrs.getFloat("beta"))));
    if (op == "hard_swish")
      return b_.CreateFMul(a[0],
                           clamp01(b_.CreateFAdd(b_.CreateFMul(a[0], c(1.0 / 6.0)), c(0.5))));
    return Error::format("kernel '{}': op '{}' has no emitter", k_.symbol, op);
  }

  llvm::Module &m_;
  llvm::IRBuilder<> b_;
  const ElementwiseKernel &k_;
  llvm::Function *fn_ = nullptr; // the range function
  llvm::Value *begin_ = nullptr, *end_ = nullptr;
  llvm::Value *out_ = nullptr;
  std::vector<llvm::Value *> bases_;
  std::vector<Mono> dims_;
  std::vector<std::vector<Mono>> strides_; // per parameter, then the output
  std::vector<llvm::Value *> dimValues_;
  std::vector<std::vector<llvm::Value *>> strideValues_;
  std::unordered_map<const ir::ExprNode *, llvm::Value *> values_;
};

} // namespace

std::string elementwiseRangeSymbol(const std::string &symbol) { return symbol + ".range"; }
std::string elementwiseExtentSymbol(const std::string &symbol, bool outer) {
  return symbol + (outer ? ".outer" : ".count");
}

Expected<int64_t> emitElementwiseKernel(llvm::Module &m, const ElementwiseKernel &kernel) {
  KernelBuilder builder(m, kernel);
  TS_RETURN_IF_ERROR(builder.build());
  return builder.outerExtent();
}

bool isFusibleElementwise(const ir::ExprNode &node) {
  const auto *call = node.as<ir::CallNode>();
  return call && call->calleeKind() == ir::CallNode::CalleeKind::Op &&
         fusibleOps().count(call->op()->name) && isF32(call->type());
}

Expected<std::string> emitObject(const std::vector<ElementwiseKernel> &kernels,
                                 const CodegenOptions &options) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, makeTargetMachine(options));
  llvm::LLVMContext ctx;
  llvm::Module m("tessera_kernels", ctx);
  m.setTargetTriple(tm->getTargetTriple().str());
  m.setDataLayout(tm->createDataLayout());
  for (const ElementwiseKernel &k : kernels) {
    if (m.getFunction(k.symbol))
      return Error::format("kernel symbol '{}' is used twice", k.symbol);
    TS_RETURN_IF_ERROR(emitElementwiseKernel(m, k));
  }
  TS_RETURN_IF_ERROR(linkKernelLibrary(m));
  return optimiseAndEmit(m, *tm, options.optLevel);
}

Expected<std::string> linkSharedObject(const std::vector<std::string> &objects) {
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec);
  if (ec)
    return Error::format("no temporary folder: {}", ec.message());
  char tmpl[] = "tessera-link-XXXXXX";
  std::string base = (dir / tmpl).string();
  std::vector<char> name(base.begin(), base.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data()))
    return Error::format("cannot create a temporary folder in {}", dir.string());
  const fs::path work(name.data());
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{work};

  // Paths are quoted: TMPDIR may hold spaces. CC may carry flags, as in make.
  auto quoted = [](const fs::path &p) { return "'" + p.string() + "'"; };
  const char *cc = std::getenv("CC");
  std::string cmd = std::string(cc && *cc ? cc : "cc") + " -shared -o " + quoted(work / "out.so");
  for (size_t i = 0; i < objects.size(); ++i) {
    fs::path o = work / fmt::format("k{}.o", i);
    std::ofstream f(o, std::ios::binary);
    f.write(objects[i].data(), std::streamsize(objects[i].size()));
    if (!f)
      return Error::format("cannot write {}", o.string());
    cmd += " " + quoted(o);
  }
  cmd += " -lm 2>" + quoted(work / "link.log");
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(work / "link.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return Error::format("linking the host code failed ({}): {}", cmd, text);
  }
  std::ifstream so(work / "out.so", std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(so)), std::istreambuf_iterator<char>());
}

} // namespace tessera::codegen
