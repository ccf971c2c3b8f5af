//===- tests/unit/onnx_control_flow_test.cpp - If, Loop, Scan, SequenceMap ===//
//
// Control flow is specialised at import time (core/frontend/onnx/
// control_flow.cpp and the importer's sub-graph scopes). Models are built
// here with onnx_pb.h and imported with the standard converters; with
// constant inputs everything folds, so @main returns constants.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/interpreter.h"
#include "ir/symbol.h"
#include "ir/visit.h"
#include "onnx_model_builder.h"
#include "onnx_test_util.h"

#include <onnx/onnx_pb.h>

using namespace tessera;
using namespace tessera::frontend::onnx;
using tessera::test::countCalls;
using tessera::test::f32;
using tessera::test::i64;

namespace {

void setType(::onnx::ValueInfoProto *vi, const std::string &name, int32_t elem,
             std::vector<int64_t> dims) {
  vi->set_name(name);
  auto *tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto *s = tt->mutable_shape();
  for (int64_t d : dims)
    s->add_dim()->set_dim_value(d);
}

constexpr int32_t F = ::onnx::TensorProto::FLOAT;
constexpr int32_t I = ::onnx::TensorProto::INT64;
constexpr int32_t B = ::onnx::TensorProto::BOOL;

::onnx::ModelProto model(int64_t opset) { return test::newModel(opset, "g"); }

Expected<ir::Module> import(const ::onnx::ModelProto &m, ImportOptions o = {},
                            ImportReport *report = nullptr) {
  return importModelBytes(m.SerializeAsString(), ".", "model.onnx", o, report);
}

/// The data of @main's result, or of its field i when it returns a tuple.
ir::Tensor resultData(const ir::Module &m, int field = -1) {
  ir::Expr body = m.find("main")->body();
  if (field >= 0) {
    const auto *t = body->as<ir::TupleNode>();
    REQUIRE(t != nullptr);
    body = t->fields()[size_t(field)];
  }
  const auto *c = body->as<ir::ConstantNode>();
  REQUIRE(c != nullptr);
  return c->data();
}

/// If(cond) { y = x + one } else { y = x }, with x an outer initializer.
::onnx::ModelProto ifModel() {
  auto m = model(13);
  auto &g = *m.mutable_graph();
  setType(g.add_input(), "cond", B, {});
  setType(g.add_output(), "y", F, {2});
  test::addInitializer(g, "x", f32({2}, {1, 2}));
  test::addInitializer(g, "one", f32({2}, {1, 1}));
  auto *n = test::addNode(g, "If", {"cond"}, {"y"}, "if0");
  auto *then = test::addGraphAttr(n, "then_branch");
  test::addNode(*then, "Add", {"x", "one"}, {"t"});
  setType(then->add_output(), "t", F, {2});
  auto *els = test::addGraphAttr(n, "else_branch");
  test::addNode(*els, "Identity", {"x"}, {"e"});
  setType(els->add_output(), "e", F, {2});
  return m;
}



/// @main run by the reference interpreter on `inputs`: its flat outputs.
std::vector<ir::Tensor> interpret(const ir::Module &m, const std::vector<ir::Tensor> &inputs) {
  auto out = interp::run(m, inputs);
  if (!out.ok())
    FAIL(out.error().str());
  return out->flatten();
}

ir::Tensor boolScalar(bool v) {
  return ir::Tensor::fromInts(ir::DType::Bool, {}, std::vector<int64_t>{v ? 1 : 0});
}

} // namespace

TEST_CASE("If: a constant condition selects the branch, outer values are visible",
          "[onnx][control_flow]") {
  ImportOptions o;
  o.constantInputs["cond"] = boolScalar(true);
  auto m = import(ifModel(), o);
  REQUIRE(m.ok());
  CHECK(resultData(*m).toDoubles() == std::vector<double>{2, 3});
  CHECK(countCalls(*m, "if") == 0);
  o.constantInputs["cond"] = boolScalar(false);
  m = import(ifModel(), o);
  REQUIRE(m.ok());
  CHECK(resultData(*m).toDoubles() == std::vector<double>{1, 2});
}

TEST_CASE("If: a run-time condition gives an if op over both branches", "[onnx][control_flow]") {
  auto m = import(ifModel());
  REQUIRE(m.ok());
  CHECK(countCalls(*m, "if") == 1);
  // The branches read outer initializers, which stay constants inside them
  // (foldable): the functions take no captured parameter.
  CHECK(interpret(*m, {boolScalar(true)})[0].toDoubles() == std::vector<double>{2, 3});
  CHECK(interpret(*m, {boolScalar(false)})[0].toDoubles() == std::vector<double>{1, 2});

  SECTION("outer values that are not constants are passed to both branches") {
    auto model = ifModel();
    auto &g = *model.mutable_graph();
    g.mutable_initializer()->erase(g.mutable_initializer()->begin()); // x becomes an input
    setType(g.add_input(), "x", F, {2});
    auto r = import(model);
    REQUIRE(r.ok());
    const ir::Tensor x = f32({2}, {5, 7});
    CHECK(interpret(*r, {boolScalar(true), x})[0].toDoubles() == std::vector<double>{6, 8});
    CHECK(interpret(*r, {boolScalar(false), x})[0].toDoubles() == std::vector<double>{5, 7});
  }

  SECTION("branches of different sizes give a result sized at run time") {
    auto model = ifModel();
    auto *els = model.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
    test::addInitializer(*els, "wide", f32({3}, {1, 2, 3}));
    els->mutable_output(0)->set_name("wide");
    els->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    auto r = import(model);
    INFO((r.ok() ? std::string() : r.error().str()));
    REQUIRE(r.ok());
    const ir::Type t = r->find("main")->type().result();
    REQUIRE(t.rank() == 1);
    CHECK(ir::isSymbol(t.shape()[0])); // a run-time symbol, 0..3
    CHECK(ir::symbolInfo(t.shape()[0]).hi == 3);
    CHECK(interpret(*r, {boolScalar(true)})[0].toDoubles() == std::vector<double>{2, 3});
    CHECK(interpret(*r, {boolScalar(false)})[0].toDoubles() == std::vector<double>{1, 2, 3});
  }

  SECTION("branches of different dtypes are an error that asks for the condition") {
    auto model = ifModel();
    auto *els = model.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
    test::addInitializer(*els, "ints", test::i64({2}, {1, 2}));
    els->mutable_output(0)->set_name("ints");
    els->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::INT64);
    ImportReport report;
    auto e = import(model, {}, &report);
    REQUIRE(!e.ok());
    INFO(e.error().str());
    CHECK(e.error().str().find("node 'if0' (If)") != std::string::npos);
    CHECK(e.error().str().find("the then branch returns (f32[2],), the else branch (i64[2],)") !=
          std::string::npos);
    CHECK(report.wantedConstants == std::vector<std::string>{"cond"});
  }
}

TEST_CASE("Loop: unrolled with carried values and stacked scan outputs",
          "[onnx][control_flow]") {
  // for i in 0..M: acc = acc + x; scan out acc. M = 3.
  auto m = model(13);
  auto &g = *m.mutable_graph();
  test::addInitializer(g, "M", i64({}, {3}));
  test::addInitializer(g, "acc0", f32({2}, {0, 0}));
  test::addInitializer(g, "x", f32({2}, {1, 10}));
  setType(g.add_output(), "acc", F, {2});
  setType(g.add_output(), "scan", F, {3, 2});
  auto *n = test::addNode(g, "Loop", {"M", "", "acc0"}, {"acc", "scan"}, "loop0");
  auto *body = test::addGraphAttr(n, "body");
  setType(body->add_input(), "i", I, {});
  setType(body->add_input(), "c", B, {});
  setType(body->add_input(), "a", F, {2});
  test::addNode(*body, "Identity", {"c"}, {"c_out"});
  test::addNode(*body, "Add", {"a", "x"}, {"a_out"});
  test::addNode(*body, "Identity", {"a_out"}, {"s_out"});
  for (auto *o : {"c_out", "a_out", "s_out"})
    body->add_output()->set_name(o);
  auto r = import(m);
  REQUIRE(r.ok());
  CHECK(resultData(*r, 0).toDoubles() == std::vector<double>{3, 30});
  CHECK(resultData(*r, 1).shape() == ir::Shape{3, 2});
  CHECK(resultData(*r, 1).toDoubles() == std::vector<double>{1, 10, 2, 20, 3, 30});

  SECTION("a condition that does not fold runs at run time, the scan length a run-time symbol") {
    setType(g.add_input(), "flag", B, {});
    body->mutable_node(0)->set_input(0, "flag");
    auto r2 = import(m);
    INFO((r2.ok() ? "" : r2.error().str()));
    REQUIRE(r2.ok());
    const ir::Type t = r2->find("main")->body()->type().fields()[1];
    REQUIRE(ir::isSymbol(t.shape()[0])); // a run-time symbol bounded by M: 0..3
    CHECK(ir::symbolInfo(t.shape()[0]).runtime);
    CHECK(ir::symbolInfo(t.shape()[0]).hi == 3);
    CHECK(ir::symbolInfo(t.shape()[0]).name == "loop0_count");
    std::vector<ir::Tensor> all = interpret(*r2, {boolScalar(true)});
    CHECK(all[1].toDoubles() == std::vector<double>{1, 10, 2, 20, 3, 30});
    std::vector<ir::Tensor> one = interpret(*r2, {boolScalar(false)}); // stops after one
    CHECK(one[0].toDoubles() == std::vector<double>{1, 10});
    CHECK(one[1].shape() == ir::Shape{1, 2});
  }
}

namespace {

/// Loop(M, "", acc0) { acc = acc * 2 + x; if (acc > limit) -> cond false
/// when any element passes it, via a nested If that reads the outer-outer
/// value 'limit' }: acc0, x, limit and M are graph inputs unless bound.
::onnx::ModelProto runtimeLoopModel() {
  auto m = model(13);
  auto &g = *m.mutable_graph();
  setType(g.add_input(), "M", I, {});
  setType(g.add_input(), "acc0", F, {2});
  setType(g.add_input(), "x", F, {2});
  setType(g.add_input(), "limit", F, {});
  setType(g.add_output(), "acc", F, {2});
  auto *n = test::addNode(g, "Loop", {"M", "", "acc0"}, {"acc"}, "loop0");
  auto *body = test::addGraphAttr(n, "body");
  setType(body->add_input(), "i", I, {});
  setType(body->add_input(), "c", B, {});
  setType(body->add_input(), "a", F, {2});
  test::addInitializer(*body, "two", f32({2}, {2, 2}));
  test::addNode(*body, "Mul", {"a", "two"}, {"a2"});
  test::addNode(*body, "Add", {"a2", "x"}, {"a_out"});
  test::addNode(*body, "ReduceMax", {"a_out"}, {"top"})->add_attribute()->set_name("keepdims");
  body->mutable_node(2)->mutable_attribute(0)->set_type(::onnx::AttributeProto::INT);
  body->mutable_node(2)->mutable_attribute(0)->set_i(0);
  test::addNode(*body, "Greater", {"top", "limit"}, {"over"});
  auto *iff = test::addNode(*body, "If", {"over"}, {"c_out"}, "stop");
  auto *then = test::addGraphAttr(iff, "then_branch");
  test::addNode(*then, "Not", {"over"}, {"no"});
  setType(then->add_output(), "no", B, {});
  auto *els = test::addGraphAttr(iff, "else_branch");
  test::addNode(*els, "Identity", {"c"}, {"yes"});
  setType(els->add_output(), "yes", B, {});
  for (auto *o : {"c_out", "a_out"})
    body->add_output()->set_name(o);
  return m;
}

/// The same loop in f32 arithmetic (exact: one rounding per operation).
std::vector<double> loopReference(int64_t trip, std::vector<float> acc, std::vector<float> x,
                                  float limit) {
  bool cond = true;
  for (int64_t i = 0; i < trip && cond; ++i) {
    for (size_t k = 0; k < acc.size(); ++k)
      acc[k] = acc[k] * 2.0f + x[k];
    cond = !(std::max(acc[0], acc[1]) > limit);
  }
  return std::vector<double>(acc.begin(), acc.end());
}

} // namespace

TEST_CASE("Loop: a run-time trip count and condition give a loop op", "[onnx][control_flow]") {
  auto m = import(runtimeLoopModel());
  REQUIRE(m.ok());
  CHECK(countCalls(*m, "loop") == 1);
  CHECK(countCalls(*m, "if") == 1); // the nested If reads the body's values: run time too
  const ir::Tensor acc0 = f32({2}, {1, -3}), x = f32({2}, {0.5, 1});
  for (int64_t trip : {0, 1, 3, 50})
    for (float limit : {1e9f, 40.0f}) {
      INFO("trip " << trip << ", limit " << limit);
      auto got = interpret(*m, {i64({}, {trip}), acc0, x, f32({}, {limit})});
      CHECK(got[0].toDoubles() == loopReference(trip, {1, -3}, {0.5, 1}, limit));
    }

  SECTION("a long constant trip count is not unrolled") {
    ImportOptions o;
    o.constantInputs["M"] = i64({}, {1000});
    auto r = import(runtimeLoopModel(), o);
    REQUIRE(r.ok());
    CHECK(countCalls(*r, "loop") == 1);
    auto got = interpret(*r, {acc0, x, f32({}, {1e30f})});
    CHECK(got[0].toDoubles() == loopReference(1000, {1, -3}, {0.5, 1}, 1e30f));
  }
  SECTION("a short constant loop with a folding condition is still unrolled") {
    ImportOptions o;
    o.constantInputs["M"] = i64({}, {3});
    o.constantInputs["limit"] = f32({}, {1e9f});
    o.constantInputs["acc0"] = acc0;
    o.constantInputs["x"] = x;
    auto r = import(runtimeLoopModel(), o);
    REQUIRE(r.ok());
    CHECK(countCalls(*r, "loop") == 0);
    CHECK(resultData(*r).toDoubles() == loopReference(3, {1, -3}, {0.5, 1}, 1e9f));
  }
}

TEST_CASE("Scan (opset 9): reverse input direction", "[onnx][control_flow]") {
  auto m = model(11);
  auto &g = *m.mutable_graph();
  test::addInitializer(g, "init", f32({2}, {0, 0}));
  test::addInitializer(g, "xs", f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  setType(g.add_output(), "sum", F, {2});
  setType(g.add_output(), "partial", F, {3, 2});
  auto *n = test::addNode(g, "Scan", {"init", "xs"}, {"sum", "partial"}, "scan0");
  test::addIntAttr(n, "num_scan_inputs", 1);
  auto *dirs = n->add_attribute();
  dirs->set_name("scan_input_directions");
  dirs->set_type(::onnx::AttributeProto::INTS);
  dirs->add_ints(1);
  auto *body = test::addGraphAttr(n, "body");
  setType(body->add_input(), "s", F, {2});
  setType(body->add_input(), "x", F, {2});
  test::addNode(*body, "Add", {"s", "x"}, {"s_out"});
  test::addNode(*body, "Identity", {"s_out"}, {"p"});
  body->add_output()->set_name("s_out");
  body->add_output()->set_name("p");
  auto r = import(m);
  REQUIRE(r.ok());
  CHECK(resultData(*r, 0).toDoubles() == std::vector<double>{9, 12});
  CHECK(resultData(*r, 1).toDoubles() == std::vector<double>{5, 6, 8, 10, 9, 12});
}

TEST_CASE("op types without a converter inside sub-graphs are unsupported",
          "[onnx][control_flow]") {
  auto m = ifModel();
  auto *els = m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
  els->mutable_node(0)->set_op_type("NoSuchOp");
  ImportReport report;
  auto r = import(m, {}, &report);
  REQUIRE(!r.ok());
  REQUIRE(report.unsupported.size() == 1);
  CHECK(report.unsupported[0].opType == "NoSuchOp");
}

TEST_CASE("Loop: a window at the iteration (Slice to i + 1) and scans of run-time length",
          "[onnx][control_flow][dynamic_slice]") {
  // ONNX's test_loop11: y += x[i:i+1] for i < M (M an input), each y
  // scanned. Slice's ends are its starts plus 1: a dynamic_slice of one
  // element; the scan count has no bound (M is known only at run time).
  auto m = model(13);
  auto &g = *m.mutable_graph();
  setType(g.add_input(), "M", I, {});
  setType(g.add_input(), "y", F, {1});
  setType(g.add_output(), "res_y", F, {1});
  setType(g.add_output(), "res_scan", F, {1, 1});
  g.mutable_output(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("iterations"); // the declared shape, as exporters write it
  auto *n = test::addNode(g, "Loop", {"M", "", "y"}, {"res_y", "res_scan"}, "loop0");
  auto *body = test::addGraphAttr(n, "body");
  setType(body->add_input(), "i", I, {});
  setType(body->add_input(), "c", B, {});
  setType(body->add_input(), "y_in", F, {1});
  test::addInitializer(*body, "x", f32({5}, {1, 2, 3, 4, 5}));
  test::addInitializer(*body, "one", i64({}, {1}));
  test::addInitializer(*body, "axes", i64({1}, {0}));
  test::addNode(*body, "Identity", {"c"}, {"c_out"});
  test::addNode(*body, "Add", {"i", "one"}, {"end"});
  test::addNode(*body, "Unsqueeze", {"i", "axes"}, {"start1"});
  test::addNode(*body, "Unsqueeze", {"end", "axes"}, {"end1"});
  test::addNode(*body, "Slice", {"x", "start1", "end1"}, {"xi"}, "take");
  test::addNode(*body, "Add", {"y_in", "xi"}, {"y_out"});
  test::addNode(*body, "Identity", {"y_out"}, {"scan"});
  for (auto *o : {"c_out", "y_out", "scan"})
    body->add_output()->set_name(o);
  auto r = import(m);
  INFO((r.ok() ? "" : r.error().str()));
  REQUIRE(r.ok());
  CHECK(countCalls(*r, "loop") == 1);
  CHECK(countCalls(*r, "dynamic_slice") == 1);
  CHECK(countCalls(*r, "slice") == 0);
  const ir::Type scanType = r->find("main")->body()->type().fields()[1];
  REQUIRE(ir::isSymbol(scanType.shape()[0]));
  CHECK(!ir::symbolInfo(scanType.shape()[0]).bounded());
  for (int64_t trips : {0, 2, 5}) {
    INFO("M = " << trips);
    auto got = interpret(*r, {i64({}, {trips}), f32({1}, {0.5})});
    std::vector<double> scans;
    double y = 0.5;
    for (int64_t i = 0; i < trips; ++i)
      scans.push_back(y += double(i + 1));
    CHECK(got[0].toDoubles() == std::vector<double>{y});
    CHECK(got[1].toDoubles() == scans);
  }
  // x has 5 elements: a sixth iteration's window does not fit.
  auto past = interp::run(*r, {i64({}, {6}), f32({1}, {0.5})});
  REQUIRE(!past.ok());
  CHECK_THAT(past.error().str(), Catch::Contains("start 5 on axis 0 leaves fewer than 1 of its 5 "
                                                 "elements"));
  SECTION("ends that are not the starts plus a constant: a slice of run-time length") {
    body->mutable_node(1)->set_op_type("Mul"); // ends i * 1: no window of static size
    auto e = import(m);
    REQUIRE(!e.ok());
    CHECK_THAT(e.error().str(), Catch::Contains("carried value 0 enters the loop as f32[1] but "
                                                "the body returns f32[take_axis0(0)]"));
  }
}

TEST_CASE("Scan over a sequence of symbolic length: a loop over windows of the inputs",
          "[onnx][control_flow]") {
  // s += x_t (x read from the end: scan_input_directions 1); y_t = s * w,
  // stacked on axis 1 (scan_output_axes 1). x is f32[L, 2], L unbound: a
  // symbol, so the scan cannot unroll.
  auto m = model(13);
  auto &g = *m.mutable_graph();
  setType(g.add_input(), "s0", F, {2});
  setType(g.add_input(), "x", F, {1, 2});
  g.mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("L");
  setType(g.add_input(), "w", F, {2});
  setType(g.add_output(), "s", F, {2});
  setType(g.add_output(), "y", F, {2, 1});
  g.mutable_output(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->set_dim_param("L");
  auto *n = test::addNode(g, "Scan", {"s0", "x"}, {"s", "y"}, "scan0");
  for (auto [name, value] : {std::pair{"scan_input_directions", 1}, {"scan_output_axes", 1}}) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    a->add_ints(value);
  }
  test::addIntAttr(n, "num_scan_inputs", 1);
  auto *body = test::addGraphAttr(n, "body");
  setType(body->add_input(), "s_in", F, {2});
  setType(body->add_input(), "x_t", F, {2});
  test::addNode(*body, "Add", {"s_in", "x_t"}, {"s_out"});
  test::addNode(*body, "Mul", {"s_out", "w"}, {"y_t"});
  for (auto *o : {"s_out", "y_t"})
    body->add_output()->set_name(o);
  auto r = import(m);
  INFO((r.ok() ? "" : r.error().str()));
  REQUIRE(r.ok());
  CHECK(countCalls(*r, "loop") == 1);
  CHECK(countCalls(*r, "dynamic_slice") == 1);
  const ir::Tensor s0 = f32({2}, {0.5, -1}), w = f32({2}, {2, 3});
  for (int64_t L : {1, 4}) {
    INFO("L = " << L);
    std::vector<double> xv;
    for (int64_t i = 0; i < 2 * L; ++i)
      xv.push_back(double(i) - 1.5);
    auto got = interpret(*r, {s0, f32({L, 2}, xv), w});
    std::vector<double> s = {0.5, -1}, y(size_t(2 * L));
    for (int64_t t = 0; t < L; ++t) { // iteration t reads row L - 1 - t
      for (int64_t c = 0; c < 2; ++c) {
        s[size_t(c)] += xv[size_t((L - 1 - t) * 2 + c)];
        y[size_t(c * L + t)] = s[size_t(c)] * (c == 0 ? 2 : 3); // [2, L]
      }
    }
    CHECK(got[0].toDoubles() == s);
    CHECK(got[1].shape() == ir::Shape{2, L});
    CHECK(got[1].toDoubles() == y);
  }
  SECTION("a reversed scan output over a run-time length: the rows prepended") {
    auto *dirs = n->add_attribute();
    dirs->set_name("scan_output_directions");
    dirs->set_type(::onnx::AttributeProto::INTS);
    dirs->add_ints(1);
    auto rev = import(m);
    INFO((rev.ok() ? "" : rev.error().str()));
    REQUIRE(rev.ok());
    const int64_t L = 3;
    const std::vector<double> xv = {1, 2, 3, 4, 5, 6};
    auto fwd = interpret(*r, {s0, f32({L, 2}, xv), w});
    auto got = interpret(*rev, {s0, f32({L, 2}, xv), w});
    CHECK(got[0].toDoubles() == fwd[0].toDoubles());
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t t = 0; t < L; ++t)
        CHECK(got[1].toDoubles()[size_t(c * L + t)] == fwd[1].toDoubles()[size_t(c * L + L - 1 - t)]);
  }
}
