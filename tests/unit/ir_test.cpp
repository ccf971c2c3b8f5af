//===- tests/unit/ir_test.cpp - IR nodes, types, tensors, attributes -----===//
#include "test_util.h"

#include "ir/module.h"
#include "ir/structural.h"
#include "ir/visit.h"

#include <limits>
#include <thread>

using namespace tessera;
using namespace tessera::ir;
using tessera::test::f32;

TEST_CASE("dtype names and sizes round-trip", "[ir][dtype]") {
  for (DType t : kAllDTypes) {
    REQUIRE(parseDType(dtypeName(t)) == t);
    REQUIRE(fromDLDataType(toDLDataType(t)) == t);
  }
  REQUIRE(dtypeSize(DType::BF16) == 2);
  REQUIRE(dtypeSize(DType::I64) == 8);
  REQUIRE_FALSE(parseDType("f8").has_value());
  // i16, u16, u32, u64: names, sizes, classes and DLPack codes.
  REQUIRE(parseDType("i16") == DType::I16);
  REQUIRE(parseDType("u16") == DType::U16);
  REQUIRE(parseDType("u32") == DType::U32);
  REQUIRE(parseDType("u64") == DType::U64);
  REQUIRE(dtypeSize(DType::I16) == 2);
  REQUIRE(dtypeSize(DType::U16) == 2);
  REQUIRE(dtypeSize(DType::U32) == 4);
  REQUIRE(dtypeSize(DType::U64) == 8);
  for (DType t : kAllDTypes) {
    INFO(dtypeName(t));
    REQUIRE(isInteger(t) == (isSignedInteger(t) || isUnsignedInteger(t)));
    REQUIRE_FALSE((isSignedInteger(t) && isUnsignedInteger(t)));
    REQUIRE(int(isFloat(t)) + int(isInteger(t)) + int(isBool(t)) == 1);
  }
  REQUIRE(isSignedInteger(DType::I16));
  REQUIRE(isUnsignedInteger(DType::U8));
  REQUIRE(isUnsignedInteger(DType::U64));
  REQUIRE_FALSE(isSignedInteger(DType::U32));
  DLDataType u32 = toDLDataType(DType::U32);
  REQUIRE((u32.code == kDLUInt && u32.bits == 32 && u32.lanes == 1));
  DLDataType i16 = toDLDataType(DType::I16);
  REQUIRE((i16.code == kDLInt && i16.bits == 16));
  REQUIRE(fromDLDataType({kDLUInt, 64, 1}) == DType::U64);
  REQUIRE(fromDLDataType({kDLUInt, 16, 1}) == DType::U16);
  REQUIRE_FALSE(fromDLDataType({kDLUInt, 16, 2}).has_value());
}

TEST_CASE("half and bfloat16 conversions round to nearest even", "[ir][dtype]") {
  REQUIRE(halfToFloat(floatToHalf(1.0f)) == 1.0f);
  REQUIRE(halfToFloat(floatToHalf(65504.0f)) == 65504.0f);
  REQUIRE(std::isinf(halfToFloat(floatToHalf(65520.0f))));
  // 1 + 2^-11 is exactly between 1 and the next half (1 + 2^-10): ties to even -> 1.
  REQUIRE(halfToFloat(floatToHalf(1.0f + 0x1p-11f)) == 1.0f);
  // 1 + 3*2^-11 is between 1+2^-10 and 1+2^-9: ties to even -> 1 + 2^-9.
  REQUIRE(halfToFloat(floatToHalf(1.0f + 3 * 0x1p-11f)) == 1.0f + 0x1p-9f);
  // Smallest subnormal half.
  REQUIRE(halfToFloat(floatToHalf(0x1p-24f)) == 0x1p-24f);
  REQUIRE(halfToFloat(0x0001) == 0x1p-24f);
  REQUIRE(std::isnan(halfToFloat(floatToHalf(NAN))));
  REQUIRE(bfloat16ToFloat(floatToBfloat16(1.0f)) == 1.0f);
  // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even -> 1.
  REQUIRE(bfloat16ToFloat(floatToBfloat16(1.0f + 0x1p-8f)) == 1.0f);
  REQUIRE(std::isnan(bfloat16ToFloat(floatToBfloat16(NAN))));
}

TEST_CASE("types print, compare and hash structurally", "[ir][type]") {
  Type a = Type::tensor(DType::F32, {1, 3});
  Type b = Type::tensor(DType::F32, {1, 3});
  Type c = Type::tensor(DType::F16, {1, 3});
  REQUIRE(a == b);
  REQUIRE(a.hash() == b.hash());
  REQUIRE(a != c);
  REQUIRE(a.str() == "f32[1, 3]");
  REQUIRE(Type::tensor(DType::Bool, {}).str() == "bool[]");
  REQUIRE(Type::tuple({a, c}).str() == "(f32[1, 3], f16[1, 3])");
  REQUIRE(Type::tuple({a}).str() == "(f32[1, 3],)");
  REQUIRE(Type().str() == "()");
  REQUIRE(Type::func({a}, c).str() == "fn(f32[1, 3]) -> f16[1, 3]");
  REQUIRE(Type::tuple({a, c}) == Type::tuple({b, c}));
  REQUIRE(Type::tuple({a, c}) != Type::tuple({c, a}));
  REQUIRE(a.numElements() == 3);
}

TEST_CASE("checkShape bounds every dim and the element count", "[ir][type]") {
  CHECK(checkShape(Shape{}).ok());
  CHECK(checkShape(Shape{2, 0, 3}).ok());
  CHECK(checkShape(Shape{kMaxElements}).ok());
  CHECK(checkShape(Shape{int64_t(1) << 24, int64_t(1) << 24}).ok());
  CHECK(checkShape(Shape{2, -1}).error().str() == "shape [2, -1]: dim 1 is negative");
  CHECK(checkShape(Shape{kMaxElements + 1}).error().str() ==
        "shape [281474976710657] has more than 2^48 elements");
  // A zero dim does not make room for a huge one: sizes of the other dims
  // (strides) are still computed.
  CHECK(!checkShape(Shape{0, int64_t(1) << 62}).ok());
  CHECK(!checkShape(Shape{int64_t(1) << 24, int64_t(1) << 24, 2}).ok());
  Type big = Type::tensor(DType::F32, {int64_t(1) << 40, int64_t(1) << 10});
  CHECK(checkShapes(Type::tuple({Type::tensor(DType::F32, {2}), big})).error().str() ==
        "shape [1099511627776, 1024] has more than 2^48 elements");
  CHECK(!checkShapes(Type::func({big}, Type())).ok());
  CHECK(checkShapes(Type::func({Type::tensor(DType::F32, {2})}, Type())).ok());
}

TEST_CASE("an op whose result type is too large for sizes is an error", "[ir][type]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2, 1}));
  auto ok = makeCall("expand", {x}, {{"shape", std::vector<int64_t>{2, 8}}});
  REQUIRE(ok.ok());
  auto big = makeCall("expand", {x}, {{"shape", std::vector<int64_t>{2, int64_t(1) << 48}}});
  REQUIRE(!big.ok());
  CHECK(big.error().str() == "expand: result type f32[2, 281474976710656]: shape [2, "
                             "281474976710656] has more than 2^48 elements");
}

TEST_CASE("types are uniqued, also when made on several threads at once", "[ir][type]") {
  // Equal types made apart are one type: equality is identity, so a type
  // made twice must come back as the same representation.
  REQUIRE(Type::tensor(DType::F32, {7, 9}) == Type::tensor(DType::F32, {7, 9}));
  REQUIRE(Type::tensor(DType::F32, {7, 9}) != Type::tensor(DType::F32, {9, 7}));
  REQUIRE(Type::tensor(DType::I64, {}) != Type::tensor(DType::F32, {}));
  REQUIRE(Type::tuple({}) == Type());
  Type f = Type::func({Type::tensor(DType::F32, {2})}, Type::tuple({Type::tensor(DType::I8, {3})}));
  REQUIRE(f == Type::func({Type::tensor(DType::F32, {2})},
                          Type::tuple({Type::tensor(DType::I8, {3})})));
  REQUIRE(f != Type::func({Type::tensor(DType::F32, {2})}, Type::tensor(DType::I8, {3})));

  // Two threads make the same types in opposite orders, racing to insert
  // each first: both must end up with the same types.
  constexpr int kN = 2000;
  auto make = [](bool reverse) {
    std::vector<Type> out(kN);
    for (int k = 0; k < kN; ++k) {
      int i = reverse ? kN - 1 - k : k;
      out[size_t(i)] = Type::tuple({Type::tensor(DType::F32, {i, 1000 + i}),
                                    Type::tensor(DType::I32, {i})});
    }
    return out;
  };
  std::vector<Type> a, b;
  std::thread t1([&] { a = make(false); });
  std::thread t2([&] { b = make(true); });
  t1.join();
  t2.join();
  for (int i = 0; i < kN; ++i) {
    REQUIRE(a[size_t(i)] == b[size_t(i)]);
    REQUIRE(a[size_t(i)].fields()[0].shape() == Shape{i, 1000 + i});
  }
  REQUIRE(a[0] != a[1]);
}

TEST_CASE("tensors convert elements through double and int64", "[ir][tensor]") {
  Tensor t(DType::I8, {4});
  t.setDouble(0, 300.0); // saturates instead of wrapping (no UB)
  t.setDouble(1, -2.9);  // truncates toward zero
  t.setInt(2, 5);
  REQUIRE(t.getInt(0) == 127);
  REQUIRE(t.getInt(1) == -2);
  REQUIRE(t.getDouble(2) == 5.0);
  Tensor h = Tensor::fromDoubles(DType::F16, {2}, std::vector<double>{0.5, -3.0});
  REQUIRE(h.toDoubles() == std::vector<double>{0.5, -3.0});
  Tensor b = Tensor::fromInts(DType::Bool, {3}, std::vector<int64_t>{0, 7, -1});
  REQUIRE(b.toInts() == std::vector<int64_t>{0, 1, 1});
  REQUIRE(reinterpret_cast<uintptr_t>(t.bytes()) % 64 == 0);
}

TEST_CASE("tensors of i16, u16, u32, u64 wrap, saturate and keep u64 exact", "[ir][tensor]") {
  // setInt wraps to the dtype, setDouble saturates (and truncates).
  Tensor s(DType::I16, {3});
  s.setInt(0, 40000); // 40000 - 65536
  s.setDouble(1, -1e9);
  s.setDouble(2, 7.9);
  REQUIRE(s.toInts() == std::vector<int64_t>{-25536, -32768, 7});
  Tensor u16(DType::U16, {3});
  u16.setInt(0, -1);
  u16.setDouble(1, 1e9);
  u16.setDouble(2, -3.0);
  REQUIRE(u16.toInts() == std::vector<int64_t>{65535, 65535, 0});
  Tensor u32(DType::U32, {2});
  u32.setInt(0, -1);
  u32.setDouble(1, 3e9);
  REQUIRE(u32.toInts() == std::vector<int64_t>{4294967295, 3000000000});
  REQUIRE(u32.getDouble(0) == 4294967295.0);
  // u64: getInt/setInt carry the bit pattern, getUInt/setUInt the value.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  Tensor u64(DType::U64, {4});
  u64.setUInt(0, kMax);
  u64.setInt(1, -2); // 2^64 - 2
  u64.setDouble(2, 1e30); // saturates
  u64.setDouble(3, 9223372036854775808.0); // 2^63, exactly
  REQUIRE(u64.getUInt(0) == kMax);
  REQUIRE(u64.getInt(0) == -1);
  REQUIRE(u64.getUInt(1) == kMax - 1);
  REQUIRE(u64.getUInt(2) == kMax);
  REQUIRE(u64.getUInt(3) == uint64_t(1) << 63);
  REQUIRE(u64.getDouble(0) == 18446744073709551616.0);
  REQUIRE(u64.getDouble(3) == 9223372036854775808.0);
  REQUIRE(u64.data<uint64_t>()[1] == kMax - 1);
  // getUInt / setUInt on other dtypes: wrapped ints, saturated floats.
  REQUIRE(s.getUInt(0) == uint64_t(int64_t(-25536)));
  Tensor f(DType::F32, {2});
  f.setUInt(0, kMax);
  f.setDouble(1, -4.5);
  REQUIRE(f.getDouble(0) == 18446744073709551616.0);
  REQUIRE(f.getUInt(0) == kMax);
  REQUIRE(f.getUInt(1) == 0);
  Tensor b(DType::Bool, {1});
  b.setUInt(0, uint64_t(1) << 63);
  REQUIRE(b.getInt(0) == 1);
}

TEST_CASE("tensors copy strided DLTensors", "[ir][tensor]") {
  // A 2x3 view with column-major strides over {0,1,2,3,4,5}: element (i,j) = i + 2j.
  float data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3}, strides[2] = {1, 2};
  DLTensor dl{};
  dl.data = data;
  dl.device = {kDLCPU, 0};
  dl.ndim = 2;
  dl.dtype = {kDLFloat, 32, 1};
  dl.shape = shape;
  dl.strides = strides;
  Tensor t = Tensor::copyOf(dl);
  REQUIRE(t.toDoubles() == std::vector<double>{0, 2, 4, 1, 3, 5});
  DLTensor back = t.dl();
  REQUIRE(back.ndim == 2);
  REQUIRE(back.shape[1] == 3);
}

TEST_CASE("attributes stay sorted and print as in the IR", "[ir][attrs]") {
  Attrs a{{"strides", std::vector<int64_t>{2, 2}}, {"alpha", 0.5}, {"mode", std::string("edge")}};
  a.set("keepdims", true);
  a.set("dtype", DType::F16);
  REQUIRE(a.str() ==
          "{alpha=0.5, dtype=f16, keepdims=true, mode=\"edge\", strides=[2, 2]}");
  REQUIRE(a.getInts("strides") == std::vector<int64_t>{2, 2});
  REQUIRE(a.getFloat("alpha") == 0.5);
  REQUIRE(a.getFloat("missing", 7.0) == 7.0);
  Attrs b{{"alpha", 0.5}};
  REQUIRE_FALSE(a == b);
  REQUIRE(attrValueStr(AttrValue(1.0)) == "1.0");
  REQUIRE(attrValueStr(AttrValue(std::vector<double>{})) == "[]");
  REQUIRE(attrValueStr(AttrValue(std::string("a\"b"))) == "\"a\\\"b\"");
}

TEST_CASE("op attributes are normalised against the schema", "[ir][op]") {
  const Op *clip = OpRegistry::global().find("clip");
  REQUIRE(clip);
  auto ok = clip->normalizeAttrs(Attrs{{"min", int64_t(0)}});
  REQUIRE(ok.ok());
  REQUIRE(ok->getFloat("min") == 0.0); // an int where a float is declared
  REQUIRE(ok->has("max"));             // default filled
  auto bad = clip->normalizeAttrs(Attrs{{"minn", 0.0}});
  REQUIRE_FALSE(bad.ok());
  REQUIRE(bad.error().str() == "clip: unknown attribute 'minn' (expected one of: min, max)");
  auto kind = clip->normalizeAttrs(Attrs{{"min", std::string("x")}});
  REQUIRE(kind.error().str() == "clip: attribute 'min' must be float, got string \"x\"");
  REQUIRE(test::inferError("reshape", {Type::tensor(DType::F32, {2})}) ==
          "reshape: missing required attribute 'newshape' (int list)");
  REQUIRE(test::inferError("relu", {}) == "relu: expected 1 argument, got 0");
  REQUIRE(test::inferError("nonexistent", {}) == "unknown op 'nonexistent'");
}

TEST_CASE("every op has a schema, a relation and a kernel", "[ir][op]") {
  auto ops = OpRegistry::global().all();
  REQUIRE(ops.size() >= 60);
  for (const Op *op : ops) {
    INFO(op->name);
    REQUIRE(op->relation);
    REQUIRE(op->kernel);
    REQUIRE_FALSE(op->description.empty());
    REQUIRE((op->maxArgs == 0 || !op->argNames.empty())); // symbol_values takes none
  }
  for (const char *name :
       {"conv2d", "conv2d_transpose", "dense", "matmul", "batch_matmul", "bias_add", "add",
        "subtract", "multiply", "divide", "power", "maximum", "minimum", "sqrt", "exp", "log",
        "neg", "abs", "erf", "floor", "ceil", "round", "reciprocal", "relu", "leaky_relu",
        "sigmoid", "tanh", "hard_sigmoid", "hard_swish", "silu", "mish", "gelu", "clip", "softmax",
        "log_softmax", "batch_norm", "layer_norm", "max_pool2d", "avg_pool2d",
        "global_avg_pool2d", "global_max_pool2d", "reduce_sum", "reduce_mean", "reduce_max",
        "reduce_min", "reshape", "flatten", "transpose", "concat", "split", "slice", "squeeze",
        "unsqueeze", "pad", "resize2d", "cast", "where", "expand", "gather", "equal", "less",
        "greater"}) {
    INFO(name);
    REQUIRE(OpRegistry::global().find(name) != nullptr);
  }
}

namespace {
Expr chain(int n, Var x, const char *op = "relu") {
  Expr e = x;
  for (int i = 0; i < n; ++i)
    e = expectOk(makeCall(op, {e}));
  return e;
}
} // namespace

TEST_CASE("builders infer types and report op, attribute and shapes", "[ir][expr]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2, 3}));
  Var y = makeVar("y", Type::tensor(DType::F32, {3}));
  auto add = makeCall("add", {x, y});
  REQUIRE(add.ok());
  REQUIRE((*add)->type() == Type::tensor(DType::F32, {2, 3}));
  auto tup = makeTuple({x, *add});
  REQUIRE(tup->type() == Type::tuple({x->type(), (*add)->type()}));
  auto item = makeTupleGetItem(tup, 1);
  REQUIRE((*item)->type() == (*add)->type());
  auto bad = makeTupleGetItem(tup, 2);
  REQUIRE(bad.error().str() == "tuple field 2 is out of range for (f32[2, 3], f32[2, 3]) (2 fields)");
  auto badItem = makeTupleGetItem(x, 0);
  REQUIRE(badItem.error().str() == "cannot take field 0 of non-tuple type f32[2, 3]");
}

TEST_CASE("calls of global and local functions check their arguments", "[ir][expr]") {
  Type t = Type::tensor(DType::F32, {4});
  Var a = makeVar("a", t);
  Function fn = makeFunction({a}, expectOk(makeCall("relu", {a})), {{"Composite", std::string("x.relu")}});
  Var x = makeVar("x", t);
  auto local = makeLocalCall(fn, {x});
  REQUIRE(local.ok());
  REQUIRE((*local)->type() == t);
  REQUIRE((*local)->as<CallNode>()->args().size() == 1);
  Var wrong = makeVar("w", Type::tensor(DType::F32, {5}));
  REQUIRE(makeLocalCall(fn, {wrong}).error().str() ==
          "argument 0 of local function has type f32[5], expected f32[4]");
  REQUIRE(makeGlobalCall("g", fn->type(), {x, x}).error().str() ==
          "@g takes 1 argument, got 2");
}

TEST_CASE("structural equality ignores names and matches variables by position", "[ir][structural]") {
  Type t = Type::tensor(DType::F32, {4});
  auto build = [&](const std::string &pname) {
    Var p = makeVar(pname, t);
    Expr r = expectOk(makeCall("relu", {p}, {}, "some_name"));
    Expr s = expectOk(makeCall("add", {r, r}));
    return Expr(makeFunction({p}, s));
  };
  Expr f1 = build("x"), f2 = build("y");
  REQUIRE(structuralEqual(f1, f2));
  REQUIRE(structuralHash(f1) == structuralHash(f2));

  // Different sharing is a different graph: add(relu(p), relu(p)) with two relus.
  Var p = makeVar("p", t);
  Expr s = expectOk(makeCall("add", {expectOk(makeCall("relu", {p})), expectOk(makeCall("relu", {p}))}));
  Expr f3 = makeFunction({p}, s);
  REQUIRE_FALSE(structuralEqual(f1, f3));

  // Different constants, attributes and parameter order all differ.
  Var q1 = makeVar("q1", t), q2 = makeVar("q2", t);
  Expr sub12 = makeFunction({q1, q2}, expectOk(makeCall("subtract", {q1, q2})));
  Expr sub21 = makeFunction({q2, q1}, expectOk(makeCall("subtract", {q1, q2})));
  REQUIRE_FALSE(structuralEqual(sub12, sub21));
  REQUIRE(structuralHash(sub12) != structuralHash(sub21));
  Expr c1 = makeConstant(f32({2}, {1, 2})), c2 = makeConstant(f32({2}, {1, 3}));
  REQUIRE_FALSE(structuralEqual(c1, c2));
  REQUIRE(structuralEqual(c1, makeConstant(f32({2}, {1, 2}))));
  Expr l1 = expectOk(makeCall("leaky_relu", {p}, {{"alpha", 0.1}}));
  Expr l2 = expectOk(makeCall("leaky_relu", {p}, {{"alpha", 0.2}}));
  REQUIRE_FALSE(structuralEqual(l1, l2));
}

TEST_CASE("a 100,000-node chain is walked, rewritten, compared and freed without recursion",
          "[ir][deep]") {
  Type t = Type::tensor(DType::F32, {2});
  Var x = makeVar("x", t);
  Expr deep = chain(100000, x);
  auto order = postOrder(deep);
  REQUIRE(order.size() == 100001);
  REQUIRE(order.front() == x.get());
  Expr other = chain(100000, makeVar("y", t));
  REQUIRE(structuralEqual(deep, other));
  REQUIRE(structuralHash(deep) == structuralHash(other));
  int rewritten = 0;
  auto r = rewrite(deep, [&](const Expr &, const Expr &n) -> Expected<Expr> {
    ++rewritten;
    return n;
  });
  REQUIRE(r.ok());
  REQUIRE(*r == deep);
  REQUIRE(rewritten == 100001);
  auto uses = useCounts(deep);
  REQUIRE(uses[x.get()] == 1);
  deep.reset();
  other.reset(); // would overflow the stack with recursive destruction
  r = Expected<Expr>(Expr());
  SUCCEED();
}

TEST_CASE("nodes keep any number of operands, in order, and free wide chains iteratively",
          "[ir][deep]") {
  // Up to two operands live in the node, more in an array of its own: both
  // must give the operands back in order and release them.
  Type t = Type::tensor(DType::F32, {2});
  std::vector<Expr> leaves;
  for (int i = 0; i < 6; ++i)
    leaves.push_back(makeVar("v" + std::to_string(i), t));
  std::weak_ptr<const ExprNode> watch = leaves[5];
  for (size_t n = 0; n <= leaves.size(); ++n) {
    INFO(n << " operands");
    std::vector<Expr> fields(leaves.begin(), leaves.begin() + long(n));
    Expr tuple = makeTuple(fields);
    auto ops = tuple->operands();
    REQUIRE(ops.size() == n);
    for (size_t i = 0; i < n; ++i)
      REQUIRE(ops[i] == leaves[i]);
  }
  leaves.clear();
  REQUIRE(watch.expired()); // the tuples released their operands

  // A 100,000-deep chain of tuples of three (operands out of line) and of
  // pairs (inline), alternating, is freed without recursion.
  Var x = makeVar("x", t);
  Expr deep = x;
  for (int i = 0; i < 100000; ++i) {
    Expr item = i % 2 ? makeTuple({deep, x, x}) : makeTuple({x, deep});
    deep = expectOk(makeTupleGetItem(item, i % 2 ? 0 : 1));
  }
  REQUIRE(postOrder(deep).size() == 200001);
  std::weak_ptr<const ExprNode> head = deep;
  deep.reset();
  REQUIRE(head.expired());
}

TEST_CASE("module keeps insertion order and replaces in place", "[ir][module]") {
  Module m("net");
  Type t = Type::tensor(DType::F32, {1});
  Var a = makeVar("a", t);
  m.set("main", makeFunction({a}, a));
  m.set("helper", makeFunction({a}, a));
  Var b = makeVar("b", t);
  m.set("main", makeFunction({b}, expectOk(makeCall("relu", {b}))));
  REQUIRE(m.functions()[0].first == "main");
  REQUIRE(m.functions()[1].first == "helper");
  REQUIRE(m.find("main")->params()[0] == b);
  REQUIRE(m.erase("main"));
  REQUIRE(m.find("helper"));
  REQUIRE_FALSE(m.find("main"));
  REQUIRE(m.globalType("nope").error().str() == "no global function '@nope' in module 'net'");
}
