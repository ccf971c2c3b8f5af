//===- unit/compile_symbolic_test.cpp - One artifact for every batch -------===//
//
// Models whose inputs have pass-through symbolic dims (a batch N) compiled
// once (compile/symbolic_steps.h, runtime/plan.h symbols) and run by one
// session at several values, growing and reusing its memory; every output
// compared with the reference interpreter on the same model with N written
// as that number (|a-b| <= 1e-5 + 1e-5 |b|). Then each error a caller can
// cause, with its message: a dim outside the symbol's bounds, two inputs
// that disagree on N, a constant dim that does not match, a bound output of
// the wrong size; and the compiler's refusal of a dim computed from symbols.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "compile/compile.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "runtime/session.h"
#include "codegen/host_ops.h"
#include "ir/symbol.h"
#include "kit/kit.h"

#include <fmt/ranges.h>
#include "tessera/runtime.hpp"
#include "symbolic_test_util.h"

#include <random>
#include <map>
#include <regex>

using namespace tessera;
using namespace tessera::test;

namespace {

// A small CNN over a batch N (conv, bias, a per-channel scale and relu fused
// into one loop run per row, pool, global pool, flatten, dense, softmax)
// plus a second input sharing N.
const std::string kCnn = R"(module @cnn
def @main(%x: f32[N(1, 16), 3, 8, 8], %y: f32[N(1, 16), 10]) -> (f32[N(1, 16), 10], f32[N(1, 16), 8, 4, 4]) {
  %w = constant f32[8, 3, 3, 3] )" + values(216, 1) + R"(
  %c = conv2d(%x, %w) {pads=[1, 1, 1, 1]}
  %b = constant f32[8] )" + values(8, 3) + R"(
  %cb = bias_add(%c, %b)
  %scale = constant f32[1, 8, 1, 1] )" + values(8, 4) + R"(
  %cs = multiply(%cb, %scale)
  %r = relu(%cs)
  %p = max_pool2d(%r) {pool_size=[2, 2], strides=[2, 2]}
  %g = global_avg_pool2d(%p)
  %f = flatten(%g)
  %w2 = constant f32[10, 8] )" + values(80, 2) + R"(
  %d = dense(%f, %w2)
  %a = add(%d, %y)
  %s = softmax(%a) {axis=1}
  %t = tuple(%s, %p)
  return %t
}
)";

/// `text` with the symbol N (and its bounds) written as `n`.
std::string withBatch(const std::string &text, int64_t n) {
  return std::regex_replace(text, std::regex(R"(N\(1, 16\))"), std::to_string(n));
}

/// Runs `session` at batch n and compares with the interpreter on the model
/// compiled for n.
void checkAt(runtime::Session &session, int64_t n) {
  INFO("N = " << n);
  checkAgainst(session, parse(withBatch(kCnn, n)), unsigned(n));
}

} // namespace

TEST_CASE("symbolic batch: one artifact runs every batch and matches the interpreter",
          "[compile][symbol]") {
  auto model = compileText(kCnn);
  const runtime::Plan &plan = model->plan();
  REQUIRE(plan.symbols.size() == 1);
  CHECK(plan.symbols[0].name == "N");
  CHECK(plan.symbols[0].lo == 1);
  CHECK(plan.symbols[0].hi == 16);
  CHECK(plan.str(model->inputs()[0]) == "f32[N, 3, 8, 8]");
  // The bias, the per-channel scale (unless folded into the conv) and relu:
  // one loop, run per row.
  std::string labels;
  for (const runtime::Step &s : plan.steps)
    labels += s.label + "; ";
  INFO(labels);
  CHECK(std::count_if(plan.steps.begin(), plan.steps.end(), [](const runtime::Step &s) {
          return s.label.starts_with("fused ") && s.label.find("relu") != std::string::npos;
        }) == 1);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  // Growing, shrinking, growing past the first size, the same size again.
  for (int64_t n : {2, 1, 7, 3, 16, 16})
    checkAt(**session, n);

  SECTION("two threads") {
    auto two = runtime::Session::create(model, {2});
    REQUIRE(two.ok());
    for (int64_t n : {5, 9})
      checkAt(**two, n);
  }
}

TEST_CASE("symbolic batch: what a caller gets wrong is an error naming it", "[compile][symbol]") {
  auto model = compileText(kCnn);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  runtime::Session &s = **session;
  auto f32 = [](ir::Shape shape) { return ir::Tensor(ir::DType::F32, std::move(shape)); };

  CHECK(runError(s, {f32({17, 3, 8, 8}), f32({17, 10})}) ==
        "input 'x': dim 0 (N) is 17, outside its bounds 1..16");
  CHECK(runError(s, {f32({0, 3, 8, 8}), f32({0, 10})}) ==
        "input 'x': dim 0 (N) is 0, outside its bounds 1..16");
  CHECK(runError(s, {f32({2, 3, 8, 9}), f32({2, 10})}) ==
        "input 'x': expected f32[N, 3, 8, 8], got f32[2, 3, 8, 9]");
  CHECK(runError(s, {f32({4, 3, 8, 8}), f32({3, 10})}) ==
        "input 'y' dim 0 (N) is 3, but input 'x' dim 0 gives N = 4");
  // A caller's output tensor must have this run's shape.
  ir::Tensor small = f32({3, 10});
  DLTensor view = small.dl();
  REQUIRE(s.setOutput(0, &view).ok());
  CHECK(runError(s, {f32({4, 3, 8, 8}), f32({4, 10})}) ==
        "output 's': this run's inputs make it f32[4, 10], the bound tensor is f32[3, 10]");
  REQUIRE(s.setOutput(0, nullptr).ok());
  CHECK(runError(s, {f32({4, 3, 8, 8}), f32({4, 10})}) == "");
  auto out = s.output(1);
  REQUIRE(out.ok());
  CHECK(std::vector<int64_t>((*out)->shape, (*out)->shape + (*out)->ndim) ==
        std::vector<int64_t>{4, 8, 4, 4});
}

TEST_CASE("symbolic batch: a symbol with no upper bound grows the memory as needed",
          "[compile][symbol]") {
  const std::string text = R"(module @m
def @main(%x: f32[B, 64]) -> f32[B, 64] {
  %e = exp(%x)
  %r = relu(%e)
  %n = neg(%r)
  return %n
}
)";
  auto model = compileText(text);
  CHECK(model->plan().symbols[0].hi < 0);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  std::map<int64_t, uint64_t> held; // memory held after a run at each batch
  for (int64_t b : {1, 1000, 3, 600}) {
    INFO("B = " << b);
    std::mt19937 rng(7);
    ir::Tensor x = randomTensor(ir::Type::tensor(ir::DType::F32, {b, 64}), rng);
    REQUIRE(runError(**session, {x}) == "");
    auto want = interp::run(parse(std::regex_replace(text, std::regex("B"), std::to_string(b))),
                            {x});
    REQUIRE(want.ok());
    auto out = (*session)->output(0);
    REQUIRE(out.ok());
    requireClose(ir::Tensor::copyOf(**out), want->flatten()[0]);
    held[b] = (*session)->memoryBytes();
  }
  // Grown for 1000 rows, given back for 3 (a quarter or less of it), grown
  // again for 600; the memory holds at least the run's output (the three
  // ops are one fused step: no activation).
  CHECK(held[1000] >= 1000 * 64 * 4);
  CHECK(held[3] * 4 <= held[1000]);
  CHECK(held[600] >= 600 * 64 * 4);
}

TEST_CASE("symbolic batch: the C API reports symbols and each run's output shape",
          "[compile][symbol][runtime]") {
  auto r = compile::compileModule(parse(kCnn), {}, nullptr);
  REQUIRE(r.ok());
  tessera::rt::Model model = tessera::rt::Model::fromBytes(r->artifact.data(), r->artifact.size());
  REQUIRE(model.numSymbols() == 1);
  CHECK(model.symbol(0).name == "N");
  CHECK(model.symbol(0).lo == 1);
  CHECK(model.symbol(0).hi == 16);
  CHECK(model.input(0).shape == std::vector<int64_t>{-1, 3, 8, 8});
  CHECK(model.str(model.input(0)) == "f32[N, 3, 8, 8]");
  const char *name = nullptr;
  tessera_status_t *bad = tessera_model_symbol(model.get(), 1, &name, nullptr, nullptr);
  REQUIRE(bad != nullptr);
  CHECK(std::string(tessera_status_message(bad)) ==
        "symbol index 1 out of range (the model has 1 symbol)");
  tessera_status_free(bad);

  tessera::rt::Session session(model, tessera::rt::SessionOptions{1});
  for (int64_t n : {3, 5}) {
    ir::Tensor x(ir::DType::F32, {n, 3, 8, 8}), y(ir::DType::F32, {n, 10});
    DLTensor dx = x.dl(), dy = y.dl();
    session.setInput("x", dx);
    session.setInput("y", dy);
    session.run();
    const DLTensor &out = session.output(1);
    CHECK(std::vector<int64_t>(out.shape, out.shape + out.ndim) ==
          std::vector<int64_t>{n, 8, 4, 4});
  }
}

namespace {

/// One kit sample rebuilt over a symbolic leading dim.
struct BatchCase {
  std::string label;
  int64_t batch = 0;                 // the sample's leading dim
  std::vector<ir::Var> params;       // symbolic where the sample's were [batch, ...]
  std::vector<kit::Domain> domains;  // per param
  ir::Expr call;                     // over `params` (and the sample's constants)
  const ir::Op *op = nullptr;
  ir::Attrs attrs;
  std::vector<ir::Expr> args;        // the call's arguments (params or constants)
};

/// The sample with every parameter whose first dim is the output's (>= 2)
/// made symbolic, when the op's result then has that symbol first: the ops
/// a batch passes through. Nullopt otherwise.
std::optional<BatchCase> batchCase(const kit::OpSample &sample, size_t index) {
  auto kc = kit::buildOpCase(sample, 5 + index);
  if (!kc)
    return std::nullopt;
  const auto *call = kc->ops.at(0)->as<ir::CallNode>();
  if (!call || !call->op() || !call->type().isTensor() || call->type().rank() == 0)
    return std::nullopt;
  const int64_t b = call->type().shape()[0];
  if (b < 2)
    return std::nullopt;
  auto sym = ir::namedSymbol(fmt::format("B{}", index), 1, 64);
  if (!sym.ok())
    return std::nullopt;
  BatchCase bc;
  bc.label = kc->label;
  bc.batch = b;
  bc.op = call->op();
  bc.attrs = call->attrs();
  std::unordered_map<const ir::ExprNode *, ir::Expr> vars;
  const ir::Function main = kc->module.find("main");
  bool any = false;
  for (size_t i = 0; i < main->params().size(); ++i) {
    const ir::Type &t = main->params()[i]->type();
    ir::Shape shape = t.shape();
    if (!shape.empty() && shape[0] == b) {
      shape[0] = *sym;
      any = true;
    }
    ir::Var v = ir::makeVar(fmt::format("x{}_{}", index, i), ir::Type::tensor(t.dtype(), shape));
    vars[main->params()[i].get()] = v;
    bc.params.push_back(v);
    bc.domains.push_back(kc->inputDomains[i]);
  }
  if (!any)
    return std::nullopt;
  for (const ir::Expr &a : call->args())
    bc.args.push_back(vars.count(a.get()) ? vars.at(a.get()) : a);
  auto rebuilt = ir::makeCall(bc.op, bc.args, bc.attrs, fmt::format("s{}", index));
  if (!rebuilt.ok())
    return std::nullopt;
  ir::Shape want = call->type().shape();
  want[0] = *sym;
  if ((*rebuilt)->type() != ir::Type::tensor(call->type().dtype(), want))
    return std::nullopt;
  bc.call = *rebuilt;
  return bc;
}

/// The case at batch `n` as a static module (the interpreter's reference).
ir::Module staticAt(const BatchCase &bc, int64_t n) {
  std::unordered_map<const ir::ExprNode *, ir::Expr> vars;
  std::vector<ir::Var> params;
  for (const ir::Var &p : bc.params) {
    ir::Shape shape = p->type().shape();
    for (int64_t &d : shape)
      if (ir::isSymbol(d))
        d = n;
    params.push_back(ir::makeVar(p->name(), ir::Type::tensor(p->type().dtype(), shape)));
    vars[p.get()] = params.back();
  }
  std::vector<ir::Expr> args;
  for (const ir::Expr &a : bc.args)
    args.push_back(vars.count(a.get()) ? vars.at(a.get()) : a);
  ir::Module m("fixed");
  m.set("main", ir::makeFunction(params, ir::expectOk(ir::makeCall(bc.op, args, bc.attrs))));
  return m;
}

} // namespace

TEST_CASE("symbolic batch: every host op a batch passes through runs at any batch or is "
          "refused by name",
          "[compile][symbol][host-codegen]") {
  // One sample per op (the first a batch passes through), all in one module.
  std::vector<BatchCase> cases;
  for (const std::string &op : codegen::hostLowerings().ops()) {
    auto samples = kit::samplesFor(op);
    for (const kit::OpSample &s : samples)
      if (auto bc = batchCase(s, cases.size())) {
        cases.push_back(std::move(*bc));
        break;
      }
  }
  REQUIRE(cases.size() >= 40);
  std::vector<std::string> refused;
  std::shared_ptr<const runtime::LoadedModel> model;
  std::vector<size_t> kept;
  for (size_t i = 0; i < cases.size(); ++i)
    kept.push_back(i);
  while (!kept.empty()) {
    std::vector<ir::Var> params;
    std::vector<ir::Expr> outs;
    for (size_t i : kept) {
      params.insert(params.end(), cases[i].params.begin(), cases[i].params.end());
      outs.push_back(cases[i].call);
    }
    ir::Module m("batch");
    m.set("main", ir::makeFunction(params, ir::makeTuple(outs)));
    auto r = compile::compileModule(m, {}, nullptr);
    if (r.ok()) {
      auto loaded = runtime::LoadedModel::load(r->artifact, "batch.tsr");
      if (!loaded.ok())
        FAIL(loaded.error().str());
      model = *loaded;
      break;
    }
    // A refusal names the call ('s<i>'): drop that case and compile again.
    const std::string message = r.error().str();
    auto at = std::find_if(kept.begin(), kept.end(), [&](size_t i) {
      return message.find(fmt::format("'s{}'", i)) != std::string::npos;
    });
    INFO(message);
    REQUIRE(at != kept.end()); // every refusal names its call
    refused.push_back(cases[*at].label + ": " + message);
    kept.erase(at);
  }
  // Every op a batch passes through takes it (a refusal would list here).
  INFO(fmt::format("{} of {} ops refused:\n{}", refused.size(), cases.size(),
                   fmt::join(refused, "\n")));
  CHECK(refused.empty());
  REQUIRE(model);

  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  for (int64_t delta : {0, 3, -1}) { // the sample's batch, a larger one, a smaller one
    std::mt19937_64 rng(uint64_t(delta + 7));
    std::vector<ir::Tensor> inputs;
    std::vector<std::vector<ir::Tensor>> perCase;
    for (size_t i : kept) {
      const int64_t n = std::max<int64_t>(cases[i].batch + delta, 1);
      ir::Module fixed = staticAt(cases[i], n);
      std::vector<ir::Tensor> args;
      for (size_t p = 0; p < cases[i].params.size(); ++p)
        args.push_back(kit::randomTensor(fixed.find("main")->params()[p]->type(),
                                         cases[i].domains[p], rng));
      inputs.insert(inputs.end(), args.begin(), args.end());
      perCase.push_back(args);
    }
    for (size_t j = 0; j < inputs.size(); ++j)
      REQUIRE((*session)->setInput(j, inputs[j].dl()).ok());
    auto ran = (*session)->run();
    if (!ran.ok())
      FAIL(ran.error().str());
    for (size_t k = 0; k < kept.size(); ++k) {
      const BatchCase &bc = cases[kept[k]];
      const int64_t n = std::max<int64_t>(bc.batch + delta, 1);
      auto want = interp::run(staticAt(bc, n), perCase[k]);
      REQUIRE(want.ok());
      auto out = (*session)->output(k);
      REQUIRE(out.ok());
      INFO(bc.label << " at batch " << n);
      CHECK(kit::compareTensors(ir::Tensor::copyOf(**out), want->flatten()[0]) == "");
    }
  }
}
