//===- plugins/dnnl/runtime.cpp - The dnnl plugin's runtime module --------===//
//
// init() builds the plans; run() borrows a Context, points the memory
// objects of the caller's tensors at this call's data, executes the steps
// on the context's stream and copies the outputs no step wrote in place.
//
//===----------------------------------------------------------------------===//
#include "runtime.h"

#include <cstring>
#include <iterator>

#include <omp.h>

namespace tessera::dnnl_plugin {

/// One call's private state. The memory objects point into this context's
/// arena and scratchpad, or at constants; those of the caller's tensors get
/// their data handle set at each call.
struct DnnlModule::Context {
  int threads;                        // OpenMP threads the primitives are for
  std::vector<dnnl::primitive> prims; // per step
  AlignedBytes arena, scratchpad;
  dnnl::stream stream{cpuEngine()};
  std::vector<std::unordered_map<int, dnnl::memory>> args; // per step
  struct Binding {
    dnnl::memory mem;
    bool input;
    int index;
    size_t within; // bytes into the caller's tensor (a view of an output)
  };
  std::vector<Binding> bindings; // memory objects over the caller's tensors

  Context(const PrimitivePlan &plan, int threads, std::vector<dnnl::primitive> prims)
      : threads(threads), prims(std::move(prims)), arena(alignedBytes(plan.arenaBytes)),
        scratchpad(alignedBytes(plan.scratchpadBytes)) {
    for (const Step &step : plan.steps) {
      std::unordered_map<int, dnnl::memory> map;
      for (const StepArg &a : step.args) {
        void *ptr = nullptr;
        const Buffer *b = nullptr;
        size_t within = 0;
        if (a.buffer >= 0) {
          auto [root, offset] = rootOf(plan.buffers, a.buffer);
          b = &plan.buffers[size_t(root)];
          within = offset;
        }
        if (!b)
          ptr = scratchpad.get();
        else if (b->kind == Buffer::Kind::Temp)
          ptr = arena.get() + b->offset + within;
        else if (b->kind == Buffer::Kind::Const)
          ptr = const_cast<void *>(b->data);
        dnnl::memory mem(a.md, cpuEngine(), ptr);
        if (b && (b->kind == Buffer::Kind::Input || b->kind == Buffer::Kind::Output))
          bindings.push_back(Binding{mem, b->kind == Buffer::Kind::Input, b->index, within});
        map.emplace(a.arg, mem);
      }
      args.push_back(std::move(map));
    }
  }

  /// Where a buffer's bytes are during this call.
  const void *where(const PrimitivePlan &plan, int buffer, std::span<const DLTensor *const> inputs,
                    std::span<const DLTensor *const> outputs) const {
    auto [root, within] = rootOf(plan.buffers, buffer);
    const Buffer &b = plan.buffers[size_t(root)];
    const void *at = nullptr;
    switch (b.kind) {
    case Buffer::Kind::Input: at = sdk::tensorData(*inputs[size_t(b.index)]); break;
    case Buffer::Kind::Output: at = sdk::tensorData(*outputs[size_t(b.index)]); break;
    case Buffer::Kind::Const: at = b.data; break;
    case Buffer::Kind::Temp: at = arena.get() + b.offset; break;
    }
    return at ? static_cast<const std::byte *>(at) + within : nullptr;
  }
};

/// A plan, the Contexts of its calls not in use, and its primitives for
/// each OpenMP thread count that called it.
class DnnlModule::Runner {
public:
  explicit Runner(std::unique_ptr<const PrimitivePlan> plan) : plan_(std::move(plan)) {}
  const PrimitivePlan &plan() const { return *plan_; }
  void run(std::span<const DLTensor *const> inputs, std::span<const DLTensor *const> outputs) const;
  /// "; for 2 threads, at the first call on them: 3 of 40 steps made again".
  std::string otherThreadCounts() const;

private:
  std::unique_ptr<Context> acquire() const;
  void release(std::unique_ptr<Context> ctx) const;

  std::unique_ptr<const PrimitivePlan> plan_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Context>> free_;
  // OpenMP threads -> the plan's primitives for that many threads.
  mutable std::map<int, std::vector<dnnl::primitive>> primitives_;
};

std::unique_ptr<DnnlModule::Context> DnnlModule::Runner::acquire() const {
  // The caller's OpenMP thread count (a session's, set by the runtime).
  const int threads = omp_get_max_threads();
  std::vector<dnnl::primitive> prims;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.rbegin(); it != free_.rend(); ++it)
      if ((*it)->threads == threads) {
        std::unique_ptr<Context> ctx = std::move(*it);
        free_.erase(std::next(it).base());
        return ctx;
      }
    auto made = primitives_.find(threads);
    if (made == primitives_.end())
      made = primitives_.emplace(threads, primitivesForThisThreadCount(*plan_)).first;
    prims = made->second;
  }
  return std::make_unique<Context>(*plan_, threads, std::move(prims));
}

void DnnlModule::Runner::release(std::unique_ptr<Context> ctx) const {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(ctx));
}

std::string DnnlModule::Runner::otherThreadCounts() const {
  std::string s;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[threads, prims] : primitives_) {
    if (threads == plan_->threads)
      continue;
    size_t again = 0;
    for (size_t i = 0; i < prims.size(); ++i)
      again += prims[i].get() != plan_->steps[i].prim.get();
    s += "; for " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
         ", at the first call on them: " + std::to_string(again) + " of " +
         std::to_string(prims.size()) + " steps made again";
  }
  return s;
}

void DnnlModule::Runner::run(std::span<const DLTensor *const> inputs,
                             std::span<const DLTensor *const> outputs) const {
  const PrimitivePlan &plan = *plan_;
  std::unique_ptr<Context> ctx = acquire();
  // Returned to the free list however the call ends.
  struct Return {
    const Runner *self;
    std::unique_ptr<Context> &ctx;
    ~Return() { self->release(std::move(ctx)); }
  } ret{this, ctx};

  for (Context::Binding &b : ctx->bindings)
    b.mem.set_data_handle(
        static_cast<std::byte *>(b.input ? sdk::tensorData(*inputs[size_t(b.index)])
                                         : sdk::tensorData(*outputs[size_t(b.index)])) +
        b.within);
  // Profiled (plugin ABI 1.6): each primitive is reported with oneDNN's
  // implementation. Execution on the CPU engine returns when it is done.
  const bool profiled = sdk::profiling();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const int64_t start = profiled ? sdk::profileClockNs() : 0;
    if (plan.steps[i].own) {
      plan.steps[i].own(ctx->args[i]);
    } else if (plan.steps[i].serial && ctx->threads > 1) {
      omp_set_num_threads(1);
      ctx->prims[i].execute(ctx->stream, ctx->args[i]);
      omp_set_num_threads(ctx->threads);
    } else {
      ctx->prims[i].execute(ctx->stream, ctx->args[i]);
    }
    if (profiled) {
      const Step &s = plan.steps[i];
      sdk::profileEvent(s.kind.c_str(), s.nodes.c_str(), s.impl.c_str(), start,
                        sdk::profileClockNs());
    }
  }
  ctx->stream.wait();
  for (const FinalCopy &c : plan.finalCopies) {
    void *dst = sdk::tensorData(*outputs[size_t(c.output)]);
    const void *src = ctx->where(plan, c.buffer, inputs, outputs);
    if (dst != src && c.bytes > 0)
      std::memmove(dst, src, c.bytes);
  }
}

DnnlModule::DnnlModule(std::vector<sdk::JsonFunction> functions, Origin origin)
    : JsonRuntime(kTypeKey, std::move(functions)), origin_(origin) {}

DnnlModule::~DnnlModule() = default;

void DnnlModule::init(std::span<const sdk::JsonFunction> functions) {
  // A symbolic function's dims are known only at its calls: its plans are
  // built then, per shape (prepareShape).
  if (origin_ == Origin::Codegen) {
    for (const sdk::JsonFunction &fn : functions) {
      if (!sdk::isSymbolic(fn.graph)) {
        buildPlan(fn, prefix(), ConstantCopies::CheckOnly);
        continue;
      }
      // At the symbols' examples, one consistent shape: what cannot be built
      // at any shape fails the compile, not the first run.
      const sdk::Graph example =
          sdk::resolveGraph(fn.graph, sdk::exampleValues(fn.graph.symbols), false);
      buildPlan(fn, prefix(), ConstantCopies::CheckOnly, &example);
    }
    return;
  }
  for (const sdk::JsonFunction &fn : functions) {
    if (sdk::isSymbolic(fn.graph)) {
      runners_.push_back(nullptr);
      continue;
    }
    auto plan = buildPlan(fn, prefix());
    // The steps read these constants only through their reordered copies.
    // Each is let go once the reverse reorder is seen to give back its
    // bytes exactly (a copy made from part of them, or not exact, or
    // transformed for Winograd, keeps them).
    for (const ReorderedConstant &c : plan->reordered) {
      const sdk::JsonConstant &k = fn.constants[c.constant];
      if (!c.reversible || c.view.get_size() != k.bytes())
        continue;
      AlignedBytes back = alignedBytes(k.bytes());
      restoreConstant(c, back.get());
      if (std::memcmp(back.get(), k.data(), k.bytes()) == 0)
        releaseConstant(fn.index, c.constant, [c](std::byte *out) { restoreConstant(c, out); });
    }
    runners_.push_back(std::make_unique<const Runner>(std::move(plan)));
  }
}

const std::vector<std::unique_ptr<const DnnlModule::Runner>> &DnnlModule::runners() const {
  if (origin_ == Origin::Codegen)
    std::call_once(runnersOnce_, [&] {
      for (const sdk::JsonFunction &fn : functions())
        runners_.push_back(sdk::isSymbolic(fn.graph)
                               ? nullptr
                               : std::make_unique<const Runner>(buildPlan(fn, prefix())));
    });
  return runners_;
}

std::string DnnlModule::source(std::string_view format) const {
  if (format != "plan") {
    if (!format.empty() && format != "json")
      throw sdk::Error(prefix() + "no '" + std::string(format) + "' source (formats: json, plan)",
                       TESSERA_STATUS_UNIMPLEMENTED);
    return JsonRuntime::source(format);
  }
  std::string s;
  for (const sdk::JsonFunction &fn : functions()) {
    const Runner *runner = runners()[fn.index].get();
    if (!runner) {
      s += "function '" + fn.symbol + "': " + std::to_string(fn.graph.symbols.size()) +
           " symbolic dims; a plan is built per shape at its first call (the " +
           std::to_string(kShapeCacheSize) + " most recent kept)\n";
      continue;
    }
    std::vector<bool> released(fn.constants.size());
    for (size_t c = 0; c < released.size(); ++c)
      released[c] = constantReleased(fn.index, c);
    const PrimitivePlan &plan = runner->plan();
    s += describePlan(plan, fn, released, prefix());
    s += "  primitives: made for " + std::to_string(plan.threads) + " OpenMP thread" +
         (plan.threads == 1 ? "" : "s") + runner->otherThreadCounts() + "\n";
  }
  return s;
}

void DnnlModule::run(const sdk::JsonFunction &fn, std::span<const DLTensor *const> inputs,
                     std::span<const DLTensor *const> outputs) const {
  runners()[fn.index]->run(inputs, outputs);
}

std::shared_ptr<const void> DnnlModule::prepareShape(const sdk::JsonFunction &fn,
                                                     const sdk::Graph &resolved) const {
  // oneDNN takes no empty tensor. At a shape where every output is empty (a
  // slice of a batch too short for it) there is nothing to compute: no plan.
  // An empty tensor that feeds a non-empty output fails buildPlan, naming
  // the node.
  bool allEmpty = true;
  for (const sdk::NodeRef &r : resolved.outputs)
    allEmpty = allEmpty && resolved.typeOf(r).numel() == 0;
  if (allEmpty)
    return nullptr;
  return std::make_shared<const Runner>(buildPlan(fn, prefix(), ConstantCopies::Make, &resolved));
}

void DnnlModule::runShape(const sdk::JsonFunction & /*fn*/, const Shape &shape,
                          std::span<const DLTensor *const> inputs,
                          std::span<const DLTensor *const> outputs) const {
  if (const auto *runner = static_cast<const Runner *>(shape.prepared.get()))
    runner->run(inputs, outputs);
}

} // namespace tessera::dnnl_plugin
