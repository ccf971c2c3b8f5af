//===- tests/unit/text_format_test.cpp - Text IR printer and parser -------===//
//
// Round trips (print(parse(print(m))) == print(m)), every literal kind, hex
// constants of every dtype, quoted and duplicate names, a 100,000-node chain,
// and exact diagnostics for malformed inputs.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "ir/module.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::test;

namespace {

Type t32(Shape s) { return Type::tensor(DType::F32, std::move(s)); }

Module parseOk(std::string_view text) {
  auto m = parseModule(text, "t.tir");
  if (!m.ok())
    FAIL("parse error: " << m.error().str() << "\n--- input ---\n" << text);
  return std::move(m).value();
}

std::string parseError(std::string_view text) {
  auto m = parseModule(text, "t.tir");
  if (m.ok())
    return "<no error>";
  return m.error().str();
}

/// print(parse(print(m))) == print(m), and the reparsed module is
/// structurally equal to `m`.
void requireRoundTrip(const Module &m) {
  std::string once = printModule(m);
  Module again = parseOk(once);
  std::string twice = printModule(again);
  INFO("--- first print ---\n" << once << "--- second print ---\n" << twice);
  REQUIRE(twice == once);
  REQUIRE(structuralEqual(m, again));
}

Module singleFunction(std::vector<Var> params, Expr body, std::string name = "m") {
  Module m(std::move(name));
  m.set("main", makeFunction(std::move(params), std::move(body)));
  return m;
}

} // namespace

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

TEST_CASE("printer: exact text of a small module", "[text]") {
  Var x = makeVar("x", t32({2, 3}));
  Expr r = expectOk(makeCall("relu", {x}));
  Expr c = makeConstant(f32({3}, {0.5, 1.0, -2.0}), "c");
  Expr a = expectOk(makeCall("add", {r, c}));
  Module m = singleFunction({x}, a);
  REQUIRE(printModule(m) == "module @m\n"
                            "\n"
                            "def @main(%x: f32[2, 3]) -> f32[2, 3] {\n"
                            "  %0 = relu(%x) : f32[2, 3]\n"
                            "  %c = constant f32[3] [0.5, 1.0, -2.0]\n"
                            "  %1 = add(%0, %c) : f32[2, 3]\n"
                            "  return %1\n"
                            "}\n");
  requireRoundTrip(m);
}

TEST_CASE("printer: tuples, get item, split and attribute order", "[text]") {
  Var x = makeVar("x", t32({2, 3}));
  Expr s = expectOk(makeCall("split", {x}, {{"sizes", std::vector<int64_t>{1, 2}}, {"axis", int64_t(1)}}));
  Expr g0 = expectOk(makeTupleGetItem(s, 0));
  Expr g1 = expectOk(makeTupleGetItem(s, 1));
  Expr one = makeTuple({g0});
  Expr empty = makeTuple({});
  Expr t = makeTuple({g1, one, empty});
  Module m = singleFunction({x}, t);
  REQUIRE(printModule(m) ==
          "module @m\n"
          "\n"
          "def @main(%x: f32[2, 3]) -> (f32[2, 2], (f32[2, 1],), ()) {\n"
          "  %0 = split(%x) {axis=1, sizes=[1, 2]} : (f32[2, 1], f32[2, 2])\n"
          "  %1 = %0.1 : f32[2, 2]\n"
          "  %2 = %0.0 : f32[2, 1]\n"
          "  %3 = tuple(%2) : (f32[2, 1],)\n"
          "  %4 = tuple() : ()\n"
          "  %5 = tuple(%1, %3, %4) : (f32[2, 2], (f32[2, 1],), ())\n"
          "  return %5\n"
          "}\n");
  requireRoundTrip(m);
}

TEST_CASE("printer: a node with many users is printed once", "[text]") {
  Var x = makeVar("x", t32({4}));
  Expr r = expectOk(makeCall("relu", {x}));
  Expr a = expectOk(makeCall("add", {r, r}));
  Expr b = expectOk(makeCall("multiply", {a, r}));
  Module m = singleFunction({x}, b);
  REQUIRE(printModule(m) == "module @m\n"
                            "\n"
                            "def @main(%x: f32[4]) -> f32[4] {\n"
                            "  %0 = relu(%x) : f32[4]\n"
                            "  %1 = add(%0, %0) : f32[4]\n"
                            "  %2 = multiply(%1, %0) : f32[4]\n"
                            "  return %2\n"
                            "}\n");
  requireRoundTrip(m);
}

TEST_CASE("printer: global calls, nested functions and local calls", "[text]") {
  Var y = makeVar("y", t32({1, 4}));
  Function helper = makeFunction({y}, expectOk(makeCall("relu", {y})), {{"inline", false}});

  Var x = makeVar("x", t32({1, 4}));
  Var a = makeVar("a", t32({1, 4}));
  Function composite = makeFunction({a}, expectOk(makeCall("relu", {a}, {}, "r")),
                                    {{"Composite", std::string("dnnl.relu")}}, "f");
  Expr call = expectOk(makeGlobalCall("helper", helper->type(), {x}));
  Expr local = expectOk(makeLocalCall(composite, {call}));
  Expr local2 = expectOk(makeLocalCall(composite, {local}));
  Module m("calls");
  m.set("main", makeFunction({x}, local2, {{"global_symbol", std::string("main")}}));
  m.set("helper", helper);
  REQUIRE(printModule(m) ==
          "module @calls\n"
          "\n"
          "def @main(%x: f32[1, 4]) -> f32[1, 4] attributes {global_symbol=\"main\"} {\n"
          "  %f = fn(%a: f32[1, 4]) -> f32[1, 4] attributes {Composite=\"dnnl.relu\"} {\n"
          "    %r = relu(%a) : f32[1, 4]\n"
          "    return %r\n"
          "  }\n"
          "  %0 = @helper(%x) : f32[1, 4]\n"
          "  %1 = %f(%0) : f32[1, 4]\n"
          "  %2 = %f(%1) : f32[1, 4]\n"
          "  return %2\n"
          "}\n"
          "\n"
          "def @helper(%y: f32[1, 4]) -> f32[1, 4] attributes {inline=false} {\n"
          "  %0 = relu(%y) : f32[1, 4]\n"
          "  return %0\n"
          "}\n");
  requireRoundTrip(m);
}

TEST_CASE("printer: printExpr and printFunction", "[text]") {
  Var x = makeVar("x", t32({2}));
  Expr r = expectOk(makeCall("relu", {x}, {}, "r"));
  Expr n = expectOk(makeCall("abs", {r}));
  REQUIRE(printExpr(n) == "%r = relu(%x) : f32[2]\n"
                          "%0 = abs(%r) : f32[2]\n"
                          "return %0\n");
  REQUIRE(printExpr(x) == "return %x\n");
  REQUIRE(printFunction("g", makeFunction({x}, x)) == "def @g(%x: f32[2]) -> f32[2] {\n"
                                                      "  return %x\n"
                                                      "}\n");
}

TEST_CASE("printer: empty module and module names needing quotes", "[text]") {
  REQUIRE(printModule(Module("m")) == "module @m\n");
  Module q("my model/v1");
  REQUIRE(printModule(q) == "module @\"my model/v1\"\n");
  Module back = parseOk(printModule(q));
  REQUIRE(back.name() == "my model/v1");
  REQUIRE(back.size() == 0);
  REQUIRE(parseOk("").name() == "module");
  REQUIRE(parseOk("# just a comment\n\n").name() == "module");
}

TEST_CASE("printer: function values in results and tuples", "[text]") {
  Var a = makeVar("a", t32({2}));
  Function f = makeFunction({a}, expectOk(makeCall("relu", {a})), {}, "f");
  Var x = makeVar("x", t32({2}));
  Module m("m");
  m.set("main", makeFunction({x}, makeTuple({f, x})));
  m.set("get", makeFunction({}, f));
  REQUIRE(printModule(m) == "module @m\n"
                            "\n"
                            "def @main(%x: f32[2]) -> (fn(f32[2]) -> f32[2], f32[2]) {\n"
                            "  %f = fn(%a: f32[2]) -> f32[2] {\n"
                            "    %0 = relu(%a) : f32[2]\n"
                            "    return %0\n"
                            "  }\n"
                            "  %1 = tuple(%f, %x) : (fn(f32[2]) -> f32[2], f32[2])\n"
                            "  return %1\n"
                            "}\n"
                            "\n"
                            "def @get() -> fn(f32[2]) -> f32[2] {\n"
                            "  %f = fn(%a: f32[2]) -> f32[2] {\n"
                            "    %0 = relu(%a) : f32[2]\n"
                            "    return %0\n"
                            "  }\n"
                            "  return %f\n"
                            "}\n");
  requireRoundTrip(m);
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

TEST_CASE("names: quoting of names that are not identifiers", "[text]") {
  Var x = makeVar("/input:0", t32({2}));
  Expr a = expectOk(makeCall("relu", {x}, {}, "/conv1/Conv:0"));
  Expr b = expectOk(makeCall("relu", {a}, {}, "with \"quote\" and \\ and\nnewline\t\x01"));
  Expr c = expectOk(makeCall("relu", {b}, {}, "x.y$z-w_9"));
  Expr d = expectOk(makeCall("relu", {c}, {}, "42"));
  Expr e = expectOk(makeCall("relu", {d}, {}, "4a"));
  Expr s = expectOk(makeCall("split", {e}, {{"sizes", std::vector<int64_t>{1, 1}}}, "a b"));
  Expr g = expectOk(makeTupleGetItem(s, 1, "g"));
  Module m = singleFunction({x}, g);
  REQUIRE(printModule(m) ==
          "module @m\n"
          "\n"
          "def @main(%\"/input:0\": f32[2]) -> f32[1] {\n"
          "  %\"/conv1/Conv:0\" = relu(%\"/input:0\") : f32[2]\n"
          "  %\"with \\\"quote\\\" and \\\\ and\\nnewline\\t\\x01\" = relu(%\"/conv1/Conv:0\") : f32[2]\n"
          "  %x.y$z-w_9 = relu(%\"with \\\"quote\\\" and \\\\ and\\nnewline\\t\\x01\") : f32[2]\n"
          "  %42 = relu(%x.y$z-w_9) : f32[2]\n"
          "  %\"4a\" = relu(%42) : f32[2]\n"
          "  %\"a b\" = split(%\"4a\") {axis=0, sizes=[1, 1]} : (f32[1], f32[1])\n"
          "  %g = %\"a b\".1 : f32[1]\n"
          "  return %g\n"
          "}\n");
  requireRoundTrip(m);
  // The parser keeps the names it reads.
  Module back = parseOk(printModule(m));
  const auto &fn = back.find("main");
  REQUIRE(fn->params()[0]->name() == "/input:0");
  REQUIRE(fn->body()->name() == "g");
  REQUIRE(fn->body()->operands()[0]->name() == "a b");
}

TEST_CASE("names: get item of a tuple whose name contains dots", "[text]") {
  Module m = parseOk(R"(
def @main(%x: f32[2]) -> f32[1] {
  %s.1 = split(%x) {sizes=[1, 1]}
  %9 = split(%x) {sizes=[1, 1]}
  %a = %s.1.0
  %b = %9.1
  %c = add(%a, %b)
  return %c
}
)");
  REQUIRE(printModule(m) == "module @module\n"
                            "\n"
                            "def @main(%x: f32[2]) -> f32[1] {\n"
                            "  %s.1 = split(%x) {axis=0, sizes=[1, 1]} : (f32[1], f32[1])\n"
                            "  %a = %s.1.0 : f32[1]\n"
                            "  %9 = split(%x) {axis=0, sizes=[1, 1]} : (f32[1], f32[1])\n"
                            "  %b = %9.1 : f32[1]\n"
                            "  %c = add(%a, %b) : f32[1]\n"
                            "  return %c\n"
                            "}\n");
  requireRoundTrip(m);
}

TEST_CASE("names: duplicates get suffixes, numbers skip used names", "[text]") {
  Var x = makeVar("x", t32({2}));
  Expr a = expectOk(makeCall("relu", {x}, {}, "x"));   // same as the param
  Expr b = expectOk(makeCall("relu", {a}, {}, "x_1")); // taken: the dup becomes x_2
  Expr c = expectOk(makeCall("relu", {b}));             // unnamed -> 1 (0 is taken)
  Expr d = expectOk(makeCall("relu", {c}, {}, "0"));
  Expr e = expectOk(makeCall("relu", {d}, {}, "x")); // third x -> x_3
  Expr f = expectOk(makeCall("relu", {e}));           // unnamed -> 2
  Module m = singleFunction({x}, f);
  REQUIRE(printModule(m) == "module @m\n"
                            "\n"
                            "def @main(%x: f32[2]) -> f32[2] {\n"
                            "  %x_2 = relu(%x) : f32[2]\n"
                            "  %x_1 = relu(%x_2) : f32[2]\n"
                            "  %1 = relu(%x_1) : f32[2]\n"
                            "  %0 = relu(%1) : f32[2]\n"
                            "  %x_3 = relu(%0) : f32[2]\n"
                            "  %2 = relu(%x_3) : f32[2]\n"
                            "  return %2\n"
                            "}\n");
  requireRoundTrip(m);
}

TEST_CASE("names: nested function scopes are separate when parsing", "[text]") {
  // %r and %a are defined in both scopes; the printer makes names unique
  // within the global function.
  Module m = parseOk(R"(
def @main(%a: f32[2]) -> f32[2] {
  %r = relu(%a)
  %f = fn(%a: f32[2]) -> f32[2] {
    %r = abs(%a)
    return %r
  }
  %out = %f(%r)
  return %out
}
)");
  // Names are given in print order: the nested body comes first.
  REQUIRE(printModule(m) == "module @module\n"
                            "\n"
                            "def @main(%a: f32[2]) -> f32[2] {\n"
                            "  %f = fn(%a_1: f32[2]) -> f32[2] {\n"
                            "    %r = abs(%a_1) : f32[2]\n"
                            "    return %r\n"
                            "  }\n"
                            "  %r_1 = relu(%a) : f32[2]\n"
                            "  %out = %f(%r_1) : f32[2]\n"
                            "  return %out\n"
                            "}\n");
  requireRoundTrip(m);
}

TEST_CASE("names: a constant shared by a nested function prints in both scopes", "[text]") {
  Expr c = makeConstant(f32({2}, {1.0, 2.0}), "c");
  Var a = makeVar("a", t32({2}));
  Function f = makeFunction({a}, expectOk(makeCall("add", {a, c})));
  Var x = makeVar("x", t32({2}));
  Expr call = expectOk(makeLocalCall(f, {x}));
  Expr out = expectOk(makeCall("add", {call, c}));
  Module m = singleFunction({x}, out);
  std::string text = printModule(m);
  Module back = parseOk(text);
  REQUIRE(printModule(back) == text);
  REQUIRE(text.find("%c = constant f32[2] [1.0, 2.0]") != std::string::npos);
  REQUIRE(text.find("%c_1 = constant f32[2] [1.0, 2.0]") != std::string::npos);
}

//===----------------------------------------------------------------------===//
// Literals
//===----------------------------------------------------------------------===//

TEST_CASE("literals: every attribute kind in function attributes", "[text]") {
  Var x = makeVar("x", t32({1}));
  Attrs attrs{{"i", int64_t(-3)},
              {"f", 0.5},
              {"f1", 1.0},
              {"fe", 1e-05},
              {"fbig", 1e20},
              {"finf", std::numeric_limits<double>::infinity()},
              {"fninf", -std::numeric_limits<double>::infinity()},
              {"fnan", std::numeric_limits<double>::quiet_NaN()},
              {"s", std::string("say \"hi\"\\\n")},
              {"b", true},
              {"nb", false},
              {"d", DType::F16},
              {"ints", std::vector<int64_t>{1, -2, 3}},
              {"floats", std::vector<double>{0.5, 1.0, -2.0}},
              {"empty", std::vector<int64_t>{}}};
  Module m("m");
  m.set("main", makeFunction({x}, x, attrs));
  std::string text = printModule(m);
  REQUIRE(text == "module @m\n"
                  "\n"
                  "def @main(%x: f32[1]) -> f32[1] attributes {b=true, d=f16, empty=[], f=0.5, "
                  "f1=1.0, fbig=1e+20, fe=1e-05, finf=inf, floats=[0.5, 1.0, -2.0], fnan=nan, "
                  "fninf=-inf, i=-3, ints=[1, -2, 3], nb=false, s=\"say \\\"hi\\\"\\\\\\n\"} {\n"
                  "  return %x\n"
                  "}\n");
  Module back = parseOk(text);
  REQUIRE(printModule(back) == text);
  const Attrs &got = back.find("main")->attrs();
  REQUIRE(got.getInt("i") == -3);
  REQUIRE(got.getFloat("f") == 0.5);
  REQUIRE(got.getFloat("fe") == 1e-05);
  REQUIRE(std::isnan(got.getFloat("fnan")));
  REQUIRE(got.getFloat("fninf") == -std::numeric_limits<double>::infinity());
  REQUIRE(got.getString("s") == "say \"hi\"\\\n");
  REQUIRE(got.getBool("b"));
  REQUIRE(got.getDType("d") == DType::F16);
  REQUIRE(got.getInts("ints") == std::vector<int64_t>{1, -2, 3});
  REQUIRE(got.getFloats("floats") == std::vector<double>{0.5, 1.0, -2.0});
  REQUIRE(got.getInts("empty").empty());
}

TEST_CASE("literals: op attributes are coerced to the declared kind", "[text]") {
  // leaky_relu's alpha is a float: an int literal reads as 1.0.
  // resize2d's scales is a float list: [] and [1, 2] read as floats.
  Module m = parseOk(R"(
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 1, 4, 4] {
  %0 = leaky_relu(%x) {alpha=1}
  %1 = resize2d(%0) {scales=[], size=[4, 4]}
  %2 = cast(%1) {dtype=f64}
  %3 = cast(%2) {dtype=f32}
  return %3
}
)");
  const auto *r3 = m.find("main")->body()->as<CallNode>();
  const auto *r2 = r3->args()[0]->as<CallNode>();
  const auto *r1 = r2->args()[0]->as<CallNode>();
  const auto *r0 = r1->args()[0]->as<CallNode>();
  REQUIRE(std::holds_alternative<double>(*r0->attrs().find("alpha")));
  REQUIRE(r0->attrs().getFloat("alpha") == 1.0);
  REQUIRE(std::holds_alternative<std::vector<double>>(*r1->attrs().find("scales")));
  REQUIRE(r2->attrs().getDType("dtype") == DType::F64);
  std::string text = printModule(m);
  REQUIRE(text.find("leaky_relu(%x) {alpha=1.0} : f32[1, 1, 2, 2]") != std::string::npos);
  REQUIRE(text.find("mode=\"nearest\"") != std::string::npos);
  REQUIRE(text.find("scales=[]") != std::string::npos);
  REQUIRE(text.find("exclude_outside=false") != std::string::npos);
  REQUIRE(text.find("cubic_coeff_a=-0.75") != std::string::npos);
  REQUIRE(printModule(parseOk(text)) == text);

  Module m2 = parseOk(R"(
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 1, 4, 4] {
  %1 = resize2d(%x) {scales=[2, 2], size=[4, 4]}
  return %1
}
)");
  std::string t2 = printModule(m2);
  REQUIRE(t2.find("scales=[2.0, 2.0]") != std::string::npos);
}

TEST_CASE("literals: inline constants of every dtype", "[text]") {
  Module m = parseOk(R"(
def @main() -> (f32[4], f16[3], bf16[2], f64[3], i8[2], u8[2], i32[2], i64[2], bool[3], f32[], f32[0], f32[2]) {
  %a = constant f32[4] [0.1, 1, -2.5e-3, 3.4028235e+38]
  %b = constant f16[3] [0.1, 65504.0, -inf]
  %c = constant bf16[2] [0.1, 1e+30]
  %d = constant f64[3] [0.1, 1e-300, nan]
  %e = constant i8[2] [-128, 127]
  %f = constant u8[2] [0, 255]
  %g = constant i32[2] [-2147483648, 2147483647]
  %h = constant i64[2] [-9223372036854775808, 9223372036854775807]
  %i = constant bool[3] [true, false, true]
  %j = constant f32[] [7.0]
  %k = constant f32[0] []
  %l = constant f32[2] [16777216.0, 1e-45]
  %t = tuple(%a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l)
  return %t
}
)");
  std::string text = printModule(m);
  // Shortest round-trip forms of the stored values.
  CHECK(text.find("%a = constant f32[4] [0.1, 1.0, -0.0025, 3.4028235e+38]") != std::string::npos);
  // f16 0.1 is 0.0999755859375 (0x2e66), bf16 0.1 is 0.10009765625 (0x3dcd),
  // bf16 1e30 is 1.0002555517e+30 (0x714a); printed as the shortest float text.
  CHECK(text.find("%b = constant f16[3] [0.099975586, 65504.0, -inf]") != std::string::npos);
  CHECK(text.find("%c = constant bf16[2] [0.100097656, 1.00025555e+30]") != std::string::npos);
  CHECK(text.find("%d = constant f64[3] [0.1, 1e-300, nan]") != std::string::npos);
  CHECK(text.find("%e = constant i8[2] [-128, 127]") != std::string::npos);
  CHECK(text.find("%f = constant u8[2] [0, 255]") != std::string::npos);
  CHECK(text.find("%g = constant i32[2] [-2147483648, 2147483647]") != std::string::npos);
  CHECK(text.find("%h = constant i64[2] [-9223372036854775808, 9223372036854775807]") !=
        std::string::npos);
  CHECK(text.find("%i = constant bool[3] [true, false, true]") != std::string::npos);
  CHECK(text.find("%j = constant f32[] [7.0]") != std::string::npos);
  CHECK(text.find("%k = constant f32[0] []") != std::string::npos);
  CHECK(text.find("%l = constant f32[2] [16777216.0, 1e-45]") != std::string::npos);
  Module back = parseOk(text);
  REQUIRE(printModule(back) == text);
  REQUIRE(structuralEqual(m, back));
  // Values as stored.
  const auto *t = m.find("main")->body()->as<TupleNode>();
  auto data = [&](int i) { return t->fields()[size_t(i)]->as<ConstantNode>()->data(); };
  REQUIRE(data(0).data<float>()[0] == 0.1f);
  REQUIRE(data(0).data<float>()[2] == -2.5e-3f);
  REQUIRE(data(1).data<uint16_t>()[0] == 0x2e66); // f16 0.1
  REQUIRE(data(1).data<uint16_t>()[2] == 0xfc00); // f16 -inf
  REQUIRE(data(2).data<uint16_t>()[0] == 0x3dcd); // bf16 0.1
  REQUIRE(data(3).data<double>()[1] == 1e-300);
  REQUIRE(std::isnan(data(3).data<double>()[2]));
  REQUIRE(data(7).data<int64_t>()[0] == std::numeric_limits<int64_t>::min());
  REQUIRE(data(8).data<uint8_t>()[1] == 0);
  REQUIRE(data(11).data<float>()[1] == std::numeric_limits<float>::denorm_min());
}

TEST_CASE("literals: i16, u16, u32 and u64 constants round-trip", "[text]") {
  Module m = parseOk(R"(
def @main() -> (i16[2], u16[2], u32[2], u64[2]) {
  %a = constant i16[2] [-32768, 32767]
  %b = constant u16[2] [0, 65535]
  %c = constant u32[2] [0, 4294967295]
  %d = constant u64[2] [0, 9223372036854775807]
  %t = tuple(%a, %b, %c, %d)
  return %t
}
)");
  std::string text = printModule(m);
  CHECK(text.find("%a = constant i16[2] [-32768, 32767]") != std::string::npos);
  CHECK(text.find("%b = constant u16[2] [0, 65535]") != std::string::npos);
  CHECK(text.find("%c = constant u32[2] [0, 4294967295]") != std::string::npos);
  CHECK(text.find("%d = constant u64[2] [0, 9223372036854775807]") != std::string::npos);
  Module back = parseOk(text);
  REQUIRE(printModule(back) == text);
  REQUIRE(structuralEqual(m, back));
  const auto *t = back.find("main")->body()->as<TupleNode>();
  auto data = [&](int i) { return t->fields()[size_t(i)]->as<ConstantNode>()->data(); };
  REQUIRE(data(0).data<int16_t>()[0] == -32768);
  REQUIRE(data(1).data<uint16_t>()[1] == 65535);
  REQUIRE(data(2).data<uint32_t>()[1] == 4294967295u);
  REQUIRE(data(3).data<uint64_t>()[1] == uint64_t(std::numeric_limits<int64_t>::max()));
  // u64 prints and parses its whole range.
  Module u = parseOk("def @main() -> u64[2] {\n  %c = constant u64[2] [9223372036854775808, "
                     "18446744073709551615]\n  return %c\n}\n");
  CHECK(printModule(u).find("constant u64[2] [9223372036854775808, 18446744073709551615]") !=
        std::string::npos);
  // u64 values >= 2^63 survive print and parse, inline and as hex.
  for (int64_t n : {2, 17}) {
    INFO(n << " elements");
    Tensor big(DType::U64, {n});
    for (int64_t i = 0; i < n; ++i)
      big.setUInt(i, std::numeric_limits<uint64_t>::max() - uint64_t(i));
    Module bm = singleFunction({}, makeConstant(big));
    Module bback = parseOk(printModule(bm));
    REQUIRE(bback.find("main")->body()->as<ConstantNode>()->data().bitwiseEqual(big));
  }
}

TEST_CASE("literals: large constants print as hex, for every dtype", "[text]") {
  // 17 elements > kInlineConstantLimit.
  REQUIRE(kInlineConstantLimit == 16);
  std::vector<Expr> fields;
  std::vector<Type> types;
  for (DType dt : kAllDTypes) {
    Tensor t(dt, {17});
    uint8_t *p = t.bytes();
    for (size_t i = 0; i < t.nbytes(); ++i)
      p[i] = uint8_t(i * 37 + 11); // arbitrary bytes, including NaN patterns
    if (dt == DType::Bool)
      for (size_t i = 0; i < t.nbytes(); ++i)
        p[i] = i % 3 == 0;
    fields.push_back(makeConstant(t));
  }
  Module m = singleFunction({}, makeTuple(fields));
  std::string text = printModule(m);
  Module back = parseOk(text);
  REQUIRE(printModule(back) == text);
  const auto *t = back.find("main")->body()->as<TupleNode>();
  for (size_t i = 0; i < fields.size(); ++i) {
    INFO("dtype " << dtypeName(kAllDTypes[i]));
    REQUIRE(t->fields()[i]->as<ConstantNode>()->data().bitwiseEqual(
        fields[i]->as<ConstantNode>()->data()));
  }
  // The exact hex of a known value: f32 1.0 is 0x3f800000, little endian.
  std::vector<double> ones(17, 1.0);
  Module one = singleFunction({}, makeConstant(Tensor::fromDoubles(DType::F32, {17}, ones), "w"));
  std::string hex;
  for (int i = 0; i < 17; ++i)
    hex += "0000803f";
  REQUIRE(printModule(one) == "module @m\n"
                              "\n"
                              "def @main() -> f32[17] {\n"
                              "  %w = constant f32[17] 0x" + hex + "\n"
                              "  return %w\n"
                              "}\n");
  // 16 elements still print inline; the parser accepts hex and lists at any size.
  Module small = parseOk("def @main() -> i32[2] {\n  %c = constant i32[2] 0x01000000FFFFFFFF\n  return %c\n}\n");
  REQUIRE(printModule(small).find("%c = constant i32[2] [1, -1]") != std::string::npos);
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

TEST_CASE("parser: the example from the format description", "[text]") {
  std::string big = "0x";
  for (int i = 0; i < 4 * 3 * 3 * 3; ++i)
    big += "0000803f";
  std::string text = R"(module @tiny
# comments run from '#' to end of line; blank lines are ignored
def @main(%x: f32[1, 3, 8, 8], %w: f32[4, 3, 3, 3]) -> (f32[1, 2, 6, 6], f32[1, 4, 6, 6]) attributes {global_symbol="main"} {
  %0 = conv2d(%x, %w) {pads=[0, 0, 0, 0], strides=[1, 1]} : f32[1, 4, 6, 6]
  %1 = relu(%0) : f32[1, 4, 6, 6]
  %c = constant f32[4, 1, 1] [0.5, 1.0, -2.0, 3.25]
  %big = constant f32[4, 3, 3, 3] )" + big + R"(   # hex of the raw bytes
  %b2 = conv2d(%x, %big) : f32[1, 4, 6, 6]
  %2 = multiply(%1, %c) : f32[1, 4, 6, 6]
  %s2 = add(%2, %b2)
  %3 = @helper(%s2) : f32[1, 4, 6, 6]                       # call of a global function
  %4 = split(%3) {axis=1, sizes=[2, 2]} : (f32[1, 2, 6, 6], f32[1, 2, 6, 6])
  %5 = %4.1 : f32[1, 2, 6, 6]                              # tuple get item
  %f = fn(%a: f32[1, 4, 6, 6]) -> f32[1, 4, 6, 6] attributes {Composite="dnnl.relu"} {
    %r = relu(%a) : f32[1, 4, 6, 6]
    return %r
  }
  %7 = %f(%3) : f32[1, 4, 6, 6]                           # call of a local function value
  %6 = tuple(%5, %7) : (f32[1, 2, 6, 6], f32[1, 4, 6, 6])
  return %6
}

def @helper(%y: f32[1, 4, 6, 6]) -> f32[1, 4, 6, 6] {
  %0 = relu(%y) : f32[1, 4, 6, 6]
  return %0
}
)";
  Module m = parseOk(text);
  REQUIRE(m.name() == "tiny");
  REQUIRE(m.size() == 2);
  REQUIRE(m.functions()[0].first == "main");
  REQUIRE(m.functions()[1].first == "helper");
  const Function &main = m.find("main");
  REQUIRE(main->attrs().getString("global_symbol") == "main");
  REQUIRE(main->params()[1]->name() == "w");
  REQUIRE(main->params()[1]->span().line == 3);
  REQUIRE(main->params()[1]->span().col == 32);
  const ExprNode *body = main->body().get();
  REQUIRE(body->name() == "6");
  REQUIRE(body->span().line == 19);
  REQUIRE(body->span().col == 3);
  requireRoundTrip(m);
  std::string printed = printModule(m);
  REQUIRE(printed.find("%big = constant f32[4, 3, 3, 3] 0x0000803f0000803f") != std::string::npos);
  REQUIRE(printed.find("  %3 = @helper(%s2) : f32[1, 4, 6, 6]\n") != std::string::npos);
}

TEST_CASE("parser: optional types, whitespace, forward global references", "[text]") {
  Module m = parseOk("\n\n   def @main(%x: f32[2]) -> f32[2] {   # c\n\n"
                     "\t%a   =   relu( %x )\n"
                     "  %b = relu(%a) :f32[2]\r\n"
                     "  return %b\n"
                     "}");
  REQUIRE(m.name() == "module");
  REQUIRE(m.size() == 1);
  REQUIRE(m.find("main")->body()->name() == "b");
  REQUIRE(parseError("def @main(%x: f32[2]) -> f32[2] {\n  %a = @later(%x)\n  return %a\n}\n"
                     "def @later(%y: f32[2]) -> f32[2] {\n  return %y\n}\n") == "<no error>");
}

TEST_CASE("parser: a 100,000-node chain prints and parses without recursion", "[text]") {
  constexpr int kN = 100000;
  Var x = makeVar("x", t32({1, 8}));
  Expr e = x;
  for (int i = 0; i < kN; ++i)
    e = expectOk(makeCall("relu", {e}));
  Module m = singleFunction({x}, e);
  e.reset();
  // Speed is measured by bench/bench_ir, not here.
  std::string text = printModule(m);
  Module back = parseOk(text);
  std::string again = printModule(back);
  REQUIRE(again == text);
  REQUIRE(text.find("  %99999 = relu(%99998) : f32[1, 8]\n  return %99999\n") != std::string::npos);
}

TEST_CASE("parser: deeply nested fn blocks and types are capped", "[text]") {
  std::string type;
  for (int i = 0; i < 100; ++i)
    type += "(";
  type += "f32[1]";
  for (int i = 0; i < 100; ++i)
    type += ",)";
  REQUIRE(parseError("def @main(%x: " + type + ") -> f32[1] {\n}\n") ==
          "t.tir:1:80: types nested deeper than 64 levels");

  std::string text = "def @main(%x: f32[1]) -> f32[1] {\n";
  for (int i = 0; i < 70; ++i)
    text += "%f" + std::to_string(i) + " = fn(%y: f32[1]) -> f32[1] {\n";
  REQUIRE(parseError(text) == "t.tir:66:33: functions nested deeper than 64 levels");
  std::string nested = "def @main(%x: f32[1]) -> f32[1] {\n"
                       "  %f = fn(%y: f32[1]) -> f32[1] {\n"
                       "    %g = fn(%z: f32[1]) -> f32[1] {\n"
                       "      %r = relu(%z)\n"
                       "      return %r\n"
                       "    }\n"
                       "    %c = %g(%y)\n"
                       "    return %c\n"
                       "  }\n"
                       "  %d = %f(%x)\n"
                       "  return %d\n"
                       "}\n";
  Module m = parseOk(nested);
  requireRoundTrip(m);
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

namespace {
/// A module whose third line is `line3` (and whose 4th is `line4`).
std::string withLines(const std::string &line3, const std::string &line4 = "  return %0") {
  return "module @m\ndef @main(%x: f32[2], %y: f32[3]) -> f32[2] {\n" + line3 + "\n" + line4 +
         "\n}\n";
}
} // namespace

TEST_CASE("diagnostics: exact positions and messages", "[text]") {
  CHECK(parseError(withLines("  %0 = relu(%x {a=1} : f32[2]")) ==
        "t.tir:3:16: expected ')' after call arguments, found '{'");
  CHECK(parseError(withLines("  %0 = reluu(%x) : f32[2]")) == "t.tir:3:8: unknown op 'reluu'");
  CHECK(parseError(withLines("  %0 = relu(%x) : f32[2]", "  %1 = relu(%9) : f32[2]")) ==
        "t.tir:4:13: use of undefined value '%9'");
  CHECK(parseError(withLines("  %0 = relu(%x) : f32[2]", "  %0 = relu(%0) : f32[2]")) ==
        "t.tir:4:3: redefinition of value '%0'");
  CHECK(parseError(withLines("  %x = relu(%x)")) == "t.tir:3:3: redefinition of value '%x'");
  CHECK(parseError(withLines("  %0 = relu(%x) : f32[3]")) ==
        "t.tir:3:19: declared type f32[3] does not match inferred type f32[2]");
  CHECK(parseError(withLines("  %c = constant f32[2, 2] [1.0, 2.0, 3.0]")) ==
        "t.tir:3:27: constant f32[2, 2] needs 4 values, got 3");
  CHECK(parseError(withLines("  %c = constant f32[1] 0x000")) ==
        "t.tir:3:24: constant f32[1] needs 4 bytes (8 hex digits), got 3 hex digits");
  CHECK(parseError(withLines("  %c = constant f32[1] 0x0000zz3f")) ==
        "t.tir:3:30: invalid hex digit 'z'");
  CHECK(parseError(withLines("  %c = constant i64[1] [99999999999999999999]")) ==
        "t.tir:3:25: integer '99999999999999999999' is out of range");
  CHECK(parseError(withLines("  %c = constant u8[2] [1, 300]")) ==
        "t.tir:3:27: value 300 is out of range for u8");
  CHECK(parseError(withLines("  %c = constant i16[1] [-32769]")) ==
        "t.tir:3:25: value -32769 is out of range for i16");
  CHECK(parseError(withLines("  %c = constant u16[1] [65536]")) ==
        "t.tir:3:25: value 65536 is out of range for u16");
  CHECK(parseError(withLines("  %c = constant u32[1] [-1]")) ==
        "t.tir:3:25: value -1 is out of range for u32");
  CHECK(parseError(withLines("  %c = constant u64[1] [18446744073709551616]")) ==
        "t.tir:3:25: value 18446744073709551616 is out of range for u64");
  CHECK(parseError(withLines("  %c = constant u64[1] [-1]")) ==
        "t.tir:3:25: value -1 is out of range for u64");
  CHECK(parseError(withLines("  %c = constant f32[1] [1e999]")) ==
        "t.tir:3:25: number '1e999' is out of range");
  CHECK(parseError(withLines("  %c = constant bool[1] [1]")) ==
        "t.tir:3:26: expected 'true' or 'false' in bool constant, found '1'");
  CHECK(parseError(withLines("  %0 = relu(%x) \x01")) == "t.tir:3:17: unexpected character '\\x01'");
  CHECK(parseError(withLines("  %0 = relu(%x) \xff\xfe")) == "t.tir:3:17: unexpected character '\\xff'");
  CHECK(parseError(withLines("  %0 = @nothere(%x) : f32[2]")) ==
        "t.tir:3:8: call of undefined global '@nothere'");
  CHECK(parseError(withLines("  %0 = @main(%y, %y)")) ==
        "t.tir:3:3: argument 0 of @main has type f32[3], expected f32[2]");
  CHECK(parseError(withLines("  %0 = relu(%x) {foo=1}")) ==
        "t.tir:3:3: relu: unknown attribute 'foo' (expected one of: none)");
  CHECK(parseError(withLines("  %0 = split(%x) {sizes=1}")) ==
        "t.tir:3:3: split: attribute 'sizes' must be int list, got int 1");
  CHECK(parseError(withLines("  %0 = relu(%x) {a=1, a=2}")) == "t.tir:3:23: duplicate attribute 'a'");
  CHECK(parseError(withLines("  %0 = add(%x, %y)")).starts_with("t.tir:3:3: add: "));
  CHECK(parseError(withLines("  %0 = relu(%x)", "  return %y")) ==
        "t.tir:4:10: returned value has type f32[3], but the function declares f32[2]");
  CHECK(parseError(withLines("  %0 = %x.0")) ==
        "t.tir:3:3: cannot take field 0 of non-tuple type f32[2]");
  CHECK(parseError(withLines("  %0 = %x(%x)")) == "t.tir:3:3: callee is not a function (type f32[2])");
  CHECK(parseError(withLines("  %0 = relu(%x) : f32[2] %1")) ==
        "t.tir:3:26: expected end of line after value definition, found '%1'");
  CHECK(parseError(withLines("  %0 = relu(%x)", "  return %0 }")) ==
        "t.tir:4:13: expected end of line after return value, found '}'");
  CHECK(parseError(withLines("  %0 = relu(%x", "  return %0")) ==
        "t.tir:3:15: expected ')' after call arguments, found end of line");
  CHECK(parseError(withLines("  %0 = relu(%x) : f33[2]")) == "t.tir:3:19: unknown dtype 'f33'");
  CHECK(parseError(withLines("  %0 = relu(%x) : f32[-1]")) ==
        "t.tir:3:23: dimension must be non-negative, got -1");
  CHECK(parseError(withLines("  %0 = relu(%x) : f32[1000000000, 1000000000]")) ==
        "t.tir:3:35: tensor type has too many elements");
  CHECK(parseError(withLines("  %0 = 12")) ==
        "t.tir:3:8: expected op name, '@global', '%value', 'constant', 'tuple' or 'fn' after "
        "'=', found '12'");
  CHECK(parseError(withLines("  %0 = relu(%x) {s=\"abc}")) == "t.tir:3:20: unterminated string");
  CHECK(parseError(withLines("  %0 = relu(%x) {s=\"a\\qb\"}")) ==
        "t.tir:3:20: invalid escape '\\q' in string");
  CHECK(parseError(withLines("  %0 = relu(% x)")) == "t.tir:3:13: expected name after '%'");
  CHECK(parseError(withLines("  %0 = relu(%x) : f32[1x2]")) == "t.tir:3:23: invalid number '1x2'");
  CHECK(parseError(withLines("  %0 = %x.99999999999")) ==
        "t.tir:3:11: tuple index 99999999999 is out of range");
}

TEST_CASE("diagnostics: structure of functions and modules", "[text]") {
  // Truncated files.
  CHECK(parseError("def @main(%x: f32[2]) -> f32[2] {\n  %0 = relu(%x) : f32[2]\n") ==
        "t.tir:3:1: expected value definition or 'return', found end of file");
  CHECK(parseError("def @main(%x: f32[2") == "t.tir:1:20: expected ',' or ']' in shape, found end of file");
  CHECK(parseError("def @main(%x: f32[2]) -> f32[2] {\n  return %x\n") ==
        "t.tir:3:1: expected '}' after return, found end of file");
  CHECK(parseError("def") == "t.tir:1:4: expected '@name' after 'def', found end of file");
  // Missing return.
  CHECK(parseError("def @main(%x: f32[2]) -> f32[2] {\n}\n") ==
        "t.tir:2:1: expected value definition or 'return', found '}'");
  CHECK(parseError("def @main(%x: f32[2]) -> f32[2] { return %x }\n") ==
        "t.tir:1:35: expected end of line after '{', found 'return'");
  CHECK(parseError("def @main(%x: f32[2]) {\n  return %x\n}\n") ==
        "t.tir:1:23: expected '->' and result type after parameters, found '{'");
  CHECK(parseError("def @main(%x: f32[2], %x: f32[2]) -> f32[2] {\n  return %x\n}\n") ==
        "t.tir:1:23: redefinition of value '%x'");
  CHECK(parseError("def @f(%x: f32[2]) -> f32[2] {\n  return %x\n}\n"
                   "def @f(%x: f32[2]) -> f32[2] {\n  return %x\n}\n") ==
        "t.tir:4:5: redefinition of global '@f'");
  CHECK(parseError("module @a\nmodule @b\n") == "t.tir:2:1: expected 'def', found 'module'");
  CHECK(parseError("module m\n") == "t.tir:1:8: expected '@name' after 'module', found 'm'");
  CHECK(parseError("foo\n") == "t.tir:1:1: expected 'def', found 'foo'");
  // A nested fn sees only its own values.
  CHECK(parseError("def @main(%x: f32[2]) -> f32[2] {\n"
                   "  %f = fn(%a: f32[2]) -> f32[2] {\n"
                   "    %r = add(%a, %x)\n"
                   "    return %r\n"
                   "  }\n"
                   "  %o = %f(%x)\n"
                   "  return %o\n"
                   "}\n") == "t.tir:3:18: value '%x' is defined outside the function");
  // A header error after a caller: reported as such, not as an undefined global.
  CHECK(parseError("def @main(%x: f32[2]) -> f32[2] {\n  %a = @g(%x)\n  return %a\n}\n"
                   "def @g(%y: f32[2) -> f32[2] {\n  return %y\n}\n") ==
        "t.tir:5:17: expected ',' or ']' in shape, found ')'");
  CHECK(parseError("def @main(%x: f32[2]) -> f32[2] {\n  %a = @g(%x)\n  return %a\n}\n"
                   "garbage\n") == "t.tir:5:1: expected 'def', found 'garbage'");
}

TEST_CASE("diagnostics: parseModuleFile names the file", "[text]") {
  auto m = parseModuleFile("/nonexistent/dir/x.tir");
  REQUIRE(!m.ok());
  REQUIRE(m.error().str() == "/nonexistent/dir/x.tir: cannot open the file (no such file)");
}

TEST_CASE("robustness: truncations and mutations never crash", "[text]") {
  Var x = makeVar("x", t32({1, 2}));
  Expr s = expectOk(makeCall("split", {x}, {{"axis", int64_t(1)}, {"sizes", std::vector<int64_t>{1, 1}}}));
  Expr g = expectOk(makeTupleGetItem(s, 0, "g \"q\""));
  Var a = makeVar("a", t32({1, 1}));
  Function f = makeFunction({a}, expectOk(makeCall("leaky_relu", {a}, {{"alpha", 0.25}})), {{"Composite", std::string("x")}});
  Expr call = expectOk(makeLocalCall(f, {g}));
  Expr c = makeConstant(f32({1, 1}, {1.5}));
  Expr big = makeConstant(Tensor(DType::F32, {1, 17}));
  Expr t = makeTuple({expectOk(makeCall("add", {call, c})), big});
  Module m("fuzz");
  m.set("main", makeFunction({x}, t));
  const std::string text = printModule(m);
  requireRoundTrip(m);
  for (size_t n = 0; n < text.size(); ++n) {
    auto r = parseModule(std::string_view(text).substr(0, n), "t.tir");
    if (r.ok())
      (void)printModule(*r);
    else
      REQUIRE(r.error().str().starts_with("t.tir:"));
  }
  std::mt19937 rng(1234);
  const char junk[] = {'\0', '\n', '(', ')', '{', '}', '[', ']', ',', ':', '=', '%', '@', '"',
                       '\\', '#', '.', '-', '0', '9', 'x', 'e', '\xff', '\x80', ' ', '>'};
  for (int iter = 0; iter < 3000; ++iter) {
    std::string mutated = text;
    int edits = 1 + int(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      size_t pos = rng() % mutated.size();
      switch (rng() % 3) {
      case 0: mutated[pos] = junk[rng() % sizeof(junk)]; break;
      case 1: mutated.erase(pos, 1 + rng() % 8); break;
      default: mutated.insert(pos, 1, junk[rng() % sizeof(junk)]); break;
      }
      if (mutated.empty())
        mutated = "x";
    }
    auto r = parseModule(mutated, "t.tir");
    if (r.ok()) {
      // Whatever parses must print and reparse to the same text.
      std::string p1 = printModule(*r);
      auto r2 = parseModule(p1, "t.tir");
      INFO(mutated);
      REQUIRE(r2.ok());
      REQUIRE(printModule(*r2) == p1);
    } else {
      REQUIRE(r.error().str().starts_with("t.tir:"));
    }
  }
}
