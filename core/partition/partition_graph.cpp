//===- partition/partition_graph.cpp - Lift regions to global functions ---===//
//
// The last partition pass. Every call, in a global function's body, of a
// local function with attribute Compiler="<t>" (a region, as
// merge-compiler-regions and prune-regions leave it) becomes a call of a new
// global function
//
//   def @tessera_<module>_<t>_<n>(...) attributes {Compiler="<t>",
//       global_symbol="tessera_<module>_<t>_<n>"} { <the region's body> }
//
// <module> is the module's name and <t> the target, both sanitised to
// [a-z0-9_]; <n> counts per target from 0 in the order the regions are met
// (global functions in module order, each body in post order), skipping
// names the module already uses. Parameters the call passes the same value
// for are merged. Constants stay inside the body, unless the target's
// plugin asks for them as inputs (TESSERA_CODEGEN_CONSTANTS_AS_INPUTS): then
// each distinct constant becomes a trailing parameter (also those inside
// composite functions, which get matching parameters) and the call site
// passes it.
//
// Preconditions: none beyond a well-formed module; works without targets
// (the PartitionState is optional). With a state, each lifted region is
// recorded in PartitionState::log.regions.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"

#include "ir/visit.h"
#include "partition/regions.h"
#include "plugin/registry.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tessera::partition {

using namespace ir;

namespace {

/// Lower-case, with every character outside [a-z0-9_] turned into '_'.
std::string sanitize(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() ? "module" : out;
}

/// The region function called by `node`, or null.
const FunctionNode *regionOf(const Expr &node) {
  const auto *call = node->as<CallNode>();
  if (!call)
    return nullptr;
  const FunctionNode *fn = call->localFn();
  return fn && fn->attrs().has(kCompilerAttr) ? fn : nullptr;
}

/// Types of a value: one per tuple field (nested tuples flattened).
void flattenTypes(const Type &t, std::vector<std::string> &out) {
  if (t.isTuple()) {
    for (const Type &f : t.fields())
      flattenTypes(f, out);
    return;
  }
  out.push_back(t.str());
}

} // namespace

RegionLifter::RegionLifter(Module &m, passes::PassContext &ctx, PartitionState *state)
    : m_(m), ctx_(ctx), state_(state), moduleName_(sanitize(m.name())) {}

std::string RegionLifter::freshSymbol(const std::string &target) {
  auto it = next_.find(target);
  if (it == next_.end())
    it = next_.emplace(target,
                       std::pair(fmt::format("tessera_{}_{}_", moduleName_, sanitize(target)), 0))
             .first;
  auto &[prefix, n] = it->second;
  for (;;) {
    std::string s = prefix + std::to_string(n++);
    if (!m_.has(s))
      return s;
  }
}

bool RegionLifter::constantsAsInputs(const std::string &target) const {
  const Target *t = state_ ? state_->find(target) : nullptr;
  return t && t->plugin && (t->plugin->codegenFlags() & TESSERA_CODEGEN_CONSTANTS_AS_INPUTS) != 0;
}

Expected<std::string> RegionLifter::targetOf(const CallNode &call, const FunctionNode &fn) const {
  const std::string target = fn.attrs().getString(kCompilerAttr);
  if (target.empty())
    return Error::format("{} has an empty or non-string Compiler attribute", where(call));
  return target;
}

std::string RegionLifter::where(const CallNode &call) {
  return call.name().empty() ? std::string("a region call")
                             : fmt::format("region call '%{}'", call.name());
}

Expected<Expr> RegionLifter::lift(const CallNode &call, const FunctionNode &fn,
                                  const std::string &global, const std::string &symbol,
                                  Lifted &out) {
  TS_ASSIGN_OR_RETURN(const std::string target, targetOf(call, fn));
  if (call.args().size() != fn.params().size())
    return Error::format("{} passes {} arguments to a function of {} parameters", where(call),
                         call.args().size(), fn.params().size());

  // Parameters, merged where the call passes the same value twice.
  std::vector<Var> params;
  std::vector<Expr> args;
  std::unordered_map<const ExprNode *, Expr> subst; // old param -> kept param
  params.reserve(fn.params().size());
  args.reserve(fn.params().size());
  for (size_t i = 0; i < fn.params().size(); ++i) {
    const Expr &arg = call.args()[i];
    // Regions have few parameters: a scan beats a hash table.
    auto same = std::find(args.begin(), args.end(), arg);
    if (same == args.end()) {
      params.push_back(fn.params()[i]);
      args.push_back(arg);
    } else {
      subst[fn.params()[i].get()] = params[size_t(same - args.begin())];
      ++ctx_.stat("params-merged");
    }
  }

  // Constants as trailing parameters, when the plugin asks for that.
  const bool constIn = constantsAsInputs(target);
  std::unordered_map<const ExprNode *, Var> constParam;
  auto paramFor = [&](const Expr &constant) -> Var {
    auto it = constParam.find(constant.get());
    if (it != constParam.end())
      return it->second;
    Var v = makeVar(fmt::format("c{}", constParam.size()), constant->type());
    constParam.emplace(constant.get(), v);
    params.push_back(v);
    args.push_back(constant);
    ++ctx_.stat("constants-as-inputs");
    return v;
  };

  Expr body = fn.body();
  if (!subst.empty() || constIn) {
    TS_ASSIGN_OR_RETURN(body, rewrite(
                                  fn.body(),
                                  [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
                                    if (auto it = subst.find(orig.get()); it != subst.end())
                                      return it->second;
                                    if (!constIn)
                                      return rebuilt;
                                    if (orig->as<ConstantNode>())
                                      return Expr(paramFor(orig));
                                    if (const auto *c = rebuilt->as<CallNode>(); c && c->localFn())
                                      return composite(*c, paramFor);
                                    return rebuilt;
                                  },
                                  /*intoFunctions=*/false));
  }

  Attrs attrs = fn.attrs();
  attrs.set(kGlobalSymbolAttr, symbol);
  Function lifted = makeFunction(params, body, std::move(attrs), symbol, fn.span());
  out.info = describe(symbol, target, *lifted);
  out.function = lifted;
  const Type &fnType = lifted->type(); // what m.globalType(symbol) gives
  return makeGlobalCall(symbol, fnType, std::move(args), call.name(), call.span())
      .withContext(fmt::format("lifting {} in '@{}' to '@{}'", where(call), global, symbol));
}

template <typename ParamFor>
Expected<Expr> RegionLifter::composite(const CallNode &call, ParamFor &paramFor) {
  const FunctionNode &fn = *call.localFn();
  std::unordered_map<const ExprNode *, Var> inner;
  std::vector<Var> params = fn.params();
  std::vector<Expr> args(call.args().begin(), call.args().end());
  TS_ASSIGN_OR_RETURN(Expr body, rewrite(
                                     fn.body(),
                                     [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
                                       if (!orig->as<ConstantNode>())
                                         return rebuilt;
                                       auto [it, fresh] = inner.emplace(orig.get(), nullptr);
                                       if (fresh) {
                                         it->second = makeVar(fmt::format("k{}", inner.size() - 1),
                                                              orig->type());
                                         params.push_back(it->second);
                                         args.push_back(paramFor(orig));
                                       }
                                       return Expr(it->second);
                                     },
                                     /*intoFunctions=*/false));
  if (inner.empty())
    return makeLocalCall(call.localFnExpr(), std::move(args), call.name(), call.span());
  Function f = makeFunction(std::move(params), std::move(body), fn.attrs(), fn.name(), fn.span());
  return makeLocalCall(f, std::move(args), call.name(), call.span());
}

void RegionLifter::notePlacement(const std::string &global, const std::vector<int> &members,
                                 Lifted &out) const {
  if (!state_ || state_->kept.empty())
    return;
  std::vector<std::string> reasons; // each once, in member order
  for (int m : members)
    if (auto it = state_->kept.find({global, m}); it != state_->kept.end() &&
        std::find(reasons.begin(), reasons.end(), it->second) == reasons.end())
      reasons.push_back(it->second);
  out.info.placement = fmt::format("{}", fmt::join(reasons, "; "));
}

RegionInfo RegionLifter::describe(const std::string &symbol, const std::string &target,
                                  const FunctionNode &fn) {
  RegionInfo info;
  info.symbol = symbol;
  info.target = target;
  for (const Var &p : fn.params())
    info.inputs.push_back(p->type().str());
  flattenTypes(fn.resultType(), info.outputs);
  for (const ExprNode *n : postOrder(fn.body()))
    if (const auto *c = n->as<CallNode>(); c && c->op()) {
      ++info.ops;
      info.flops += estimateFlops(*c);
    }
  return info;
}

Expected<Function> RegionLifter::liftAll(const Function &fn, const std::string &global) {
  auto body = rewrite(
      fn->body(),
      [&](const Expr &, const Expr &rebuilt) -> Expected<Expr> {
        const auto *call = rebuilt->as<CallNode>();
        const FunctionNode *region = call ? regionOf(rebuilt) : nullptr;
        if (!region)
          return rebuilt;
        TS_ASSIGN_OR_RETURN(const std::string target, targetOf(*call, *region));
        Lifted out;
        TS_ASSIGN_OR_RETURN(Expr liftedCall,
                            lift(*call, *region, global, freshSymbol(target), out));
        add(std::move(out));
        return liftedCall;
      },
      /*intoFunctions=*/false);
  if (!body.ok())
    return std::move(body).withContext(fmt::format("partition-graph: in function '@{}'", global))
        .error();
  if (*body == fn->body())
    return fn;
  return makeFunction(fn->params(), *body, fn->attrs(), fn->name(), fn->span());
}

void RegionLifter::add(Lifted lifted) {
  m_.set(lifted.info.symbol, std::move(lifted.function));
  ++ctx_.stat("regions-lifted");
  if (state_)
    state_->log.regions.push_back(std::move(lifted.info));
}

namespace {

const passes::PassInfo kPartitionGraphInfo{
    "partition-graph",
    "Lift each Compiler region into a global function @tessera_<module>_<target>_<n>",
    "Each region becomes a global `@tessera_<module>_<target>_<n>` with attributes "
    "`Compiler` and `global_symbol`; several results come back as a tuple; constants stay "
    "inside unless the plugin asks for them as inputs "
    "(`TESSERA_CODEGEN_CONSTANTS_AS_INPUTS`).",
    {
        {"regions-lifted", "regions lifted into global functions"},
        {"params-merged", "region parameters that read the same value, merged"},
        {"constants-as-inputs", "constants passed to a region as inputs"},
    }};

class PartitionGraphPass final : public passes::Pass {
public:
  explicit PartitionGraphPass(PartitionState *state) : state_(state) {}
  const passes::PassInfo &info() const override { return kPartitionGraphInfo; }

  Status run(Module &m, passes::PassContext &ctx) override {
    RegionLifter lifter(m, ctx, state_);
    auto functions = m.functions(); // the new globals are not walked
    for (const auto &[global, fn] : functions) {
      if (fn->attrs().has(kCompilerAttr))
        continue; // already a lifted region
      TS_ASSIGN_OR_RETURN(Function lifted, lifter.liftAll(fn, global));
      if (lifted != fn)
        m.set(global, std::move(lifted));
    }
    return okStatus();
  }

private:
  PartitionState *state_;
};

} // namespace

std::unique_ptr<passes::Pass> createPartitionGraphPass(PartitionState *state) {
  return std::make_unique<PartitionGraphPass>(state);
}

} // namespace tessera::partition
