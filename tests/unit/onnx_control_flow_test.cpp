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
#include "onnx_model_builder.h"

#include <onnx/onnx_pb.h>

using namespace tessera;
using namespace tessera::frontend::onnx;
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

} // namespace

TEST_CASE("If: a constant condition selects the branch, outer values are visible",
          "[onnx][control_flow]") {
  ImportReport report;
  auto unbound = import(ifModel(), {}, &report);
  REQUIRE(!unbound.ok());
  CHECK(unbound.error().str() ==
        "model.onnx: node 'if0' (If): input 0 ('cond') must be a constant (it decides the "
        "output shape)");
  CHECK(report.wantedConstants == std::vector<std::string>{"cond"});

  ImportOptions o;
  ir::Tensor t = ir::Tensor::fromInts(ir::DType::Bool, {}, std::vector<int64_t>{1});
  o.constantInputs["cond"] = t;
  auto m = import(ifModel(), o);
  REQUIRE(m.ok());
  CHECK(resultData(*m).toDoubles() == std::vector<double>{2, 3});
  o.constantInputs["cond"] = ir::Tensor::fromInts(ir::DType::Bool, {}, std::vector<int64_t>{0});
  m = import(ifModel(), o);
  REQUIRE(m.ok());
  CHECK(resultData(*m).toDoubles() == std::vector<double>{1, 2});
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

  SECTION("a condition that does not fold is an error naming the node") {
    setType(g.add_input(), "flag", B, {});
    body->mutable_node(0)->set_input(0, "flag");
    auto e = import(m);
    REQUIRE(!e.ok());
    CHECK(e.error().str().find("node 'loop0' (Loop): the body's condition output does not fold "
                               "to a constant in iteration 0") != std::string::npos);
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
