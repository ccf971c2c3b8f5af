//===- tests/unit/compile_fuse_test.cpp - Host elementwise fusion ---------===//
#include "compile/fuse.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/visit.h"
#include "partition/plugin_kit.h"
#include "test_util.h"

using namespace tessera;

namespace {

ir::Module parse(const std::string &text) {
  auto m = ir::parseModule(text);
  if (!m.ok())
    FAIL(m.error().str());
  return std::move(*m);
}

/// The fused calls of `fn`'s body, as (name, number of ops inside).
std::vector<std::pair<std::string, size_t>> fusedCalls(const ir::Function &fn) {
  std::vector<std::pair<std::string, size_t>> out;
  for (const ir::ExprNode *n : ir::postOrder(fn->body(), /*intoFunctions=*/false))
    if (const auto *call = n->as<ir::CallNode>(); call && compile::isHostFusedCall(*call)) {
      size_t ops = 0;
      for (const ir::ExprNode *m : ir::postOrder(call->localFn()->body()))
        ops += m->as<ir::CallNode>() != nullptr;
      out.emplace_back(call->name(), ops);
    }
  return out;
}

/// Interprets the original and the fused module on the same random inputs.
void checkSameResults(const ir::Module &original, const ir::Function &fused) {
  ir::Module m2 = original;
  m2.set("main", fused);
  std::mt19937_64 rng(5);
  std::vector<ir::Tensor> inputs;
  for (const ir::Var &p : original.find("main")->params())
    inputs.push_back(partition::kit::randomTensor(p->type(), partition::kit::Domain::Positive, rng));
  auto want = interp::run(original, inputs);
  auto got = interp::run(m2, inputs);
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  auto w = want->flatten(), g = got->flatten();
  REQUIRE(w.size() == g.size());
  for (size_t i = 0; i < w.size(); ++i)
    CHECK(partition::kit::compareTensors(g[i], w[i]) == "");
}

} // namespace

TEST_CASE("fuse: a chain of elementwise ops becomes one fused call", "[compile][fuse]") {
  ir::Module m = parse(R"(
def @main(%x: f32[2, 8], %y: f32[2, 8]) -> f32[2, 8] {
  %two = constant f32[] [2.0]
  %a = multiply(%x, %two)
  %b = add(%a, %y)
  %c = relu(%b)
  %d = sigmoid(%c)
  return %d
}
)");
  compile::FuseStats stats;
  auto fused = compile::fuseElementwise(m.find("main"), &stats);
  REQUIRE(fused.ok());
  CHECK(stats.groups == 1);
  CHECK(stats.fusedOps == 4);
  auto calls = fusedCalls(*fused);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0] == std::pair<std::string, size_t>{"d", 4});
  // The scalar constant is folded in: the fused function takes x and y only.
  const auto *root = (*fused)->body()->as<ir::CallNode>();
  REQUIRE(root);
  CHECK(root->args().size() == 2);
  checkSameResults(m, *fused);
}

TEST_CASE("fuse: a value used twice ends a tree; other shapes and ops stay out",
          "[compile][fuse]") {
  ir::Module m = parse(R"(
def @main(%x: f32[4, 4], %b: f32[4]) -> (f32[4, 4], f32[4, 4]) {
  %e = exp(%x)
  %n = neg(%e)
  %t = tanh(%n)
  %s = softmax(%t)
  %u = add(%e, %s)
  %v = abs(%u)
  %w = bias_add(%v, %b)
  %z = relu(%w)
  %r = tuple(%t, %z)
  return %r
}
)");
  compile::FuseStats stats;
  auto fused = compile::fuseElementwise(m.find("main"), &stats);
  REQUIRE(fused.ok());
  // exp is used twice: its own tree; neg+tanh fuse; add+abs fuse; relu alone.
  auto calls = fusedCalls(*fused);
  std::sort(calls.begin(), calls.end());
  CHECK(calls == std::vector<std::pair<std::string, size_t>>{{"t", 2}, {"v", 2}});
  CHECK(stats.fusedOps == 4);
  checkSameResults(m, *fused);
}

TEST_CASE("fuse: non-f32 and broadcast operands are not fused", "[compile][fuse]") {
  ir::Module m = parse(R"(
def @main(%x: f64[3], %y: f32[3], %z: f32[1]) -> (f64[3], f32[3]) {
  %a = exp(%x)
  %b = neg(%a)
  %c = add(%y, %z)
  %d = relu(%c)
  %r = tuple(%b, %d)
  return %r
}
)");
  compile::FuseStats stats;
  auto fused = compile::fuseElementwise(m.find("main"), &stats);
  REQUIRE(fused.ok());
  CHECK(stats.groups == 0);
  CHECK(fusedCalls(*fused).empty());
}
