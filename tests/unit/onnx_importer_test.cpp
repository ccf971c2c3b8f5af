//===- tests/unit/onnx_importer_test.cpp - The ONNX importer core --------===//
//
// TensorProto conversions, external data, the importer's checks and errors,
// constant binding, and the conformance runner. Models are built here with
// onnx_pb.h; converters come from a local registry (a few trivial ones), so
// these tests do not depend on the converter families.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "frontend/onnx/conformance.h"
#include "frontend/onnx/converter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/symbol.h"
#include "onnx_model_builder.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tessera;
using namespace tessera::frontend::onnx;
using tessera::test::f32;
using tessera::test::i64;
namespace fs = std::filesystem;

namespace {

/// A fresh temporary directory, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string &tag) {
    path = fs::temp_directory_path() /
           fmt::format("tessera_onnx_{}_{}_{}", tag, ::getpid(), counter()++);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int &counter() {
    static int n = 0;
    return n;
  }
  std::string file(const std::string &name) const { return (path / name).string(); }
};

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

/// Builds small models. Dims are strings: "3" static, "N" symbolic, "?"
/// unknown.
struct ModelBuilder {
  ::onnx::ModelProto m;
  explicit ModelBuilder(int64_t opset = 13) : m(test::newModel(opset)) {}
  ::onnx::GraphProto &g() { return *m.mutable_graph(); }
  ModelBuilder &input(const std::string &name, const std::vector<std::string> &dims,
                      int32_t elem = ::onnx::TensorProto::FLOAT) {
    auto *vi = g().add_input();
    vi->set_name(name);
    test::setTensorType(vi->mutable_type(), elem, dims);
    return *this;
  }
  ModelBuilder &output(const std::string &name, const std::vector<std::string> &dims,
                       int32_t elem = ::onnx::TensorProto::FLOAT) {
    auto *vi = g().add_output();
    vi->set_name(name);
    test::setTensorType(vi->mutable_type(), elem, dims);
    return *this;
  }
  ::onnx::NodeProto *node(const std::string &op, std::vector<std::string> ins,
                          std::vector<std::string> outs, const std::string &name = "") {
    return test::addNode(g(), op, std::move(ins), std::move(outs), name);
  }
  ModelBuilder &initializer(const std::string &name, const ir::Tensor &t) {
    test::addInitializer(g(), name, t);
    return *this;
  }
  std::string bytes() const { return m.SerializeAsString(); }
};

Expected<std::vector<ir::Expr>> one(Expected<ir::Expr> e) {
  if (!e.ok())
    return std::move(e).error();
  return std::vector<ir::Expr>{*e};
}

/// Relu, Add, Identity, Reshape (shape must be constant), Dropout (no mask).
const ConverterRegistry &testRegistry() {
  static const ConverterRegistry r = [] {
    ConverterRegistry r;
    auto add = [&](std::string op, Converter c) {
      REQUIRE(r.add({std::move(op), 7, 17, std::move(c), "test"}).ok());
    };
    add("Relu", [](NodeContext &ctx) { return one(ctx.call("relu", {ctx.input(0)})); });
    add("Add", [](NodeContext &ctx) {
      return one(ctx.call("add", {ctx.input(0), ctx.input(1)}));
    });
    add("Identity", [](NodeContext &ctx) -> Expected<std::vector<ir::Expr>> {
      return std::vector<ir::Expr>{ctx.input(0)};
    });
    add("Reshape", [](NodeContext &ctx) -> Expected<std::vector<ir::Expr>> {
      const ir::Tensor *shape = ctx.constantInput(1);
      if (!shape)
        return ctx.error("input 1 ('shape') must be a constant");
      return one(ctx.call("reshape", {ctx.input(0)}, {{"newshape", shape->toInts()}}));
    });
    add("Dropout", [](NodeContext &ctx) -> Expected<std::vector<ir::Expr>> {
      return std::vector<ir::Expr>{ctx.input(0)};
    });
    return r;
  }();
  return r;
}

ImportOptions testOptions() {
  ImportOptions o;
  o.registry = &testRegistry();
  return o;
}

Expected<ir::Module> importBytes(const std::string &bytes, ImportOptions o = testOptions(),
                                 ImportReport *report = nullptr) {
  if (!o.registry)
    o.registry = &testRegistry();
  return importModelBytes(bytes, ".", "model.onnx", o, report);
}

std::string importError(const std::string &bytes, ImportOptions o = testOptions()) {
  auto m = importBytes(bytes, std::move(o));
  return m.ok() ? std::string() : m.error().str();
}

ir::Tensor allDTypes(ir::DType dt) {
  std::vector<double> v{0, 1, -2, 3.5, 100, -0.25};
  if (!ir::isFloat(dt))
    v = {0, 1, 2, 3, 100, 7};
  if (dt == ir::DType::I8 || dt == ir::DType::I32 || dt == ir::DType::I64)
    v[2] = -2;
  if (ir::isBool(dt))
    v = {0, 1, 1, 0, 1, 0};
  return ir::Tensor::fromDoubles(dt, {2, 3}, v);
}

} // namespace

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

TEST_CASE("TensorProto round-trips every dtype through raw_data and the typed fields",
          "[onnx]") {
  for (ir::DType dt : ir::kAllDTypes) {
    for (bool raw : {true, false}) {
      INFO(ir::dtypeName(dt) << (raw ? " raw_data" : " typed field"));
      ir::Tensor t = allDTypes(dt);
      ::onnx::TensorProto p;
      tensorToProto(t, p, raw);
      p.set_name("w");
      CHECK(p.has_raw_data() == raw);
      auto back = tensorFromProto(p, ".");
      REQUIRE(back.ok());
      CHECK(back->bitwiseEqual(t));
    }
  }
}

TEST_CASE("TensorProto typed fields carry small types in int32_data", "[onnx]") {
  ::onnx::TensorProto p;
  p.set_name("h");
  p.set_data_type(::onnx::TensorProto::FLOAT16);
  p.add_dims(2);
  p.add_int32_data(ir::floatToHalf(1.5f));
  p.add_int32_data(ir::floatToHalf(-2.0f));
  auto h = tensorFromProto(p, ".");
  REQUIRE(h.ok());
  CHECK(h->dtype() == ir::DType::F16);
  CHECK(h->toDoubles() == std::vector<double>{1.5, -2.0});

  p.set_data_type(::onnx::TensorProto::BFLOAT16);
  p.clear_int32_data();
  p.add_int32_data(ir::floatToBfloat16(3.0f));
  p.add_int32_data(ir::floatToBfloat16(-0.5f));
  auto b = tensorFromProto(p, ".");
  REQUIRE(b.ok());
  CHECK(b->toDoubles() == std::vector<double>{3.0, -0.5});

  p.set_data_type(::onnx::TensorProto::BOOL);
  p.clear_int32_data();
  p.add_int32_data(0);
  p.add_int32_data(5); // any non-zero is true
  auto bo = tensorFromProto(p, ".");
  REQUIRE(bo.ok());
  CHECK(bo->toInts() == std::vector<int64_t>{0, 1});

  p.set_data_type(::onnx::TensorProto::INT8);
  p.clear_int32_data();
  p.add_int32_data(-128);
  p.add_int32_data(127);
  auto i8 = tensorFromProto(p, ".");
  REQUIRE(i8.ok());
  CHECK(i8->toInts() == std::vector<int64_t>{-128, 127});

  p.set_data_type(::onnx::TensorProto::UINT8);
  p.clear_int32_data();
  p.add_int32_data(0);
  p.add_int32_data(255);
  auto u8 = tensorFromProto(p, ".");
  REQUIRE(u8.ok());
  CHECK(u8->toInts() == std::vector<int64_t>{0, 255});

  // A scalar: no dims, one value.
  ::onnx::TensorProto s;
  s.set_data_type(::onnx::TensorProto::INT64);
  s.add_int64_data(42);
  auto sv = tensorFromProto(s, ".");
  REQUIRE(sv.ok());
  CHECK(sv->shape().empty());
  CHECK(sv->toInts() == std::vector<int64_t>{42});
}

TEST_CASE("malformed TensorProtos are errors naming the tensor", "[onnx]") {
  ::onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(::onnx::TensorProto::FLOAT);
  p.add_dims(3);
  p.add_float_data(1.0f);
  CHECK(tensorFromProto(p, ".").error().str() ==
        "tensor 'w': float_data has 1 values, the shape needs 3");
  p.clear_float_data();
  p.set_raw_data(std::string(5, '\0'));
  CHECK(tensorFromProto(p, ".").error().str() ==
        "tensor 'w': raw_data has 5 bytes, f32[3] needs 12");
  p.set_data_type(::onnx::TensorProto::STRING);
  CHECK(tensorFromProto(p, ".").error().str() == "tensor 'w': unsupported element type STRING");
  p.set_data_type(::onnx::TensorProto::COMPLEX64);
  CHECK(tensorFromProto(p, ".", "initializer 'w'").error().str() ==
        "initializer 'w': unsupported element type COMPLEX64");
  p.set_data_type(::onnx::TensorProto::FLOAT);
  p.clear_dims();
  p.add_dims(-1);
  CHECK(tensorFromProto(p, ".").error().str() == "tensor 'w': shape [-1]: dim 0 is negative");
}

TEST_CASE("TensorProto external data is read relative to the model", "[onnx]") {
  TempDir dir("ext");
  ir::Tensor t = f32({2, 2}, {1, 2, 3, 4});
  std::string blob(8, 'x'); // an offset of 8 bytes
  blob.append(reinterpret_cast<const char *>(t.bytes()), t.nbytes());
  writeFile(dir.file("weights.bin"), blob);

  ::onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(::onnx::TensorProto::FLOAT);
  p.add_dims(2);
  p.add_dims(2);
  p.set_data_location(::onnx::TensorProto::EXTERNAL);
  auto entry = [&](const std::string &k, const std::string &v) {
    auto *e = p.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  entry("location", "weights.bin");
  entry("offset", "8");
  entry("length", "16");
  auto back = tensorFromProto(p, dir.path.string());
  REQUIRE(back.ok());
  CHECK(back->toDoubles() == std::vector<double>{1, 2, 3, 4});

  SECTION("a model with an external initializer imports") {
    ModelBuilder b;
    b.input("x", {"2", "2"}).output("y", {"2", "2"});
    *b.g().add_initializer() = p;
    b.node("Add", {"x", "w"}, {"y"});
    writeFile(dir.file("model.onnx"), b.bytes());
    auto m = importModelFile(dir.file("model.onnx"), testOptions());
    REQUIRE(m.ok());
    auto r = interp::run(*m, {f32({2, 2}, {10, 10, 10, 10})});
    REQUIRE(r.ok());
    CHECK(r->tensor.toDoubles() == std::vector<double>{11, 12, 13, 14});
  }
  SECTION("a missing file") {
    p.mutable_external_data(0)->set_value("nope.bin");
    std::string e = tensorFromProto(p, dir.path.string()).error().str();
    CHECK(e.find("tensor 'w': cannot open external data file '") == 0);
    CHECK(e.find("nope.bin") != std::string::npos);
  }
  SECTION("a short file") {
    writeFile(dir.file("short.bin"), std::string(10, 'x'));
    p.mutable_external_data(0)->set_value("short.bin");
    p.mutable_external_data(1)->set_value("0");
    std::string e = tensorFromProto(p, dir.path.string()).error().str();
    CHECK(e.find("tensor 'w': external data file '") == 0);
    CHECK(e.find("short.bin' is too short (10 bytes; need 16 at offset 0)") != std::string::npos);
  }
  SECTION("a location outside the model's directory") {
    p.mutable_external_data(0)->set_value("../weights.bin");
    CHECK(tensorFromProto(p, dir.path.string()).error().str() ==
          "tensor 'w': external data location '../weights.bin' leaves the model's directory");
  }
}

TEST_CASE("readTensorProtoFile reads the backend test data", "[onnx]") {
  auto t = readTensorProtoFile(
      "/usr/share/libonnx-testdata/data/node/test_relu/test_data_set_0/input_0.pb");
  REQUIRE(t.ok()); // libonnx-testdata is a build dependency (cmake/install-deps.sh)
  CHECK(t->dtype() == ir::DType::F32);
  CHECK(t->shape() == ir::Shape{3, 4, 5});
  CHECK(readTensorProtoFile("/nonexistent.pb").error().str().find("cannot open") == 0);
}

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

TEST_CASE("the importer builds @main from inputs, initializers and outputs", "[onnx]") {
  ModelBuilder b;
  b.input("x", {"2", "3"}).input("bias", {"3"}).output("y", {"2", "3"}).output("z", {"2", "3"});
  b.initializer("bias", f32({3}, {1, 2, 3})); // an initializer that is also an input
  b.node("Add", {"x", "bias"}, {"s"}, "add_bias");
  b.node("Relu", {"s"}, {"y"}); // unnamed: Relu_1
  b.node("Identity", {"s"}, {"z"}, "id");
  ImportReport report;
  auto m = importBytes(b.bytes(), testOptions(), &report);
  REQUIRE(m.ok());
  CHECK(report.graphInputs == std::vector<std::string>{"x"});
  CHECK(report.outputNames == std::vector<std::string>{"y", "z"});
  CHECK(report.opset == 13);
  ir::Function main = m->find("main");
  REQUIRE(main);
  REQUIRE(main->params().size() == 1);
  CHECK(main->params()[0]->name() == "x");
  CHECK(main->attrs().getString("output_names") == "y;z");
  CHECK(m->name() == "test_graph");

  std::string text = ir::printModule(*m);
  INFO(text);
  CHECK(text.find("%add_bias = add(%x, %bias)") != std::string::npos);
  CHECK(text.find("%Relu_1 = relu(%add_bias)") != std::string::npos);
  // The text round-trips.
  auto parsed = ir::parseModule(text);
  REQUIRE(parsed.ok());
  CHECK(ir::printModule(*parsed) == text);

  auto r = interp::run(*m, {f32({2, 3}, {-5, 0, 1, 2, -3, 4})});
  REQUIRE(r.ok());
  auto outs = r->flatten();
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].toDoubles() == std::vector<double>{0, 2, 4, 3, 0, 7});
  CHECK(outs[1].toDoubles() == std::vector<double>{-4, 2, 4, 3, -1, 7});
}

TEST_CASE("unsupported op types are listed in one error with counts and nodes", "[onnx]") {
  ModelBuilder b;
  b.input("x", {"2"}).output("y", {"2"});
  b.node("LSTM", {"x"}, {"a"}, "lstm_1");
  b.node("LSTM", {"a"}, {"b"}, "lstm_2");
  b.node("LSTM", {"b"}, {"c"}, "lstm_3");
  b.node("NonZero", {"c"}, {"d"}, "nz");
  b.node("Relu", {"d"}, {"y"}, "r");
  ImportReport report;
  auto m = importBytes(b.bytes(), testOptions(), &report);
  REQUIRE(!m.ok());
  CHECK(m.error().str() == "model.onnx: 2 unsupported op types: LSTM (3 nodes: lstm_1, lstm_2, "
                           "lstm_3), NonZero (1 node: nz)");
  REQUIRE(report.unsupported.size() == 2);
  CHECK(report.unsupported[0].opType == "LSTM");
  CHECK(report.unsupported[0].count == 3);
  CHECK(report.unsupported[1].nodes == std::vector<std::string>{"nz"});

  SECTION("more than three nodes, other domains, unnamed nodes") {
    b.node("LSTM", {"x"}, {"e"});
    b.node("Foo", {"x"}, {"f"})->set_domain("com.example");
    ImportReport r2;
    auto m2 = importBytes(b.bytes(), testOptions(), &r2);
    CHECK(m2.error().str() ==
          "model.onnx: 3 unsupported op types: LSTM (4 nodes: lstm_1, lstm_2, lstm_3, ...), "
          "NonZero (1 node: nz), com.example::Foo (1 node: Foo_6)");
    CHECK(r2.unsupported.size() == 3);
  }
}

TEST_CASE("ops on element types the IR lacks are rejected by op type and element type",
          "[onnx]") {
  // Cast to STRING, and any node reading a STRING graph input, are reported
  // like op types without a converter, all of them in one error.
  ModelBuilder b;
  b.input("x", {"2"}).input("s", {"2"}, ::onnx::TensorProto::STRING).output("y", {"2"});
  auto *c = b.node("Cast", {"x"}, {"c"}, "to_string");
  test::addIntAttr(c, "to", ::onnx::TensorProto::STRING);
  b.node("Identity", {"s"}, {"y"}, "copy");
  ImportOptions o; // the standard converters
  ImportReport report;
  auto m = importModelBytes(b.bytes(), ".", "model.onnx", o, &report);
  REQUIRE(!m.ok());
  CHECK(m.error().str() == "model.onnx: 2 unsupported op types: Cast (to STRING) (1 node: "
                           "to_string), Identity (STRING) (1 node: copy)");
  REQUIRE(report.unsupported.size() == 2);
  CHECK(report.unsupported[0].opType == "Cast (to STRING)");
}

TEST_CASE("opsets above 17, and older ones that the converters do not cover, are rejected",
          "[onnx]") {
  {
    ModelBuilder b(18);
    b.input("x", {"2"}).output("y", {"2"});
    b.node("Relu", {"x"}, {"y"});
    ImportReport report;
    auto m = importBytes(b.bytes(), testOptions(), &report);
    REQUIRE(!m.ok());
    CHECK(m.error().str() == "model.onnx: opset 18 of the default ONNX domain is not supported "
                             "(Tessera imports opsets 7 to 17)");
    // No converter covers that opset: the op types are unsupported.
    REQUIRE(report.unsupported.size() == 1);
    CHECK(report.unsupported[0].opType == "Relu (opset 18)");
  }
  {
    ModelBuilder b(6);
    b.input("x", {"2"}).output("y", {"2"});
    b.node("Relu", {"x"}, {"r"}, "relu");
    b.node("Elu", {"r"}, {"y"}, "elu");
    ImportReport report;
    auto m = importBytes(b.bytes(), testOptions(), &report);
    REQUIRE(!m.ok());
    CHECK(m.error().str() == "model.onnx: 2 unsupported op types: Elu (1 node: elu), Relu "
                             "(opset 6) (1 node: relu) (Tessera imports opsets 7 to 17, and older "
                             "ones only where the converters handle them)");
    CHECK(report.unsupported.size() == 2);
  }
  {
    // An older opset imports when every converter it needs covers it.
    ConverterRegistry r;
    REQUIRE(r.add({"Relu", 1, 17,
                   [](NodeContext &ctx) { return one(ctx.call("relu", {ctx.input(0)})); }, ""})
                .ok());
    ModelBuilder b(6);
    b.input("x", {"2"}).output("y", {"2"});
    b.node("Relu", {"x"}, {"y"});
    ImportOptions o;
    o.registry = &r;
    CHECK(importError(b.bytes(), o) == "");
  }
  ModelBuilder none;
  none.m.clear_opset_import();
  none.input("x", {"2"}).output("y", {"2"});
  none.node("Relu", {"x"}, {"y"});
  CHECK(importError(none.bytes()) ==
        "model.onnx: the model imports no opset of the default ONNX domain");
  // A model of another domain only (e.g. ai.onnx.preview.training).
  ModelBuilder training;
  training.m.mutable_opset_import(0)->set_domain("ai.onnx.preview.training");
  training.input("x", {"2"}).output("y", {"2"});
  training.node("Adam", {"x"}, {"y"}, "adam")->set_domain("ai.onnx.preview.training");
  ImportReport tr;
  CHECK(importBytes(training.bytes(), testOptions(), &tr).error().str() ==
        "model.onnx: 1 unsupported op type: ai.onnx.preview.training::Adam (1 node: adam)");
  CHECK(tr.unsupported.size() == 1);
  // "ai.onnx" is the default domain too.
  ModelBuilder ai(11);
  ai.m.mutable_opset_import(0)->set_domain("ai.onnx");
  ai.input("x", {"2"}).output("y", {"2"});
  ai.node("Relu", {"x"}, {"y"});
  CHECK(importError(ai.bytes()) == "");
}

TEST_CASE("malformed and truncated model files are errors", "[onnx]") {
  TempDir dir("bad");
  CHECK(importError("this is not a protobuf \xff\xff\xff") ==
        "model.onnx: not an ONNX model (protobuf parse failed)");
  CHECK(importError("") == "model.onnx: not an ONNX model (no graph)");

  ModelBuilder b;
  b.input("x", {"2", "3"}).output("y", {"2", "3"});
  b.initializer("w", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  b.node("Add", {"x", "w"}, {"y"}, "add");
  std::string bytes = b.bytes();
  for (size_t cut : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 3}) {
    INFO("truncated at " << cut << " of " << bytes.size());
    writeFile(dir.file("model.onnx"), bytes.substr(0, cut));
    auto m = importModelFile(dir.file("model.onnx"), testOptions());
    CHECK(!m.ok());
  }
  writeFile(dir.file("garbage.onnx"), "\x0a\xff\xff\xff\xff\x0f");
  CHECK(importModelFile(dir.file("garbage.onnx"), testOptions()).error().str() ==
        dir.file("garbage.onnx") + ": not an ONNX model (protobuf parse failed)");
  CHECK(importModelFile(dir.file("missing.onnx")).error().str() ==
        dir.file("missing.onnx") + ": cannot open the file (no such file)");
}

TEST_CASE("dynamic dims: bound and unbound input dims", "[onnx]") {
  ModelBuilder b;
  b.input("x", {"N", "3", "H"}).output("y", {"N", "3", "H"});
  b.node("Relu", {"x"}, {"y"});

  SECTION("bound by inputShapes") {
    ImportOptions o = testOptions();
    o.inputShapes["x"] = {2, 3, 5};
    auto m = importBytes(b.bytes(), o);
    REQUIRE(m.ok());
    CHECK(m->find("main")->params()[0]->type().str() == "f32[2, 3, 5]");
  }
  SECTION("unbound dims stay symbolic, named after their dim_params") {
    ImportReport report;
    auto m = importBytes(b.bytes(), testOptions(), &report);
    REQUIRE(m.ok());
    CHECK(m->find("main")->params()[0]->type().str() == "f32[N, 3, H]");
    REQUIRE(report.symbols.size() == 2);
    CHECK(report.symbols[1].unbound);
    CHECK(ir::symbolInfo(report.symbols[1].value).lo == 1);
    CHECK_FALSE(ir::symbolInfo(report.symbols[1].value).bounded());
  }
  SECTION("an unnamed dynamic dim is named after its input and dim") {
    ModelBuilder u;
    u.input("img.0", {"?", "3"}).output("y", {"?", "3"});
    u.node("Relu", {"img.0"}, {"y"});
    auto m = importBytes(u.bytes(), testOptions());
    REQUIRE(m.ok());
    CHECK(m->find("main")->params()[0]->type().str() == "f32[img_0_0, 3]");
  }
  SECTION("a bound shape of the wrong rank or a disagreeing static dim") {
    ImportOptions o = testOptions();
    o.inputShapes["x"] = {2, 3};
    CHECK(importError(b.bytes(), o) == "model.onnx: input 'x': the bound shape [2, 3] has 2 dims, "
                                       "the model declares 3 ([N, 3, H])");
    o.inputShapes["x"] = {2, 4, 5};
    CHECK(importError(b.bytes(), o) == "model.onnx: input 'x': dim 1 is 3 in the model ([N, 3, "
                                       "H]), the bound shape [2, 4, 5] gives 4");
  }
  SECTION("a shape too large for sizes to be computed on") {
    ModelBuilder c;
    c.input("x", {"1099511627776", "1099511627776"}).output("y", {"?", "?"});
    c.node("Relu", {"x"}, {"y"});
    CHECK(importError(c.bytes()) == "model.onnx: input 'x': shape [1099511627776, 1099511627776] "
                                    "has more than 2^48 elements");
    ImportOptions o = testOptions();
    o.inputShapes["x"] = {2, 3, int64_t(1) << 50};
    CHECK(importError(b.bytes(), o) == "model.onnx: input 'x': shape [2, 3, 1125899906842624] "
                                       "has more than 2^48 elements");
  }
  SECTION("an unknown input name") {
    ImportOptions o = testOptions();
    o.inputShapes["img"] = {1};
    CHECK(importError(b.bytes(), o) == "model.onnx: an input shape names 'img', which is not a "
                                       "graph input (the inputs are: x)");
  }
  SECTION("an unbound batch dim stays symbolic") {
    ModelBuilder c;
    c.input("x", {"batch", "4"}).output("y", {"?", "4"});
    c.node("Relu", {"x"}, {"y"});
    auto m = importBytes(c.bytes());
    REQUIRE(m.ok());
    CHECK(m->find("main")->params()[0]->type().str() == "f32[batch, 4]");
    CHECK(m->find("main")->body()->type().str() == "f32[batch, 4]");
  }
}

TEST_CASE("dynamic dims: inputs that share a dim_param share one symbol", "[onnx]") {
  // x: [batch, seq, 4], mask: [batch, seq], bias: [4]; binding x binds mask.
  ModelBuilder b;
  b.input("x", {"batch", "seq", "4"}).input("mask", {"batch", "seq"}).input("bias", {"4"});
  b.output("y", {"batch", "seq", "4"});
  b.node("Add", {"x", "bias"}, {"y"});

  SECTION("binding one input binds the others") {
    ImportOptions o = testOptions();
    o.inputShapes["x"] = {4, 7, 4};
    ImportReport report;
    auto m = importBytes(b.bytes(), o, &report);
    REQUIRE(m.ok());
    CHECK(m->find("main")->params()[1]->type().str() == "f32[4, 7]");
    REQUIRE(report.symbols.size() == 2);
    CHECK(report.symbols[0].name == "batch");
    CHECK(report.symbols[0].value == 4);
    CHECK_FALSE(report.symbols[0].unbound);
    CHECK(report.symbols[0].dims ==
          std::vector<std::pair<std::string, int64_t>>{{"x", 0}, {"mask", 0}});
    CHECK(report.symbols[1].name == "seq");
    CHECK(unboundSymbolNotes(report).empty());
  }
  SECTION("bound inputs that disagree on a symbol") {
    ImportOptions o = testOptions();
    o.inputShapes["x"] = {4, 7, 4};
    o.inputShapes["mask"] = {5, 7};
    CHECK(importError(b.bytes(), o) ==
          "model.onnx: symbolic dim 'batch' is 4 in the --input-shape of 'x' (dim 0) and 5 in "
          "that of 'mask' (dim 0): inputs that declare the same dim_param must agree");
  }
  SECTION("an unbound shared batch is one symbol on every input, and said so") {
    ModelBuilder c;
    c.input("x", {"batch", "4"}).input("z", {"batch", "4"}).output("y", {"batch", "4"});
    c.node("Add", {"x", "z"}, {"y"});
    ImportReport report;
    auto m = importBytes(c.bytes(), testOptions(), &report);
    REQUIRE(m.ok());
    CHECK(m->find("main")->params()[0]->type().str() == "f32[batch, 4]");
    CHECK(m->find("main")->params()[1]->type() == m->find("main")->params()[0]->type());
    REQUIRE(report.symbols.size() == 1);
    CHECK(report.symbols[0].unbound);
    CHECK(unboundSymbolNotes(report) ==
          std::vector<std::string>{"symbolic dim 'batch' (input 'x' dim 0, input 'z' dim 0) is "
                                   "not bound: it stays symbolic (batch: 1..), one artifact for "
                                   "every size (--input-shape x=... compiles for one size; "
                                   "batch:1..64 there bounds it)"});
  }
}

TEST_CASE("dynamic dims: shape values carry symbols through an exporter's view chain",
          "[onnx]") {
  // y = x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
  auto chain = [](const std::string &arith) {
    ModelBuilder b;
    b.input("x", {"batch", "4", "3"}).output("y", {"?", "?"});
    b.initializer("zero", test::i64({}, {0}));
    b.initializer("axes", test::i64({1}, {0}));
    b.initializer("minus1", test::i64({1}, {-1}));
    b.initializer("two", test::i64({}, {2}));
    b.node("Shape", {"x"}, {"s"});
    b.node("Gather", {"s", "zero"}, {"n"});
    std::string n = "n";
    if (!arith.empty()) { // shape arithmetic: n * 2
      b.node(arith, {"n", "two"}, {"n2"});
      n = "n2";
    }
    b.node("Unsqueeze", {n, "axes"}, {"n1"});
    auto *c = b.node("Concat", {"n1", "minus1"}, {"shape"});
    test::addIntAttr(c, "axis", 0);
    b.node("Reshape", {"x", "shape"}, {"y"});
    return b.bytes();
  };
  ImportOptions o;
  o.registry = &ConverterRegistry::standard();
  o.inputShapes["x"] = parseInputShape("x=N:1..8,4,3")->second;
  auto m = importBytes(chain(""), o);
  INFO((m.ok() ? std::string() : m.error().str()));
  REQUIRE(m.ok());
  CHECK(m->find("main")->type().str() == "fn(f32[N(1, 8), 4, 3]) -> f32[N(1, 8), 12]");
  const std::string text = ir::printModule(*m);
  CHECK(text.find("{newshape=[N(1, 8), -1]}") != std::string::npos);
  // The printed IR reads back (the symbol in the attribute by name).
  auto reparsed = ir::parseModule(text);
  REQUIRE(reparsed.ok());
  CHECK(ir::printModule(*reparsed) == text);
  // Arithmetic on a shape value holding a symbol is evaluated at the probes:
  // N * 2 is a derived symbol (bounds 2..16), and x [N, 4, 3] reshaped to
  // [2N, -1] has 6 columns.
  auto doubled = importBytes(chain("Mul"), o);
  INFO((doubled.ok() ? std::string() : doubled.error().str()));
  REQUIRE(doubled.ok());
  const ir::Type out = doubled->find("main")->type().result();
  REQUIRE(out.rank() == 2);
  CHECK(out.shape()[1] == 6);
  const int64_t twoN = out.shape()[0];
  REQUIRE(ir::isSymbol(twoN));
  CHECK(ir::symbolInfo(twoN).derived());
  CHECK(ir::symbolInfo(twoN).lo == 2);
  CHECK(ir::symbolInfo(twoN).hi == 16);
  // Its formula is not in the text: reading the attribute back says so.
  auto back = ir::parseModule(ir::printModule(*doubled), "doubled.tir");
  REQUIRE_FALSE(back.ok());
  CHECK(back.error().str().find("in an attribute cannot be read back") != std::string::npos);
  // Range over a shape value (torch.arange(x.size(0))): positions 0 .. N-1,
  // computed when the model runs.
  {
    ModelBuilder r;
    r.input("x", {"batch", "4", "3"}).output("pos", {"?"}, ::onnx::TensorProto::INT64);
    r.initializer("zero", test::i64({}, {0}));
    r.initializer("one", test::i64({}, {1}));
    r.node("Shape", {"x"}, {"s"});
    r.node("Gather", {"s", "zero"}, {"n"});
    r.node("Range", {"zero", "n", "one"}, {"pos"});
    auto ranged = importBytes(r.bytes(), o);
    INFO((ranged.ok() ? std::string() : ranged.error().str()));
    REQUIRE(ranged.ok());
    CHECK(ranged->find("main")->type().str() == "fn(f32[N(1, 8), 4, 3]) -> i64[N(1, 8)]");
    auto out = interp::run(*ranged, {ir::Tensor(ir::DType::F32, {3, 4, 3})});
    REQUIRE(out.ok());
    CHECK(out->tensor.toInts() == std::vector<int64_t>{0, 1, 2});
  }
  // A comparison whose answer depends on the symbol is computed at run time
  // (symbol_values); here its bool then meets the i64 -1 in the Concat.
  CHECK_THAT(importError(chain("Equal"), o),
             Catch::StartsWith("model.onnx: node 'Concat_4' (Concat): concat: argument 1 has "
                               "dtype i64, expected bool"));
}

TEST_CASE("Constant nodes become constants, and constant sub-graphs fold", "[onnx]") {
  ModelBuilder b;
  b.input("x", {"2"}).output("y", {"2"});
  auto *c1 = b.node("Constant", {}, {"c1"}, "c1");
  auto *a1 = c1->add_attribute();
  a1->set_name("value");
  a1->set_type(::onnx::AttributeProto::TENSOR);
  tensorToProto(f32({2}, {1, 2}), *a1->mutable_t());
  auto *c2 = b.node("Constant", {}, {"c2"}, "c2");
  auto *a2 = c2->add_attribute();
  a2->set_name("value_float");
  a2->set_type(::onnx::AttributeProto::FLOAT);
  a2->set_f(10);
  b.node("Add", {"c1", "c2"}, {"w"}, "fold_me");
  b.node("Add", {"x", "w"}, {"y"}, "add");
  auto m = importBytes(b.bytes());
  REQUIRE(m.ok());
  std::string text = ir::printModule(*m);
  INFO(text);
  CHECK(text.find("fold_me") != std::string::npos);
  CHECK(text.find("= add(") != std::string::npos);
  CHECK(text.find("add(%c1") == std::string::npos); // folded
  auto r = interp::run(*m, {f32({2}, {100, 200})});
  REQUIRE(r.ok());
  CHECK(r->tensor.toDoubles() == std::vector<double>{111, 212});

  SECTION("value_ints and value_int are i64") {
    ModelBuilder c;
    c.output("y", {"3"}, ::onnx::TensorProto::INT64);
    auto *n = c.node("Constant", {}, {"y"});
    test::addIntsAttr(n, "value_ints", {4, 5, 6});
    auto mc = importBytes(c.bytes());
    REQUIRE(mc.ok());
    auto rc = interp::run(*mc, {});
    REQUIRE(rc.ok());
    CHECK(rc->tensor.toInts() == std::vector<int64_t>{4, 5, 6});
  }
  SECTION("string constants are rejected") {
    ModelBuilder c;
    c.output("y", {}, ::onnx::TensorProto::STRING);
    auto *n = c.node("Constant", {}, {"y"}, "s");
    auto *a = n->add_attribute();
    a->set_name("value_string");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s("hello");
    CHECK(importError(c.bytes()) ==
          "model.onnx: node 's' (Constant): string constants are not supported");
  }
}

TEST_CASE("a declared output type that disagrees with the graph is an error", "[onnx]") {
  ModelBuilder b;
  b.input("x", {"2", "3"}).output("y", {"3", "2"});
  b.node("Relu", {"x"}, {"y"});
  CHECK(importError(b.bytes()) == "model.onnx: output 'y': the model declares FLOAT [3, 2] but "
                                  "the graph computes f32[2, 3]");
  ModelBuilder c;
  c.input("x", {"2"}).output("y", {"2"}, ::onnx::TensorProto::INT64);
  c.node("Relu", {"x"}, {"y"});
  CHECK(importError(c.bytes()) == "model.onnx: output 'y': the model declares INT64 [2] but the "
                                  "graph computes f32[2]");
}

TEST_CASE("graph structure errors: undefined inputs, cycles, order, unproduced outputs",
          "[onnx]") {
  SECTION("nodes out of order are sorted") {
    ModelBuilder b;
    b.input("x", {"2"}).output("y", {"2"});
    b.node("Relu", {"t"}, {"y"}, "second");
    b.node("Relu", {"x"}, {"t"}, "first");
    auto m = importBytes(b.bytes());
    REQUIRE(m.ok());
  }
  SECTION("an undefined input") {
    ModelBuilder b;
    b.input("x", {"2"}).output("y", {"2"});
    b.node("Relu", {"nope"}, {"y"}, "r");
    CHECK(importError(b.bytes()) == "model.onnx: node 'r' (Relu): input 'nope' is not produced "
                                    "by any node, initializer or graph input");
  }
  SECTION("a cycle") {
    ModelBuilder b;
    b.input("x", {"2"}).output("y", {"2"});
    b.node("Add", {"x", "b"}, {"a"}, "n1");
    b.node("Relu", {"a"}, {"b"}, "n2");
    b.node("Relu", {"a"}, {"y"}, "n3");
    CHECK(importError(b.bytes()) == "model.onnx: the graph has a cycle through node 'n1' (Add)");
  }
  SECTION("an optional output the converter does not produce, used later") {
    ModelBuilder b;
    b.input("x", {"2"}).output("y", {"2"});
    b.node("Dropout", {"x"}, {"d", "mask"}, "drop");
    b.node("Relu", {"mask"}, {"y"}, "r");
    CHECK(importError(b.bytes()) == "model.onnx: node 'r' (Relu): input 'mask' is output 1 of "
                                    "node 'drop' (Dropout), which Tessera does not produce");
    ModelBuilder c;
    c.input("x", {"2"}).output("d", {"2"});
    c.node("Dropout", {"x"}, {"d", "mask"}, "drop");
    CHECK(importError(c.bytes()) == "");
  }
  SECTION("type errors name the node") {
    ModelBuilder b;
    b.input("x", {"2"}).input("z", {"3"}).output("y", {"2"});
    b.node("Add", {"x", "z"}, {"y"}, "bad_add");
    std::string e = importError(b.bytes());
    CHECK(e.find("model.onnx: node 'bad_add' (Add): add: ") == 0);
  }
}

TEST_CASE("inputs that converters need as constants are reported and can be bound", "[onnx]") {
  ModelBuilder b;
  b.input("x", {"2", "3"}).input("shape", {"2"}, ::onnx::TensorProto::INT64);
  b.output("y", {"3", "2"});
  b.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  ImportReport report;
  auto m = importBytes(b.bytes(), testOptions(), &report);
  REQUIRE(!m.ok());
  CHECK(m.error().str() ==
        "model.onnx: node 'reshape' (Reshape): input 1 ('shape') must be a constant");
  CHECK(report.wantedConstants == std::vector<std::string>{"shape"});
  CHECK(report.graphInputs == std::vector<std::string>{"x", "shape"});

  ImportOptions o = testOptions();
  o.constantInputs["shape"] = i64({2}, {3, 2});
  auto bound = importBytes(b.bytes(), o, &report);
  REQUIRE(bound.ok());
  REQUIRE(bound->find("main")->params().size() == 1);
  CHECK(bound->find("main")->params()[0]->name() == "x");

  SECTION("an input computed from graph inputs reports those inputs") {
    ModelBuilder c;
    c.input("x", {"2", "3"}).input("s0", {"2"}, ::onnx::TensorProto::INT64);
    c.output("y", {"3", "2"});
    c.initializer("zeros", i64({2}, {0, 0}));
    c.node("Add", {"s0", "zeros"}, {"shape"}, "computed");
    c.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
    ImportReport rc;
    CHECK(!importBytes(c.bytes(), testOptions(), &rc).ok());
    CHECK(rc.wantedConstants == std::vector<std::string>{"s0"});
    ImportOptions oc = testOptions();
    oc.constantInputs["s0"] = i64({2}, {3, 2});
    CHECK(importError(c.bytes(), oc) == "");
  }
  o.constantInputs["shape"] = f32({2}, {3, 2});
  CHECK(importError(b.bytes(), o) ==
        "model.onnx: input 'shape' is INT64, the constant bound to it is f32[2]");
  o.constantInputs["shape"] = i64({3}, {3, 2, 1});
  CHECK(importError(b.bytes(), o) ==
        "model.onnx: input 'shape' is declared [2], the constant bound to it is i64[3]");
}

TEST_CASE("parseInputShape", "[onnx]") {
  auto ok = parseInputShape("x=1,3,224,224");
  REQUIRE(ok.ok());
  CHECK(ok->first == "x");
  CHECK(ok->second == std::vector<int64_t>{1, 3, 224, 224});
  auto colon = parseInputShape("input:0=2");
  REQUIRE(colon.ok());
  CHECK(colon->first == "input:0");
  CHECK(parseInputShape("x").error().str() ==
        "bad input shape 'x': expected NAME=D1,D2,... (e.g. x=1,3,224,224)");
  CHECK(parseInputShape("=1,2").error().str() == "bad input shape '=1,2': the input name is empty");
  CHECK(parseInputShape("x=").error().str() == "bad input shape 'x=': no dims after '='");
  const std::string notADim = "is not a non-negative integer, a symbol name (N), or a range "
                              "(1..8, N:1..8, H:32..)";
  CHECK(parseInputShape("x=1,,2").error().str() ==
        "bad input shape 'x=1,,2': dim 1 ('') " + notADim);
  CHECK(parseInputShape("x=1,-3").error().str() ==
        "bad input shape 'x=1,-3': dim 1 ('-3') " + notADim);
  CHECK(parseInputShape("x=1,3a").error().str() ==
        "bad input shape 'x=1,3a': dim 1 ('3a') " + notADim);
  CHECK(parseInputShape("x=1,4...").error().str() ==
        "bad input shape 'x=1,4...': dim 1 ('4...') " + notADim);
  CHECK(ir::dimStr(parseInputShape("x=1,4..")->second[1]) == "x_1(4)"); // no upper bound
  CHECK(parseInputShape("x=1,8..4").error().str() ==
        "bad input shape 'x=1,8..4': dim 1 ('8..4'): symbol 'x_1': bounds 8..4 are not a range "
        "of sizes");
  // Symbols: a name, a named range, an unnamed range (named after the dim).
  auto sym = parseInputShape("x=N,3,H:32..640,1..8");
  REQUIRE(sym.ok());
  REQUIRE(sym->second.size() == 4);
  CHECK(ir::dimStr(sym->second[0]) == "N");
  CHECK(sym->second[1] == 3);
  CHECK(ir::dimStr(sym->second[2]) == "H(32, 640)");
  CHECK(ir::dimStr(sym->second[3]) == "x_3(1, 8)");
}

TEST_CASE("dynamic dims: --input-shape names and bounds symbols that stay symbolic", "[onnx]") {
  // Conv (same padding) -> global pool -> Flatten -> Gemm over [batch, 3, H, W].
  ModelBuilder b;
  b.input("x", {"batch", "3", "H", "W"}).output("y", {"batch", "2"});
  b.initializer("w", f32({4, 3, 3, 3}, std::vector<double>(108, 0.5)));
  b.initializer("fc", f32({2, 4}, {1, 0, 0, 1, 1, 1, 0, 0}));
  auto *conv = b.node("Conv", {"x", "w"}, {"c"});
  test::addIntsAttr(conv, "pads", {1, 1, 1, 1});
  b.node("GlobalAveragePool", {"c"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  auto *gemm = b.node("Gemm", {"f", "fc"}, {"y"});
  test::addIntAttr(gemm, "transB", 1);

  ImportOptions o;
  o.registry = &ConverterRegistry::standard(); // the real converters
  auto shape = parseInputShape("x=N,3,16..512,16..512");
  REQUIRE(shape.ok());
  o.inputShapes[shape->first] = shape->second;
  auto m = importBytes(b.bytes(), o);
  INFO((m.ok() ? std::string() : m.error().str()));
  REQUIRE(m.ok());
  // The unnamed ranges take the model's dim_params as names.
  CHECK(m->find("main")->type().str() ==
        "fn(f32[N, 3, H(16, 512), W(16, 512)]) -> f32[N, 2]");
  // A symbol where the model has a fixed dim is refused by name.
  o.inputShapes["x"] = parseInputShape("x=N,C,H,W")->second;
  CHECK(importError(b.bytes(), o) == "model.onnx: input 'x': dim 1 is 3 in the model ([batch, 3, "
                                     "H, W]), the bound shape [N, C, H, W] gives C");
}

//===----------------------------------------------------------------------===//
// NodeContext and the registry
//===----------------------------------------------------------------------===//

TEST_CASE("NodeContext attribute access is typed and errors name the node", "[onnx]") {
  std::map<std::string, OnnxAttr, std::less<>> attrs;
  attrs["axis"] = int64_t(2);
  attrs["alpha"] = 0.5f;
  attrs["mode"] = std::string("nearest");
  attrs["pads"] = std::vector<int64_t>{1, 2};
  attrs["scales"] = std::vector<float>{1.5f};
  NodeContext ctx("Foo", "foo_1", 13, {}, 1, attrs);
  CHECK(*ctx.attrInt("axis") == 2);
  CHECK(*ctx.attrInt("missing", 7) == 7);
  CHECK(*ctx.attrFloat("alpha") == 0.5f);
  CHECK(*ctx.attrFloat("axis") == 2.0f); // an int where a float is expected
  CHECK(*ctx.attrString("mode") == "nearest");
  CHECK(*ctx.attrInts("pads") == std::vector<int64_t>{1, 2});
  CHECK(*ctx.attrFloats("pads") == std::vector<float>{1, 2});
  CHECK(*ctx.attrFloats("scales") == std::vector<float>{1.5f});
  CHECK(ctx.attrInt("alpha").error().str() ==
        "node 'foo_1' (Foo): attribute 'alpha' must be an int, got a float");
  CHECK(ctx.attrInts("axis").error().str() ==
        "node 'foo_1' (Foo): attribute 'axis' must be a list of ints, got an int");
  CHECK(ctx.attrString("missing").error().str() ==
        "node 'foo_1' (Foo): missing required attribute 'missing'");
  CHECK(ctx.attrTensor("mode").error().str() ==
        "node 'foo_1' (Foo): attribute 'mode' must be a tensor, got a string");
  CHECK(!ctx.hasInput(0));
  CHECK(ctx.input(3) == nullptr);
}

TEST_CASE("NodeContext::call folds constant arguments and names the node", "[onnx]") {
  NodeContext ctx("Add", "my_add", 13, {}, 1, {});
  auto folded = ctx.call("add", {ir::makeConstant(f32({2}, {1, 2})),
                                 ir::makeConstant(f32({2}, {3, 4}))});
  REQUIRE(folded.ok());
  const auto *k = (*folded)->as<ir::ConstantNode>();
  REQUIRE(k);
  CHECK((*folded)->name() == "my_add");
  CHECK(k->data().toDoubles() == std::vector<double>{4, 6});

  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {2}));
  auto call = ctx.call("add", {x, ir::makeConstant(f32({2}, {3, 4}))});
  REQUIRE(call.ok());
  CHECK((*call)->as<ir::CallNode>());
  CHECK((*call)->name() == "my_add");

  auto tuple = ctx.call("split", {ir::makeConstant(f32({4}, {1, 2, 3, 4}))},
                        {{"sizes", std::vector<int64_t>{1, 3}}});
  REQUIRE(tuple.ok());
  REQUIRE((*tuple)->as<ir::TupleNode>());
  CHECK((*tuple)->operands()[1]->as<ir::ConstantNode>()->data().toDoubles() ==
        std::vector<double>{2, 3, 4});

  auto bad = ctx.call("add", {x, ir::makeConstant(f32({3}, {1, 2, 3}))});
  REQUIRE(!bad.ok());
  CHECK(bad.error().str().find("node 'my_add' (Add): add: ") == 0);
}

TEST_CASE("the converter registry rejects duplicates and malformed entries", "[onnx]") {
  ConverterRegistry r;
  Converter c = [](NodeContext &) -> Expected<std::vector<ir::Expr>> {
    return std::vector<ir::Expr>{};
  };
  REQUIRE(r.add({"Relu", 7, 17, c, ""}).ok());
  CHECK(r.add({"Relu", 7, 17, c, ""}).error().str() ==
        "ONNX converter for 'Relu' registered twice");
  CHECK(r.add({"Foo", 14, 13, c, ""}).error().str() ==
        "ONNX converter for 'Foo': opsets 14..13 are empty");
  CHECK(r.add({"Bar", 7, 17, nullptr, ""}).error().str() ==
        "ONNX converter for 'Bar' has no conversion function");
  CHECK(r.find("Relu"));
  CHECK(!r.find("Foo"));
  CHECK(r.all().size() == 1);
  // The standard registry builds (every family registers without error).
  CHECK(ConverterRegistry::standard().all().size() < 1000);
}

TEST_CASE("an op type outside its converter's opsets is unsupported", "[onnx]") {
  ConverterRegistry r;
  REQUIRE(r.add({"Relu", 14, 17,
                 [](NodeContext &ctx) { return one(ctx.call("relu", {ctx.input(0)})); }, ""})
              .ok());
  ModelBuilder b(13);
  b.input("x", {"2"}).output("y", {"2"});
  b.node("Relu", {"x"}, {"y"}, "r");
  ImportOptions o;
  o.registry = &r;
  ImportReport report;
  auto m = importModelBytes(b.bytes(), ".", "m.onnx", o, &report);
  CHECK(m.error().str() == "m.onnx: 1 unsupported op type: Relu (opset 13) (1 node: r)");
  REQUIRE(report.unsupported.size() == 1);
}

//===----------------------------------------------------------------------===//
// Conformance
//===----------------------------------------------------------------------===//

namespace {
/// Writes a backend test: model + one data set.
void writeBackendTest(const fs::path &dir, const ModelBuilder &b,
                      const std::vector<ir::Tensor> &inputs,
                      const std::vector<ir::Tensor> &outputs) {
  fs::create_directories(dir / "test_data_set_0");
  writeFile((dir / "model.onnx").string(), b.bytes());
  auto write = [&](const std::string &name, const ir::Tensor &t) {
    ::onnx::TensorProto p;
    tensorToProto(t, p);
    writeFile((dir / "test_data_set_0" / name).string(), p.SerializeAsString());
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    write(fmt::format("input_{}.pb", i), inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i)
    write(fmt::format("output_{}.pb", i), outputs[i]);
}
} // namespace

TEST_CASE("conformance: pass, fail, unsupported and constant binding", "[onnx]") {
  TempDir dir("conf");
  ModelBuilder relu;
  relu.input("x", {"N", "3"}).output("y", {"N", "3"});
  relu.node("Relu", {"x"}, {"y"});
  // Dynamic batch: the data's shape [2, 3] is bound.
  writeBackendTest(dir.path / "test_a_pass", relu, {f32({2, 3}, {-1, 2, -3, 4, 5, -6})},
                   {f32({2, 3}, {0, 2, 0, 4, 5.004, 0})});
  writeBackendTest(dir.path / "test_b_fail", relu, {f32({1, 3}, {-1, 2, 3})},
                   {f32({1, 3}, {0, 2, 3.1})});
  ModelBuilder lstm;
  lstm.input("x", {"3"}).output("y", {"3"});
  lstm.node("LSTM", {"x"}, {"y"});
  writeBackendTest(dir.path / "test_c_unsupported", lstm, {f32({3}, {1, 2, 3})},
                   {f32({3}, {1, 2, 3})});
  ModelBuilder reshape;
  reshape.input("x", {"2", "3"}).input("shape", {"2"}, ::onnx::TensorProto::INT64);
  reshape.output("y", {"3", "2"});
  reshape.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  writeBackendTest(dir.path / "test_d_bind", reshape,
                   {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2}, {3, 2})},
                   {f32({3, 2}, {1, 2, 3, 4, 5, 6})});
  writeBackendTest(dir.path / "test_e_dtype", relu, {f32({1, 3}, {1, 2, 3})},
                   {i64({1, 3}, {1, 2, 3})});
  ModelBuilder nan;
  nan.input("x", {"3"}).output("y", {"3"});
  nan.node("Identity", {"x"}, {"y"});
  double inf = INFINITY;
  writeBackendTest(dir.path / "test_f_nan", nan, {f32({3}, {NAN, inf, -inf})},
                   {f32({3}, {NAN, inf, -inf})});

  // ONNX 1.12 stores bfloat16 test data as UINT16 bit patterns.
  ModelBuilder bf16;
  bf16.input("x", {"2"}, ::onnx::TensorProto::BFLOAT16);
  bf16.output("y", {"2"}, ::onnx::TensorProto::BFLOAT16);
  bf16.node("Identity", {"x"}, {"y"});
  writeBackendTest(dir.path / "test_g_bf16", bf16, {}, {});
  {
    ::onnx::TensorProto p;
    p.set_data_type(::onnx::TensorProto::UINT16);
    p.add_dims(2);
    uint16_t bits[2] = {ir::floatToBfloat16(1.5f), ir::floatToBfloat16(-3.0f)};
    p.set_raw_data(bits, sizeof bits);
    for (const char *f : {"input_0.pb", "output_0.pb"})
      writeFile((dir.path / "test_g_bf16" / "test_data_set_0" / f).string(),
                p.SerializeAsString());
  }

  ConformanceOptions o;
  o.registry = &testRegistry();
  o.summary = true;
  std::ostringstream out;
  auto s = runConformance({dir.path.string()}, o, out);
  REQUIRE(s.ok());
  CHECK(out.str() == "PASS test_a_pass\n"
                     "FAIL test_b_fail: output 0 element 2: got 3, expected 3.0999999 "
                     "(shape [1, 3])\n"
                     "UNSUPPORTED test_c_unsupported: LSTM\n"
                     "PASS test_d_bind\n"
                     "FAIL test_e_dtype: output 0: got dtype f32, expected i64\n"
                     "PASS test_f_nan\n"
                     "PASS test_g_bf16\n"
                     "unsupported op types by number of tests blocked:\n"
                     "  LSTM                             1\n"
                     "4 passed, 2 failed, 1 unsupported\n");
  CHECK(s->passed == 4);
  CHECK(s->failed == 2);
  CHECK(s->unsupported == 1);
  CHECK(s->blockedBy.at("LSTM") == 1);

  SECTION("--filter and a single test folder") {
    std::ostringstream one;
    o.filter = "bind";
    o.summary = false;
    auto s1 = runConformance({dir.path.string()}, o, one);
    REQUIRE(s1.ok());
    CHECK(one.str() == "PASS test_d_bind\n1 passed, 0 failed, 0 unsupported\n");
    std::ostringstream single;
    o.filter.clear();
    auto s2 = runConformance({(dir.path / "test_b_fail").string()}, o, single);
    REQUIRE(s2.ok());
    CHECK(s2->failed == 1);
  }
  SECTION("a path that is not a test folder") {
    std::ostringstream none;
    CHECK(runConformance({"/nonexistent"}, o, none).error().str() ==
          "'/nonexistent' is not a directory");
  }
}

TEST_CASE("conformance runs the ONNX node tests of the local converters", "[onnx]") {
  const std::string root = "/usr/share/libonnx-testdata/data/node";
  REQUIRE(fs::exists(root + "/test_relu"));
  ConformanceOptions o;
  o.registry = &testRegistry();
  for (const char *t : {"test_relu", "test_add", "test_add_bcast", "test_reshape_reordered_all_dims",
                        "test_identity"}) {
    INFO(t);
    TestOutcome r = runBackendTest(root + "/" + t, o);
    INFO(r.detail);
    CHECK(r.status == TestStatus::Pass);
  }
  TestOutcome u = runBackendTest(root + "/test_lstm_defaults", o);
  CHECK(u.status == TestStatus::Unsupported);
  CHECK(u.detail == "LSTM");
}

TEST_CASE("dynamic dims: a data-dependent op over an unbounded input asks for a bound",
          "[onnx]") {
  // Unbound dims stay symbolic without an upper bound; NonZero's and
  // Unique's buffers are planned at their inputs' largest size, so the
  // importer asks for a bound, naming the node; with one, they import (a
  // Unique that names only Y, its other outputs being optional).
  for (const char *op : {"NonZero", "Unique"}) {
    INFO(op);
    ModelBuilder b;
    const bool indices = std::string(op) == "NonZero";
    b.input("x", {"N", "3"})
        .output("y", indices ? std::vector<std::string>{"2", "?"} : std::vector<std::string>{"?"},
                indices ? ::onnx::TensorProto::INT64 : ::onnx::TensorProto::FLOAT);
    b.node(op, {"x"}, {"y"}, "picks");
    ImportOptions standard;
    standard.registry = &ConverterRegistry::standard();
    const std::string err = importError(b.bytes(), standard);
    CHECK_THAT(err, Catch::Contains("picks") && Catch::Contains("f32[N, 3], whose size has no "
                                                                "upper bound") &&
                        Catch::Contains("--input-shape x=1..64"));
    auto n = ir::namedSymbol("N", 1, 4);
    REQUIRE(n.ok());
    standard.inputShapes["x"] = {*n, 3};
    auto m = importBytes(b.bytes(), standard);
    if (!m.ok())
      FAIL(m.error().str());
  }
}
