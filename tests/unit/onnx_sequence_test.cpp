//===- tests/unit/onnx_sequence_test.cpp - ONNX sequences and optionals --===//
//
// SequenceProto / OptionalProto reading, sequence and optional graph inputs
// (value type binding, one parameter per element, absent optionals), the
// sequence and optional converters (standard registry) and the conformance
// runner on sequence data. Models are built here with onnx_pb.h.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "frontend/onnx/conformance.h"
#include "frontend/onnx/converter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/interpreter.h"
#include "onnx_model_builder.h"

#include <onnx/onnx_pb.h>
// After onnx_pb.h, which defines ONNX_API for it.
#include <onnx/onnx-data.pb.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tessera;
using namespace tessera::frontend::onnx;
using tessera::test::f32;
using tessera::test::i64;
namespace fs = std::filesystem;

namespace {

constexpr int32_t kF32 = ::onnx::TensorProto::FLOAT;
constexpr int32_t kI64 = ::onnx::TensorProto::INT64;

struct SeqModel {
  ::onnx::ModelProto m;
  explicit SeqModel(int64_t opset = 16) : m(test::newModel(opset, "seq_graph")) {}
  ::onnx::GraphProto &g() { return *m.mutable_graph(); }
  SeqModel &input(const std::string &name, const std::vector<std::string> &dims,
                  int32_t elem = kF32) {
    auto *vi = g().add_input();
    vi->set_name(name);
    test::setTensorType(vi->mutable_type(), elem, dims);
    return *this;
  }
  /// A sequence of tensors of `elem` (no shape).
  SeqModel &seqInput(const std::string &name, int32_t elem = kF32) {
    auto *vi = g().add_input();
    vi->set_name(name);
    test::setTensorType(vi->mutable_type()->mutable_sequence_type()->mutable_elem_type(), elem, {}, false);
    return *this;
  }
  /// An optional tensor of `elem` with static dims.
  SeqModel &optInput(const std::string &name, const std::vector<std::string> &dims,
                     int32_t elem = kF32) {
    auto *vi = g().add_input();
    vi->set_name(name);
    test::setTensorType(vi->mutable_type()->mutable_optional_type()->mutable_elem_type(), elem, dims);
    return *this;
  }
  SeqModel &output(const std::string &name, const std::vector<std::string> &dims,
                   int32_t elem = kF32) {
    auto *vi = g().add_output();
    vi->set_name(name);
    test::setTensorType(vi->mutable_type(), elem, dims);
    return *this;
  }
  SeqModel &seqOutput(const std::string &name, int32_t elem = kF32) {
    auto *vi = g().add_output();
    vi->set_name(name);
    test::setTensorType(vi->mutable_type()->mutable_sequence_type()->mutable_elem_type(), elem, {}, false);
    return *this;
  }
  ::onnx::NodeProto *node(const std::string &op, std::vector<std::string> ins,
                          std::vector<std::string> outs, const std::string &name = "") {
    return test::addNode(g(), op, std::move(ins), std::move(outs), name.empty() ? op : name);
  }
  SeqModel &initializer(const std::string &name, const ir::Tensor &t) {
    test::addInitializer(g(), name, t);
    return *this;
  }
  std::string bytes() const { return m.SerializeAsString(); }
};

Expected<ir::Module> import(const SeqModel &m, ImportOptions o = {},
                            ImportReport *report = nullptr) {
  return importModelBytes(m.bytes(), ".", "model.onnx", o, report);
}

std::string importError(const SeqModel &m, ImportOptions o = {}) {
  auto r = import(m, std::move(o));
  return r.ok() ? std::string() : r.error().str();
}

/// Imports and runs `m` on `args`; the test fails on any error.
interp::Value run(const SeqModel &m, const std::vector<ir::Tensor> &args,
                  ImportOptions o = {}) {
  auto mod = import(m, std::move(o));
  if (!mod.ok())
    FAIL("import: " << mod.error().str());
  auto v = interp::run(*mod, args);
  if (!v.ok())
    FAIL("run: " << v.error().str());
  return *v;
}

void requireEqual(const ir::Tensor &got, const ir::Tensor &want) {
  tessera::test::requireClose(got, want, 0, 0);
}

} // namespace

//===----------------------------------------------------------------------===//
// SequenceProto / OptionalProto
//===----------------------------------------------------------------------===//

TEST_CASE("sequence and optional data are read as the declared type says", "[onnx]") {
  ::onnx::SequenceProto s;
  s.set_elem_type(::onnx::SequenceProto::TENSOR);
  tensorToProto(i64({2}, {1, 2}), *s.add_tensor_values());
  tensorToProto(i64({3}, {3, 4, 5}), *s.add_tensor_values());
  ::onnx::TypeProto seqT;
  test::setTensorType(seqT.mutable_sequence_type()->mutable_elem_type(), kI64, {}, false);

  auto v = parseValue(s.SerializeAsString(), &seqT, ".", "x");
  REQUIRE(v.ok());
  REQUIRE(v->kind == OnnxValue::Kind::Sequence);
  REQUIRE(v->elements.size() == 2);
  requireEqual(v->elements[1].tensor, i64({3}, {3, 4, 5}));
  CHECK(v->str() == "seq(i64[2], i64[3])");
  CHECK(v->irType()->str() == ir::Type::tuple({i64({2}, {1, 2}).type(),
                                               i64({3}, {3, 4, 5}).type()})
                                  .str());

  SECTION("nested sequences") {
    ::onnx::SequenceProto outer;
    outer.set_elem_type(::onnx::SequenceProto::SEQUENCE);
    *outer.add_sequence_values() = s;
    auto n = valueFromSequenceProto(outer, ".", "y");
    REQUIRE(n.ok());
    CHECK(n->str() == "seq(seq(i64[2], i64[3]))");
  }
  SECTION("optionals: absent, a tensor, a sequence") {
    ::onnx::TypeProto optT;
    test::setTensorType(optT.mutable_optional_type()->mutable_elem_type(), kF32, {"2"});
    ::onnx::OptionalProto none;
    auto a = parseValue(none.SerializeAsString(), &optT, ".", "o");
    REQUIRE(a.ok());
    CHECK(a->kind == OnnxValue::Kind::None);
    CHECK(!a->irType());
    CHECK(a->str() == "none");
    ::onnx::OptionalProto t;
    t.set_elem_type(::onnx::OptionalProto::TENSOR);
    tensorToProto(f32({2}, {1, 2}), *t.mutable_tensor_value());
    auto b = parseValue(t.SerializeAsString(), &optT, ".", "o");
    REQUIRE(b.ok());
    CHECK(b->str() == "f32[2]");
    ::onnx::OptionalProto q;
    q.set_elem_type(::onnx::OptionalProto::SEQUENCE);
    *q.mutable_sequence_value() = s;
    auto c = valueFromOptionalProto(q, ".", "o");
    REQUIRE(c.ok());
    CHECK(c->str() == "seq(i64[2], i64[3])");
  }
  SECTION("unsupported contents are errors naming the value") {
    ::onnx::SequenceProto maps;
    maps.set_elem_type(::onnx::SequenceProto::MAP);
    CHECK(valueFromSequenceProto(maps, ".", "data file 'a.pb'").error().str() ==
          "data file 'a.pb': sequences of maps are not supported");
    ::onnx::TypeProto mapT;
    mapT.mutable_map_type()->set_key_type(kI64);
    CHECK(parseValue("", &mapT, ".", "m").error().str() ==
          "m: maps and sparse tensors are not supported");
    CHECK(parseValue("\xff\xff", &seqT, ".", "bad").error().str() ==
          "bad: not a SequenceProto (protobuf parse failed)");
  }
}

//===----------------------------------------------------------------------===//
// Sequence and optional graph inputs
//===----------------------------------------------------------------------===//

TEST_CASE("a sequence input is one parameter per element, packed into a tuple", "[onnx]") {
  SeqModel m;
  m.seqInput("s").seqOutput("t");
  m.node("Identity", {"s"}, {"t"});
  {
    // Unbound: one parameter, a sequence of run-time length.
    auto unbound = import(m, ImportOptions{}, nullptr);
    REQUIRE(unbound.ok());
    ir::Function main = unbound->find("main");
    REQUIRE(main->params().size() == 1);
    CHECK(main->params()[0]->type().str() == "seq(f32)");
  }

  ImportOptions o;
  o.valueTypes["s"] = ir::Type::tuple({f32({2}, {0, 0}).type(), f32({1, 3}, {0, 0, 0}).type()});
  ImportReport report;
  auto mod = import(m, o, &report);
  REQUIRE(mod.ok());
  ir::Function main = mod->find("main");
  REQUIRE(main->params().size() == 2);
  CHECK(main->params()[0]->name() == "s.0");
  CHECK(main->params()[1]->name() == "s.1");
  REQUIRE(report.params.size() == 2);
  CHECK(report.params[1].input == "s");
  CHECK(report.params[1].path == std::vector<int64_t>{1});
  auto v = interp::run(*mod, {f32({2}, {1, 2}), f32({1, 3}, {3, 4, 5})});
  REQUIRE(v.ok());
  REQUIRE(v->isTuple);
  REQUIRE(v->fields.size() == 2);
  requireEqual(v->fields[1].tensor, f32({1, 3}, {3, 4, 5}));

  SECTION("a bound type that disagrees with the declaration") {
    ImportOptions bad;
    bad.valueTypes["s"] = ir::Type::tuple({i64({2}, {0, 0}).type()});
    CHECK(importError(m, bad) == "model.onnx: input 's' is declared sequence of "
                                 "tensor(FLOAT), the type bound to it is (i64[2],)");
    bad.valueTypes["s"] = std::nullopt;
    CHECK(importError(m, bad) == "model.onnx: input 's' is a sequence of tensor(FLOAT), not an "
                                 "optional: it cannot be bound to an absent value");
  }
  SECTION("value types name sequence and optional inputs only") {
    SeqModel t;
    t.input("x", {"2"}).output("y", {"2"});
    t.node("Identity", {"x"}, {"y"});
    ImportOptions bad;
    bad.valueTypes["x"] = f32({2}, {0, 0}).type();
    CHECK(importError(t, bad) == "model.onnx: input 'x' is a tensor: bind its shape with an "
                                 "input shape, not a value type");
    bad.valueTypes.clear();
    bad.valueTypes["nope"] = f32({2}, {0, 0}).type();
    CHECK(importError(t, bad) == "model.onnx: a value type binding names 'nope', which is not "
                                 "a graph input (the inputs are: x)");
  }
  SECTION("a declared sequence output that the graph does not compute") {
    SeqModel t;
    t.input("x", {"2"}).seqOutput("y");
    t.node("Identity", {"x"}, {"y"});
    CHECK(importError(t) == "model.onnx: output 'y': the model declares sequence of "
                            "tensor(FLOAT) but the graph computes f32[2]");
  }
}

TEST_CASE("optional inputs: present is the value, absent has none", "[onnx]") {
  SeqModel m(15);
  m.optInput("o", {"3"}).output("has", {}, ::onnx::TensorProto::BOOL);
  m.node("OptionalHasElement", {"o"}, {"has"});

  // Unbound: present with its declared type (the parameter is unused, and
  // the result folds to a constant).
  auto present = run(m, {f32({3}, {1, 2, 3})});
  CHECK(present.tensor.getInt(0) == 1);

  ImportOptions absent;
  absent.valueTypes["o"] = std::nullopt;
  ImportReport report;
  auto mod = import(m, absent, &report);
  REQUIRE(mod.ok());
  CHECK(mod->find("main")->params().empty());
  CHECK(report.params.empty());
  auto v = interp::run(*mod, {});
  REQUIRE(v.ok());
  CHECK(v->tensor.type().str() == "bool[]");
  CHECK(v->tensor.getInt(0) == 0);

  SECTION("OptionalGetElement") {
    SeqModel g(15);
    g.optInput("o", {"3"}).output("y", {"3"});
    g.node("OptionalGetElement", {"o"}, {"y"}, "get");
    auto y = run(g, {f32({3}, {4, 5, 6})});
    requireEqual(y.tensor, f32({3}, {4, 5, 6}));
    CHECK(importError(g, absent) ==
          "model.onnx: node 'get' (OptionalGetElement): the optional input is absent (empty)");
  }
  SECTION("an absent optional graph output is an error") {
    SeqModel g(16);
    g.optInput("o", {"3"});
    auto *vi = g.g().add_output();
    vi->set_name("p");
    test::setTensorType(vi->mutable_type()->mutable_optional_type()->mutable_elem_type(), kF32, {"3"});
    g.node("Identity", {"o"}, {"p"}, "id");
    CHECK(importError(g, absent) ==
          "model.onnx: node 'id' (Identity): missing required input 0 (or an absent optional)");
  }
}

//===----------------------------------------------------------------------===//
// Converters
//===----------------------------------------------------------------------===//

TEST_CASE("SequenceConstruct, Insert, Erase, At and Length resolve statically",
          "[onnx]") {
  SeqModel m(12);
  m.input("a", {"2"}).input("b", {"3"}).input("c", {"1"});
  m.output("at", {"3"}).output("len", {}, kI64);
  m.initializer("p0", i64({}, {0})).initializer("pm1", i64({}, {-1}));
  m.node("SequenceConstruct", {"a", "b"}, {"s1"});          // (a, b)
  m.node("SequenceInsert", {"s1", "c", "p0"}, {"s2"});      // (c, a, b)
  m.node("SequenceInsert", {"s2", "a"}, {"s3"});            // (c, a, b, a)
  m.node("SequenceErase", {"s3", "p0"}, {"s4"});            // (a, b, a)
  m.node("SequenceErase", {"s4"}, {"s5"});                  // (a, b)
  m.node("SequenceAt", {"s5", "pm1"}, {"at"});              // b
  m.node("SequenceLength", {"s3"}, {"len"});                // 4
  auto v = run(m, {f32({2}, {1, 2}), f32({3}, {3, 4, 5}), f32({1}, {6})});
  REQUIRE(v.fields.size() == 2);
  requireEqual(v.fields[0].tensor, f32({3}, {3, 4, 5}));
  requireEqual(v.fields[1].tensor, i64({}, {4}));

  SECTION("positions must be constants in range") {
    SeqModel e(12);
    e.input("a", {"2"}).input("p", {}, kI64).output("y", {"2"});
    e.initializer("p5", i64({}, {5}));
    e.node("SequenceConstruct", {"a", "a"}, {"s"});
    e.node("SequenceAt", {"s", "p5"}, {"y"}, "at");
    CHECK(importError(e) == "model.onnx: node 'at' (SequenceAt): position 5 is out of range "
                            "[-2, 1] for a sequence of 2 elements");
    e.g().mutable_node(1)->set_input(1, "p");
    ImportReport report;
    CHECK(!import(e, {}, &report).ok());
    CHECK(report.wantedConstants == std::vector<std::string>{"p"});
  }
  SECTION("a sequence holds one dtype") {
    SeqModel e(12);
    e.input("a", {"2"}).input("b", {"2"}, kI64).output("y", {"2"});
    e.node("SequenceConstruct", {"a", "b"}, {"s"}, "sc");
    e.node("SequenceAt", {"s", "a"}, {"y"});
    CHECK(importError(e) ==
          "model.onnx: node 'sc' (SequenceConstruct): a sequence of f32[2] cannot hold i64[2]");
  }
  SECTION("SequenceEmpty, then inserts") {
    SeqModel e(12);
    e.input("a", {"2"}).output("n", {}, kI64).output("y", {"2"});
    e.node("SequenceEmpty", {}, {"s0"});
    e.node("SequenceLength", {"s0"}, {"n"});
    e.node("SequenceInsert", {"s0", "a"}, {"s1"});
    e.initializer("p0", i64({}, {0}));
    e.node("SequenceAt", {"s1", "p0"}, {"y"});
    auto r = run(e, {f32({2}, {7, 8})});
    requireEqual(r.fields[0].tensor, i64({}, {0}));
    requireEqual(r.fields[1].tensor, f32({2}, {7, 8}));
  }
}

TEST_CASE("SplitToSequence and ConcatFromSequence", "[onnx]") {
  SECTION("a scalar split makes chunks, the last one smaller") {
    SeqModel m(12);
    m.input("x", {"5"}).seqOutput("s");
    m.initializer("two", i64({}, {2}));
    m.node("SplitToSequence", {"x", "two"}, {"s"});
    auto v = run(m, {f32({5}, {1, 2, 3, 4, 5})});
    REQUIRE(v.fields.size() == 3);
    requireEqual(v.fields[0].tensor, f32({2}, {1, 2}));
    requireEqual(v.fields[2].tensor, f32({1}, {5}));
  }
  SECTION("no split: chunks of 1, squeezed with keepdims = 0") {
    SeqModel m(12);
    m.input("x", {"2", "3"}).seqOutput("s");
    auto *n = m.node("SplitToSequence", {"x"}, {"s"});
    test::addIntAttr(n, "axis", -1);
    test::addIntAttr(n, "keepdims", 0);
    auto v = run(m, {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
    REQUIRE(v.fields.size() == 3);
    requireEqual(v.fields[1].tensor, f32({2}, {2, 5}));
  }
  SECTION("split sizes must add up") {
    SeqModel m(12);
    m.input("x", {"5"}).seqOutput("s");
    m.initializer("sizes", i64({2}, {1, 2}));
    m.node("SplitToSequence", {"x", "sizes"}, {"s"}, "sp");
    CHECK(importError(m) == "model.onnx: node 'sp' (SplitToSequence): 'split' sizes [1, 2] do "
                            "not add up to dim 0 (5) of the input");
  }
  SECTION("ConcatFromSequence along an axis and stacked on a new one") {
    SeqModel m(12);
    m.input("a", {"2"}).input("b", {"2"}).output("cat", {"4"}).output("stack", {"2", "2"});
    m.node("SequenceConstruct", {"a", "b"}, {"s"});
    test::addIntAttr(m.node("ConcatFromSequence", {"s"}, {"cat"}), "axis", 0);
    auto *n = m.node("ConcatFromSequence", {"s"}, {"stack"}, "stack");
    test::addIntAttr(n, "axis", -1);
    test::addIntAttr(n, "new_axis", 1);
    auto v = run(m, {f32({2}, {1, 2}), f32({2}, {3, 4})});
    requireEqual(v.fields[0].tensor, f32({4}, {1, 2, 3, 4}));
    requireEqual(v.fields[1].tensor, f32({2, 2}, {1, 3, 2, 4}));
  }
  SECTION("ConcatFromSequence of an empty sequence") {
    SeqModel m(12);
    m.output("y", {"1"});
    m.node("SequenceEmpty", {}, {"s"});
    test::addIntAttr(m.node("ConcatFromSequence", {"s"}, {"y"}, "cat"), "axis", 0);
    CHECK(importError(m) == "model.onnx: node 'cat' (ConcatFromSequence): cannot concatenate "
                            "an empty sequence");
  }
}

//===----------------------------------------------------------------------===//
// Conformance on sequence data
//===----------------------------------------------------------------------===//

namespace {
void writeProto(const fs::path &file, const std::string &bytes) {
  std::ofstream out(file, std::ios::binary);
  out << bytes;
}

std::string sequenceBytes(const std::vector<ir::Tensor> &elems) {
  ::onnx::SequenceProto s;
  s.set_elem_type(::onnx::SequenceProto::TENSOR);
  for (const auto &e : elems)
    tensorToProto(e, *s.add_tensor_values());
  return s.SerializeAsString();
}

struct TempTests {
  fs::path path;
  TempTests() {
    path = fs::temp_directory_path() / fmt::format("tessera_onnx_seq_{}", ::getpid());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempTests() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void add(const std::string &name, const SeqModel &m, const std::vector<std::string> &inputs,
           const std::vector<std::string> &outputs) {
    fs::path dir = path / name / "test_data_set_0";
    fs::create_directories(dir);
    writeProto(path / name / "model.onnx", m.bytes());
    for (size_t i = 0; i < inputs.size(); ++i)
      writeProto(dir / fmt::format("input_{}.pb", i), inputs[i]);
    for (size_t i = 0; i < outputs.size(); ++i)
      writeProto(dir / fmt::format("output_{}.pb", i), outputs[i]);
  }
};
} // namespace

TEST_CASE("conformance binds sequence inputs and compares sequence outputs", "[onnx]") {
  TempTests t;
  SeqModel m(11);
  m.seqInput("s").input("x", {"2"}).seqOutput("y");
  m.node("SequenceInsert", {"s", "x"}, {"y"});
  const auto in0 = sequenceBytes({f32({1}, {1}), f32({3}, {2, 3, 4})});
  ::onnx::TensorProto x;
  tensorToProto(f32({2}, {5, 6}), x);
  t.add("test_a_pass", m, {in0, x.SerializeAsString()},
        {sequenceBytes({f32({1}, {1}), f32({3}, {2, 3, 4}), f32({2}, {5, 6})})});
  t.add("test_b_value", m, {in0, x.SerializeAsString()},
        {sequenceBytes({f32({1}, {1}), f32({3}, {2, 3, 4}), f32({2}, {5, 7})})});
  t.add("test_c_length", m, {in0, x.SerializeAsString()},
        {sequenceBytes({f32({1}, {1}), f32({3}, {2, 3, 4})})});

  ConformanceOptions o;
  std::ostringstream out;
  auto s = runConformance({t.path.string()}, o, out);
  REQUIRE(s.ok());
  CHECK(out.str() == "PASS test_a_pass\n"
                     "FAIL test_b_value: output 0[2] element 1: got 6, expected 7 (shape [2])\n"
                     "FAIL test_c_length: output 0: got a sequence of 3 elements, expected 2\n"
                     "1 passed, 2 failed, 0 unsupported\n");
}

TEST_CASE("conformance passes the ONNX sequence and optional node tests", "[onnx]") {
  const std::string root = "/usr/share/libonnx-testdata/data";
  REQUIRE(fs::exists(root + "/node/test_identity_sequence"));
  for (const char *t :
       {"node/test_identity_sequence", "node/test_identity_opt", "node/test_sequence_insert_at_front",
        "node/test_optional_has_element_empty", "node/test_optional_get_element_sequence",
        "simple/test_sequence_model3", "simple/test_sequence_model8"}) {
    INFO(t);
    TestOutcome r = runBackendTest(root + "/" + t);
    INFO(r.detail);
    CHECK(r.status == TestStatus::Pass);
  }
}
