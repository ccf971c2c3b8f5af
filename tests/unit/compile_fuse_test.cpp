//===- tests/unit/compile_fuse_test.cpp - Host elementwise fusion ---------===//
#include "compile/fuse.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/visit.h"
#include "kit/kit.h"
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
    inputs.push_back(kit::randomTensor(p->type(), kit::Domain::Positive, rng));
  auto want = interp::run(original, inputs);
  auto got = interp::run(m2, inputs);
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  auto w = want->flatten(), g = got->flatten();
  REQUIRE(w.size() == g.size());
  for (size_t i = 0; i < w.size(); ++i)
    CHECK(kit::compareTensors(g[i], w[i]) == "");
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
  // exp is used twice: its own tree; neg+tanh fuse (t is used twice); softmax
  // stays; add+abs+bias_add+relu fuse.
  auto calls = fusedCalls(*fused);
  std::sort(calls.begin(), calls.end());
  CHECK(calls == std::vector<std::pair<std::string, size_t>>{{"t", 2}, {"z", 4}});
  CHECK(stats.fusedOps == 6);
  checkSameResults(m, *fused);
}

TEST_CASE("fuse: non-f32 ops stay out; broadcast operands are read in place",
          "[compile][fuse]") {
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
  // exp/neg on f64 stay; add(y, z[1]) + relu fuse with z broadcast.
  CHECK(fusedCalls(*fused) == std::vector<std::pair<std::string, size_t>>{{"d", 2}});
  checkSameResults(m, *fused);
}

TEST_CASE("fuse: a smaller producer is not pulled into a broadcasting consumer",
          "[compile][fuse]") {
  // Squeeze-excite: the [1, 4, 1, 1] gate is its own tree; the multiply by
  // it reads the gate's result with broadcasting.
  ir::Module m = parse(R"(
def @main(%x: f32[1, 4, 3, 3], %g: f32[1, 4, 1, 1]) -> f32[1, 4, 3, 3] {
  %a = add(%g, %g) : f32[1, 4, 1, 1]
  %h = hard_sigmoid(%a) : f32[1, 4, 1, 1]
  %y = multiply(%x, %h) : f32[1, 4, 3, 3]
  %r = relu(%y) : f32[1, 4, 3, 3]
  return %r
}
)");
  auto fused = compile::fuseElementwise(m.find("main"));
  REQUIRE(fused.ok());
  auto calls = fusedCalls(*fused);
  std::sort(calls.begin(), calls.end());
  CHECK(calls == std::vector<std::pair<std::string, size_t>>{{"h", 2}, {"r", 2}});
  checkSameResults(m, *fused);
}

TEST_CASE("fuse: a conv's bias_add and activation become one loop", "[compile][fuse]") {
  ir::Module m = parse(R"(
def @main(%x: f32[1, 2, 5, 5], %w: f32[4, 2, 3, 3], %b: f32[4]) -> (f32[1, 4, 3, 3], f32[1, 4, 3, 3]) {
  %bc = constant f32[4] [0.5, -0.25, 1.0, 2.0]
  %c = conv2d(%x, %w) : f32[1, 4, 3, 3]
  %y = bias_add(%c, %b) : f32[1, 4, 3, 3]
  %r = relu(%y) : f32[1, 4, 3, 3]
  %y2 = bias_add(%c, %bc) : f32[1, 4, 3, 3]
  %s = sigmoid(%y2) : f32[1, 4, 3, 3]
  %t = tuple(%r, %s)
  return %t
}
)");
  compile::FuseStats stats;
  auto fused = compile::fuseElementwise(m.find("main"), &stats);
  REQUIRE(fused.ok());
  auto calls = fusedCalls(*fused);
  std::sort(calls.begin(), calls.end());
  CHECK(calls == std::vector<std::pair<std::string, size_t>>{{"r", 2}, {"s", 2}});
  // Inside: add with the bias as [4, 1, 1]; the constant bias was reshaped
  // at compile time, the parameter bias through a reshape outside.
  size_t reshapes = 0, biasAdds = 0;
  for (const ir::ExprNode *n : ir::postOrder((*fused)->body()))
    if (const auto *call = n->as<ir::CallNode>(); call && call->op()) {
      reshapes += call->op()->name == "reshape";
      biasAdds += call->op()->name == "bias_add";
    }
  CHECK(reshapes == 1);
  CHECK(biasAdds == 0);
  checkSameResults(m, *fused);
}
