//===- tests/unit/interp_test.cpp - Reference interpreter ----------------===//
#include "test_util.h"

#include "interp/interpreter.h"
#include "ir/module.h"

using namespace tessera;
using namespace tessera::ir;
using tessera::test::f32;

namespace {
Module twoLayer() {
  // main(x) = (helper(x) + 1, x) where helper(a) = relu(a) * 2
  Type t = Type::tensor(DType::F32, {3});
  Var a = makeVar("a", t);
  Module m("m");
  m.set("helper", makeFunction({a}, expectOk(makeCall(
                                        "multiply", {expectOk(makeCall("relu", {a})),
                                                     makeConstant(f32({}, {2.0}))}))));
  Var x = makeVar("x", t);
  Expr h = expectOk(makeGlobalCall("helper", m.find("helper")->type(), {x}));
  Expr plus = expectOk(makeCall("add", {h, makeConstant(f32({1}, {1.0}))}));
  m.set("main", makeFunction({x}, makeTuple({plus, x})));
  return m;
}
} // namespace

TEST_CASE("the interpreter runs globals and returns tuples", "[interp]") {
  Module m = twoLayer();
  auto r = interp::run(m, {f32({3}, {-1.0, 0.5, 2.0})});
  REQUIRE(r.ok());
  REQUIRE(r->isTuple);
  auto outs = r->flatten();
  REQUIRE(outs.size() == 2);
  REQUIRE(outs[0].toDoubles() == std::vector<double>{1.0, 2.0, 5.0});
  REQUIRE(outs[1].toDoubles() == std::vector<double>{-1.0, 0.5, 2.0});
}

TEST_CASE("the interpreter refuses recursive globals instead of overflowing the stack",
          "[interp]") {
  Type t = Type::tensor(DType::F32, {2});
  Type fn = Type::func({t}, t);
  Module m;
  auto calling = [&](const std::string &callee) {
    Var x = makeVar("x", t);
    return makeFunction({x}, expectOk(makeGlobalCall(callee, fn, {x})));
  };
  m.set("main", calling("main"));
  auto r = interp::run(m, {f32({2}, {1, 2})});
  REQUIRE(!r.ok());
  CHECK(r.error().str() ==
        "@main calls itself: a recursive call never returns (the IR has no control flow)");

  // Through others: main -> a -> b -> c -> a.
  m.set("main", calling("a"));
  m.set("a", calling("b"));
  m.set("b", calling("c"));
  m.set("c", calling("a"));
  r = interp::run(m, {f32({2}, {1, 2})});
  REQUIRE(!r.ok());
  CHECK(r.error().str() == "@a calls @b, which calls @c, which calls @a: a recursive call never "
                           "returns (the IR has no control flow)");
  // A diamond of calls is no cycle.
  Var y = makeVar("y", t);
  m.set("c", makeFunction({y}, expectOk(makeCall("neg", {y}))));
  Var z = makeVar("z", t);
  m.set("b", makeFunction({z}, expectOk(makeCall("add", {expectOk(makeGlobalCall("c", fn, {z})),
                                                         expectOk(makeGlobalCall("c", fn, {z}))}))));
  CHECK(m.checkNoRecursion().ok());
  r = interp::run(m, {f32({2}, {1, 2})});
  REQUIRE(r.ok());
  CHECK(r->tensor.toDoubles() == std::vector<double>{-2, -4});
}

TEST_CASE("the interpreter names a wrong input", "[interp]") {
  Module m = twoLayer();
  auto shape = interp::run(m, {f32({4}, {1, 2, 3, 4})});
  REQUIRE(shape.error().str() == "input 'x' (#0) of @main expects f32[3], got f32[4]");
  auto dtype = interp::run(m, {test::i64({3}, {1, 2, 3})});
  REQUIRE(dtype.error().str() == "input 'x' (#0) of @main expects f32[3], got i64[3]");
  auto count = interp::run(m, {});
  REQUIRE(count.error().str() == "@main takes 1 input, got 0");
  auto entry = interp::run(m, {}, "nope");
  REQUIRE(entry.error().str() == "module 'm' has no function '@nope'");
}

TEST_CASE("the interpreter takes strided DLPack inputs", "[interp]") {
  Module m = twoLayer();
  float data[6] = {-1, 9, 0.5, 9, 2, 9};
  int64_t shape[1] = {3}, strides[1] = {2};
  DLTensor dl{};
  dl.data = data;
  dl.device = {kDLCPU, 0};
  dl.ndim = 1;
  dl.dtype = {kDLFloat, 32, 1};
  dl.shape = shape;
  dl.strides = strides;
  auto r = interp::runDL(m, {dl});
  REQUIRE(r.ok());
  REQUIRE(r->flatten()[0].toDoubles() == std::vector<double>{1.0, 2.0, 5.0});
  dl.device = {kDLCUDA, 0};
  REQUIRE(interp::runDL(m, {dl}).error().str() == "input #0 is not on the CPU");
}

TEST_CASE("the interpreter reports kernel errors with the node", "[interp]") {
  Var x = makeVar("x", Type::tensor(DType::I64, {1}));
  Expr data = makeConstant(f32({3}, {1, 2, 3}));
  Module m;
  m.set("main", makeFunction({x}, expectOk(makeCall("gather", {data, x}, {}, "lookup"))));
  auto r = interp::run(m, {test::i64({1}, {7})});
  REQUIRE_FALSE(r.ok());
  REQUIRE_THAT(r.error().str(), Catch::StartsWith("while running gather '%lookup': gather:"));
}

TEST_CASE("the interpreter evaluates local functions and shared values once", "[interp]") {
  Type t = Type::tensor(DType::F32, {2});
  Var p = makeVar("p", t), q = makeVar("q", t);
  Function fn = makeFunction({p, q}, expectOk(makeCall("subtract", {p, q})));
  Var x = makeVar("x", t);
  Expr e = expectOk(makeCall("exp", {x}));
  Expr call = expectOk(makeLocalCall(fn, {e, x}));
  Expr again = expectOk(makeLocalCall(fn, {call, e})); // e used three times
  Module m;
  m.set("main", makeFunction({x}, again));
  auto r = interp::run(m, {f32({2}, {0.0, 1.0})});
  REQUIRE(r.ok());
  // (exp(x) - x) - exp(x) = -x
  test::requireClose(r->tensor, f32({2}, {-0.0, -1.0}), 1e-12, 1e-12);
}
