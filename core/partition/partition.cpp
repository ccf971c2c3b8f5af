//===- partition/partition.cpp - Targets, FLOP estimates, registration ----===//
//
// What the partition passes share: the target list (PartitionState), the
// default notion of a compute-heavy op, FLOP estimates for the report, and
// the registration of the partition passes.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"

#include "ir/op.h"
#include "ir/visit.h"
#include "plugin/registry.h"

#include <numeric>

namespace tessera::partition {

Expected<std::unique_ptr<PartitionState>>
PartitionState::fromNames(const std::vector<std::string> &names,
                          const plugin::PluginRegistry &registry) {
  auto state = std::make_unique<PartitionState>();
  for (const std::string &name : names) {
    if (state->find(name))
      return Error::format("target '{}' is given twice", name);
    std::shared_ptr<const plugin::LoadedPlugin> p = registry.find(name);
    if (!p) {
      std::string loaded;
      for (const auto &q : registry.plugins())
        loaded += (loaded.empty() ? "" : ", ") + q->name();
      return Error::format("no plugin named '{}' is loaded (loaded: {}; `tessera plugins "
                           "--verbose` shows where Tessera looked)",
                           name, loaded.empty() ? "none" : loaded);
    }
    p->warnIfShadowing();
    state->targets.push_back(Target{name, std::move(p)});
  }
  return state;
}

const std::string *PartitionState::withheldFrom(const std::string &global,
                                               const ir::CallNode &call,
                                               const std::string &target) const {
  if (!call.op())
    return nullptr;
  if (!hostNodes.empty() && !call.name().empty() && hostNodes.count(call.name())) {
    static const std::string reason = kOnHostReason;
    return &reason;
  }
  if (withheld.empty())
    return nullptr;
  auto it = withheld.find({global, call.name(), call.op()->name, target});
  return it == withheld.end() ? nullptr : &it->second;
}

bool PartitionState::withhold(const std::string &global, const ir::CallNode &call,
                              const std::string &target, const std::string &reason) {
  if (call.op())
    return withheld.emplace(std::tuple{global, call.name(), call.op()->name, target}, reason)
        .second;
  bool added = false;
  if (call.calleeKind() == ir::CallNode::CalleeKind::Local && call.localFn())
    for (const ir::ExprNode *n : ir::postOrder(call.localFn()->body(), /*intoFunctions=*/false))
      if (const auto *inner = n->as<ir::CallNode>())
        added = withhold(global, *inner, target, reason) || added;
  return added;
}

bool PartitionState::withholdNamed(const std::string &global, const ir::CallNode &call,
                                   const std::string &target,
                                   const std::map<std::string, std::string> &reasons) {
  if (call.op()) {
    auto it = reasons.find(call.name());
    return it != reasons.end() && !call.name().empty() &&
           withheld.emplace(std::tuple{global, call.name(), call.op()->name, target}, it->second)
               .second;
  }
  bool added = false;
  if (call.calleeKind() == ir::CallNode::CalleeKind::Local && call.localFn())
    for (const ir::ExprNode *n : ir::postOrder(call.localFn()->body(), /*intoFunctions=*/false))
      if (const auto *inner = n->as<ir::CallNode>())
        added = withholdNamed(global, *inner, target, reasons) || added;
  return added;
}

const Target *PartitionState::find(std::string_view name) const {
  for (const Target &t : targets)
    if (t.name == name)
      return &t;
  return nullptr;
}

Expected<PartitionState *> requireState(PartitionState *state) {
  if (!state)
    // The pass manager names the pass ("while running pass 'x': ...").
    return Error("needs targets (give --target, e.g. --target json)");
  return state;
}

std::string compositeOf(const ir::CallNode &call) {
  if (call.calleeKind() != ir::CallNode::CalleeKind::Local)
    return {};
  const ir::AttrValue *v = call.localFn()->attrs().find(kCompositeAttr);
  const std::string *s = v ? std::get_if<std::string>(v) : nullptr;
  return s ? *s : std::string();
}

bool callIsStatic(const ir::CallNode &call) {
  if (!call.type().isStatic() || call.attrs().holdsSymbols()) // a topk's k, symbol_values
    return false;
  for (const ir::Expr &a : call.args())
    if (!a->type().isStatic())
      return false;
  return true;
}

const char *notOffered(const ir::CallNode &call, bool takesSymbolicDims) {
  if (call.op() && call.op()->sequence) // the plugin ABI passes tensors only
    return "sequence ops run on the host (plugins are passed tensors)";
  return takesSymbolicDims || callIsStatic(call) ? nullptr : kSymbolicDecline;
}

bool isComputeHeavy(std::string_view op) {
  const ir::Op *def = ir::OpRegistry::global().find(op);
  return def && def->pattern == ir::OpPattern::ComputeHeavy;
}

namespace {

double numel(const ir::Type &t) {
  if (!t.isTensor())
    return 0;
  double n = 1;
  for (int64_t d : t.shape())
    n *= double(d);
  return n;
}

/// Elements of every result of a call (tuple results summed).
double outputElements(const ir::CallNode &call) {
  const ir::Type &t = call.type();
  if (t.isTensor())
    return numel(t);
  double n = 0;
  for (const ir::Type &f : t.fields())
    n += numel(f);
  return n;
}

} // namespace

double estimateFlops(const ir::CallNode &call) {
  if (call.calleeKind() != ir::CallNode::CalleeKind::Op)
    return 0;
  const std::string &op = call.op()->name;
  const auto args = call.args();
  const double out = outputElements(call);
  auto argShape = [&](size_t i) -> const ir::Shape & { return args[i]->type().shape(); };
  if (op == "conv2d" && args.size() >= 2) {
    // Each output element: in_channels/groups * kh * kw multiply-adds.
    const ir::Shape &w = argShape(1); // [O, I/groups, kh, kw]
    return 2 * out * double(w[1]) * double(w[2]) * double(w[3]);
  }
  if (op == "conv2d_transpose" && args.size() >= 2) {
    // Each input element scatters into out_channels/groups * kh * kw outputs.
    const ir::Shape &w = argShape(1); // [I, O/groups, kh, kw]
    return 2 * numel(args[0]->type()) * double(w[1]) * double(w[2]) * double(w[3]);
  }
  if ((op == "dense" || op == "matmul" || op == "batch_matmul") && !args.empty()) {
    // The reduced dimension is the data's last one.
    const ir::Shape &x = argShape(0);
    return x.empty() ? out : 2 * out * double(x.back());
  }
  if ((op == "lstm" || op == "gru" || op == "rnn") && args.size() >= 3) {
    // Per step and row, the products with W [GH, I] and R [GH, H].
    const ir::Shape &x = argShape(0), &w = argShape(1), &r = argShape(2);
    return 2 * double(w[0]) * double(x[0]) * double(x[1]) * double(w[1] * w[2] + r[2] * r[1]);
  }
  if (op == "max_pool2d" || op == "avg_pool2d") {
    std::vector<int64_t> k = call.attrs().getInts("pool_size");
    double window = std::accumulate(k.begin(), k.end(), 1.0,
                                    [](double a, int64_t b) { return a * double(b); });
    return out * window;
  }
  if (op == "global_avg_pool2d" || op == "global_max_pool2d")
    return args.empty() ? out : numel(args[0]->type());
  return out;
}

passes::PassRegistry allPasses(PartitionState *state) {
  passes::PassRegistry r;
  passes::registerStandardPasses(r);
  registerPartitionPasses(r, state);
  return r;
}

void registerPartitionPasses(passes::PassRegistry &r, PartitionState *state) {
  r.add([state] { return createMergeCompositePass(state); });
  r.add([state] { return createAnnotateTargetPass(state); });
  r.add(createMergeCompilerRegionsPass);
  r.add([state] { return createPruneRegionsPass(state); });
  r.add([state] { return createPartitionGraphPass(state); });
  r.add([state] { return createPartitionPass(state); });
}

} // namespace tessera::partition
