//===- tests/unit/host_kernels_tensor_test.cpp - Tensor-family host kernels -===//
//
// The host kernels of the tensor family (codegen/kernels/{elementwise,
// transform,index,image}.cpp with the lowerings of
// codegen/host_ops_tensor.cpp), run natively through the harness
// (host_kernel_harness.h) and compared with the reference interpreter: the
// conformance kit's catalogue samples, every accepted dtype, special values
// (NaN, infinities, integer extremes), attribute combinations, broadcasting
// and randomised shapes from fixed seeds, and the run-time errors (an index
// out of range, integer division by zero -> TESSERA_HOST_ERR_INVALID).
//
//===----------------------------------------------------------------------===//
#include "host_kernel_harness.h"
#include "ir/ops/common.h"
#include "test_util.h"

#include <cmath>
#include <limits>
#include <optional>
#include <random>

using namespace tessera;
using namespace tessera::test;
using Ints = std::vector<int64_t>;

namespace {

int64_t Int(size_t n) {
  return int64_t(n);
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<DType> kDTypes = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                                    DType::U8,  DType::I16, DType::U16,  DType::I32, DType::U32,
                                    DType::I64, DType::U64, DType::Bool};

/// One argument of a case: random (from the op's domain) unless `value`.
struct Arg {
  Type type;
  std::optional<Tensor> value;
};
Arg rnd(DType dt, Shape shape) {
  return Arg{Type::tensor(dt, std::move(shape)), std::nullopt};
}
Arg val(Tensor t) {
  return Arg{t.type(), std::move(t)};
}

std::string describe(const std::string &op, const Attrs &attrs, const std::vector<Arg> &args) {
  std::string s = op + " " + attrs.str();
  for (const Arg &a : args)
    s += (a.value ? " const " : " ") + a.type.str();
  return s;
}

/// Does op(args) type-check?
bool typeChecks(const std::string &op, const Attrs &attrs, const std::vector<Arg> &args) {
  std::vector<Expr> exprs;
  for (size_t i = 0; i < args.size(); ++i)
    exprs.push_back(makeVar("a" + std::to_string(i), args[i].type));
  return makeCall(op, std::move(exprs), attrs).ok();
}

/// Runs op(args) natively and with the interpreter; "" when they agree.
std::string check(const std::string &op, const Attrs &attrs, const std::vector<Arg> &args,
                  uint64_t seed = 11) {
  kit::KitCase kc;
  kc.label = describe(op, attrs, args);
  std::vector<Var> params;
  std::vector<Expr> exprs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].value) {
      exprs.push_back(makeConstant(*args[i].value, "c" + std::to_string(i)));
    } else {
      Var v = makeVar("x" + std::to_string(i), args[i].type);
      params.push_back(v);
      kc.inputDomains.push_back(kit::argDomain(op, i));
      exprs.push_back(v);
    }
  }
  auto call = makeCall(op, std::move(exprs), attrs, op);
  if (!call.ok())
    return "type error: " + kc.label + ": " + call.error().str();
  kc.ops = {*call};
  kc.module.set("main", makeFunction(std::move(params), *call));
  return hostkernel::checkCase(kc, seed);
}

/// The error of running op(inputs) natively ("" on success).
std::string nativeError(const std::string &op, const Attrs &attrs,
                        const std::vector<Tensor> &inputs) {
  std::vector<Expr> exprs;
  for (const Tensor &t : inputs)
    exprs.push_back(makeConstant(t));
  auto call = makeCall(op, std::move(exprs), attrs, op);
  if (!call.ok())
    return "type error: " + call.error().str();
  auto out = hostkernel::runNative(*(*call)->as<CallNode>(), inputs);
  return out.ok() ? std::string() : out.error().str();
}

#define CHECK_OK(expr)                                                                             \
  do {                                                                                             \
    std::string failure_ = (expr);                                                                 \
    INFO(failure_);                                                                                \
    CHECK(failure_.empty());                                                                       \
  } while (0)

void checkCatalogue(const std::string &op) {
  auto failures = hostkernel::checkOpSamples(op);
  std::string all;
  for (const std::string &f : failures)
    all += f + "\n";
  INFO("op " << op << ":\n" << all);
  CHECK(failures.empty());
}

Tensor doubles(DType dt, Shape shape, std::vector<double> v) {
  return Tensor::fromDoubles(dt, std::move(shape), v);
}
Tensor ints(DType dt, Shape shape, std::vector<int64_t> v) {
  return Tensor::fromInts(dt, std::move(shape), v);
}

Tensor randomTensor(DType dt, Shape shape, std::mt19937_64 &rng,
                    kit::Domain domain = kit::Domain::Any) {
  return kit::randomTensor(Type::tensor(dt, std::move(shape)), domain, rng);
}

const std::vector<double> kSpecials = {kNaN, kInf, -kInf, 0.0,   -0.0, 0.5,   -0.5, 1.5,  2.5,
                                       -2.5, 1e30, -1e30, 1e-30, 3.0,  -7.25, 100., 0.75, -1.0};

const std::vector<std::string> kUnaryOps = {
    "abs",         "acos",         "acosh",      "asin",  "asinh", "atan",       "atanh",
    "ceil",        "clip",         "cos",        "cosh",  "erf",   "exp",        "floor",
    "gelu",        "hard_sigmoid", "hard_swish", "isinf", "isnan", "leaky_relu", "log",
    "logical_not", "mish",         "neg",        "reciprocal", "relu", "round",  "sigmoid",
    "sign",        "silu",         "sin",        "sinh",       "sqrt", "tan",    "tanh"};

const std::vector<std::string> kBinaryOps = {
    "add",     "subtract",   "multiply",    "divide",     "power",      "maximum",
    "minimum", "mod",        "bit_shift",   "equal",      "greater",    "greater_equal",
    "less",    "less_equal", "logical_and", "logical_or", "logical_xor"};

/// A binary op's attributes that make it type-check (bit_shift needs one).
Attrs binaryAttrs(const std::string &op) {
  if (op == "bit_shift")
    return Attrs{{"direction", std::string("left")}};
  return {};
}

} // namespace

TEST_CASE("every tensor-family op has a host lowering", "[host-kernels][host-kernels-tensor]") {
  std::vector<std::string> ops = kUnaryOps;
  ops.insert(ops.end(), kBinaryOps.begin(), kBinaryOps.end());
  for (const char *op : {"where",       "cast",
                         "expand",      "reshape",
                         "flatten",     "squeeze",
                         "unsqueeze",   "transpose",
                         "slice",       "pad",
                         "concat",      "split",
                         "gather",      "gather_elements",
                         "gather_nd",   "scatter_elements",
                         "scatter_nd",  "resize2d",
                         "grid_sample", "roi_align"})
    ops.push_back(op);
  for (const std::string &op : ops) {
    INFO(op);
    CHECK(OpRegistry::global().find(op) != nullptr);
    CHECK(codegen::hostLowerings().find(op) != nullptr);
  }
}

TEST_CASE("tensor kernels pass the catalogue samples", "[host-kernels][host-kernels-tensor]") {
  std::vector<std::string> ops = kUnaryOps;
  ops.insert(ops.end(), kBinaryOps.begin(), kBinaryOps.end());
  for (const char *op : {"where",       "cast",
                         "expand",      "reshape",
                         "flatten",     "squeeze",
                         "unsqueeze",   "transpose",
                         "slice",       "pad",
                         "concat",      "split",
                         "gather",      "gather_elements",
                         "gather_nd",   "scatter_elements",
                         "scatter_nd",  "resize2d",
                         "grid_sample", "roi_align"})
    ops.push_back(op);
  for (const std::string &op : ops)
    if (!kit::samplesFor(op).empty())
      checkCatalogue(op);
}

TEST_CASE("unary kernels: every accepted dtype, special values, attributes",
          "[host-kernels][host-kernels-tensor]") {
  const std::vector<Attrs> clipAttrs = {Attrs{{"min", -0.5}, {"max", 0.5}},
                                        Attrs{{"min", 0.0}},
                                        Attrs{{"max", 0.25}},
                                        Attrs{{"min", 1.5}, {"max", -1.5}},
                                        Attrs{{"min", -1.7}, {"max", 2.2}},
                                        Attrs{{"min", kNaN}, {"max", 300.0}},
                                        Attrs{{"min", -1e30}, {"max", 1e30}}};
  for (const std::string &op : kUnaryOps) {
    std::vector<Attrs> variants = {Attrs{}};
    if (op == "clip")
      variants = clipAttrs;
    if (op == "leaky_relu")
      variants.push_back(Attrs{{"alpha", 0.3}});
    if (op == "hard_sigmoid")
      variants.push_back(Attrs{{"alpha", 0.3}, {"beta", 0.4}});
    if (op == "gelu")
      variants.push_back(Attrs{{"approximate", std::string("tanh")}});
    if (op == "isinf") {
      variants.push_back(Attrs{{"detect_positive", false}});
      variants.push_back(Attrs{{"detect_negative", false}});
    }
    for (const Attrs &attrs : variants)
      for (DType dt : kDTypes) {
        std::vector<Arg> args = {rnd(dt, {2, 3, 5})};
        if (!typeChecks(op, attrs, args))
          continue;
        CHECK_OK(check(op, attrs, args));
        CHECK_OK(check(op, attrs, {rnd(dt, {})}));
        CHECK_OK(check(op, attrs, {rnd(dt, {0, 3})}));
        if (isFloat(dt))
          CHECK_OK(check(op, attrs, {val(doubles(dt, {Int(kSpecials.size())}, kSpecials))}));
        if (isInteger(dt)) {
          auto [mn, mx] = ir::ops::intRange(dt);
          Ints extremes = {mn, mx, 0, 1, -1, mn + 1, mx - 1, 7, -7};
          if (dt == DType::U64)
            extremes.push_back(-1); // 2^64 - 1
          CHECK_OK(check(op, attrs, {val(ints(dt, {Int(extremes.size())}, extremes))}));
        }
      }
  }
}

TEST_CASE("unary kernels: large tensors run in parallel chunks",
          "[host-kernels][host-kernels-tensor]") {
  for (const char *op : {"relu", "exp", "sigmoid", "abs", "clip"})
    for (DType dt : {DType::F32, DType::F16, DType::I32}) {
      std::vector<Arg> args = {rnd(dt, {3, 20011})};
      Attrs attrs = std::string(op) == "clip" ? Attrs{{"min", -0.5}, {"max", 0.5}} : Attrs{};
      if (typeChecks(op, attrs, args))
        CHECK_OK(check(op, attrs, args));
    }
}

TEST_CASE("binary kernels: dtypes, broadcasting, special values",
          "[host-kernels][host-kernels-tensor]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{2, 3, 4}, {2, 3, 4}},
                                                       {{2, 3, 4}, {4}},
                                                       {{1, 4, 6, 6}, {4, 1, 1}},
                                                       {{3, 1}, {1, 4}},
                                                       {{}, {2, 3}},
                                                       {{2, 3}, {}},
                                                       {{}, {}},
                                                       {{2, 0, 3}, {3}},
                                                       {{5, 1, 4, 1, 2}, {4, 1, 2}},
                                                       {{1}, {7}},
                                                       {{2, 1, 1, 3}, {1, 5, 4, 1}}};
  for (const std::string &op : kBinaryOps) {
    Attrs attrs = binaryAttrs(op);
    std::vector<Attrs> variants = {attrs};
    if (op == "mod")
      variants.push_back(Attrs{{"fmod", int64_t(1)}});
    if (op == "bit_shift")
      variants.push_back(Attrs{{"direction", std::string("right")}});
    for (const Attrs &a : variants)
      for (DType dt : kDTypes) {
        if (!typeChecks(op, a, {rnd(dt, {2}), rnd(dt, {2})}))
          continue;
        for (const auto &[sa, sb] : shapes)
          CHECK_OK(check(op, a, {rnd(dt, sa), rnd(dt, sb)}));
        if (isFloat(dt)) {
          // Every pair of special values.
          std::vector<double> x, y;
          for (double p : kSpecials)
            for (double q : kSpecials) {
              x.push_back(p);
              y.push_back(q);
            }
          Shape s = {Int(x.size())};
          CHECK_OK(check(op, a, {val(doubles(dt, s, x)), val(doubles(dt, s, y))}));
        } else if (isInteger(dt)) {
          // Every pair of extremes except a zero divisor (tested below).
          auto [mn, mx] = ir::ops::intRange(dt);
          Ints e = {mn, mx, 0, 1, -1, 2, -2, 3, mn + 1, mx - 1, 63, 64, 65, 8, 9, 16, 17, 31, 32};
          if (dt == DType::U64)
            e.push_back(-1);
          std::vector<int64_t> x, y;
          bool divides = op == "divide" || op == "mod";
          for (int64_t p : e)
            for (int64_t q : e) {
              Tensor qt = ints(dt, {1}, {q});
              if (divides && qt.getInt(0) == 0)
                continue;
              if (op == "power" && ints(dt, {1}, {p}).getInt(0) == 0 && qt.getInt(0) < 0)
                continue;
              x.push_back(p);
              y.push_back(q);
            }
          Shape s = {Int(x.size())};
          CHECK_OK(check(op, a, {val(ints(dt, s, x)), val(ints(dt, s, y))}));
        }
      }
  }
}

TEST_CASE("binary kernels: randomised broadcast shapes", "[host-kernels][host-kernels-tensor]") {
  std::mt19937_64 rng(1234);
  std::uniform_int_distribution<int> rankDist(0, 5), dimDist(1, 4), coin(0, 3);
  for (int iter = 0; iter < 60; ++iter) {
    Shape out;
    int rank = rankDist(rng);
    for (int d = 0; d < rank; ++d)
      out.push_back(dimDist(rng));
    auto derive = [&] {
      Shape s = out;
      for (int64_t &d : s)
        if (coin(rng) == 0)
          d = 1;
      size_t drop = std::uniform_int_distribution<size_t>(0, s.size())(rng);
      if (coin(rng) == 0)
        s.erase(s.begin(), s.begin() + Int(drop));
      return s;
    };
    Shape a = derive(), b = derive();
    const char *ops[] = {"add", "divide", "maximum", "less", "mod"};
    const char *op = ops[iter % 5];
    DType dts[] = {DType::F32, DType::I32, DType::F16, DType::I64, DType::U8};
    DType dt = dts[(iter / 5) % 5];
    CHECK_OK(check(op, {}, {rnd(dt, a), rnd(dt, b)}, uint64_t(iter)));
  }
  // Large broadcasts over parallel chunks.
  CHECK_OK(check("add", {}, {rnd(DType::F32, {4, 9000}), rnd(DType::F32, {9000})}));
  CHECK_OK(check("multiply", {}, {rnd(DType::F32, {300, 1, 70}), rnd(DType::F32, {1, 50, 70})}));
  CHECK_OK(check("equal", {}, {rnd(DType::I32, {3, 20000}), rnd(DType::I32, {3, 1})}));
}

TEST_CASE("binary kernels: integer division by zero is an error",
          "[host-kernels][host-kernels-tensor]") {
  for (DType dt : {DType::I8, DType::I32, DType::I64, DType::U8, DType::U64}) {
    INFO(dtypeName(dt));
    Tensor a = ints(dt, {3}, {4, 5, 6}), b = ints(dt, {3}, {1, 0, 2});
    CHECK(nativeError("divide", {}, {a, b}) == "tk_binary returned 1");
    CHECK(nativeError("mod", {}, {a, b}) == "tk_binary returned 1");
    CHECK(nativeError("mod", {{"fmod", int64_t(1)}}, {a, b}) == "tk_binary returned 1");
  }
  CHECK(nativeError("power", {}, {ints(DType::I32, {2}, {2, 0}), ints(DType::I32, {2}, {1, -1})}) ==
        "tk_binary returned 1");
  // Float division by zero follows IEEE.
  CHECK(nativeError("divide", {}, {doubles(DType::F32, {1}, {1}), doubles(DType::F32, {1}, {0})})
            .empty());
}

TEST_CASE("where kernel: dtypes and 3-way broadcasting", "[host-kernels][host-kernels-tensor]") {
  for (DType dt : kDTypes)
    CHECK_OK(check("where", {}, {rnd(DType::Bool, {2, 3}), rnd(dt, {2, 3}), rnd(dt, {2, 3})}));
  const std::vector<std::vector<Shape>> shapes = {{{2, 1, 4}, {3, 1}, {4}},
                                                  {{}, {2, 3}, {}},
                                                  {{3, 1}, {1, 4}, {3, 4}},
                                                  {{5}, {0, 5}, {5}},
                                                  {{2, 3, 4, 5}, {1}, {3, 1, 5}}};
  for (const auto &s : shapes)
    for (DType dt : {DType::F32, DType::F16, DType::I64, DType::Bool})
      CHECK_OK(check("where", {}, {rnd(DType::Bool, s[0]), rnd(dt, s[1]), rnd(dt, s[2])}));
  CHECK_OK(check("where", {},
                 {rnd(DType::Bool, {40000}), rnd(DType::F32, {40000}), rnd(DType::F32, {1})}));
}

TEST_CASE("cast kernel: every dtype pair", "[host-kernels][host-kernels-tensor]") {
  std::vector<double> floats = {kNaN,  kInf,   -kInf, 0.0,   -0.0,  0.5,   -0.5,   1.7,    -1.7,
                                127.5, -128.5, 255.9, 256.0, -1.0,  65504, 65520,  70000,  1e-8,
                                3e9,   -3e9,   1e19,  2e19,  -1e19, 1e30,  6.1e-5, 1.0 / 3};
  for (DType from : kDTypes)
    for (DType to : kDTypes) {
      Attrs attrs{{"dtype", to}};
      CHECK_OK(check("cast", attrs, {rnd(from, {2, 3, 5})}));
      CHECK_OK(check("cast", attrs, {rnd(from, {0})}));
      if (isFloat(from))
        CHECK_OK(check("cast", attrs, {val(doubles(from, {Int(floats.size())}, floats))}));
      if (isInteger(from)) {
        auto [mn, mx] = ir::ops::intRange(from);
        Ints e = {mn,
                  mx,
                  0,
                  1,
                  -1,
                  255,
                  256,
                  -129,
                  65535,
                  65536,
                  (int64_t(1) << 53) + 1,
                  (int64_t(1) << 24) + 1,
                  (int64_t(1) << 31),
                  -(int64_t(1) << 40) - 3};
        CHECK_OK(check("cast", attrs, {val(ints(from, {Int(e.size())}, e))}));
      }
    }
  CHECK_OK(check("cast", {{"dtype", DType::F16}}, {rnd(DType::F32, {5, 20000})}));
}

TEST_CASE("shape-only and strided copies", "[host-kernels][host-kernels-tensor]") {
  for (DType dt : {DType::F32, DType::F16, DType::F64, DType::U8, DType::Bool, DType::I64}) {
    CHECK_OK(check("reshape", {{"newshape", Ints{6, -1}}}, {rnd(dt, {2, 3, 4})}));
    CHECK_OK(check("reshape", {{"newshape", Ints{}}}, {rnd(dt, {1, 1})}));
    CHECK_OK(check("flatten", {{"axis", int64_t(2)}}, {rnd(dt, {2, 3, 4, 5})}));
    CHECK_OK(check("flatten", {{"axis", int64_t(0)}}, {rnd(dt, {})}));
    CHECK_OK(check("squeeze", {}, {rnd(dt, {1, 3, 1, 2})}));
    CHECK_OK(check("unsqueeze", {{"axes", Ints{0, -1}}}, {rnd(dt, {3, 2})}));
    CHECK_OK(check("transpose", {}, {rnd(dt, {2, 3, 4})}));
    CHECK_OK(check("transpose", {{"perm", Ints{1, 0}}}, {rnd(dt, {70, 300})}));
    CHECK_OK(check("transpose", {{"perm", Ints{0, 2, 3, 1}}}, {rnd(dt, {2, 16, 9, 10})}));
    CHECK_OK(check("transpose", {{"perm", Ints{1, 0, 2}}}, {rnd(dt, {33, 9, 2})}));
    CHECK_OK(check("transpose", {}, {rnd(dt, {})}));
    CHECK_OK(check("transpose", {{"perm", Ints{0, 2, 1}}}, {rnd(dt, {2, 0, 3})}));
    CHECK_OK(check("expand", {{"shape", Ints{2, 1, 3}}}, {rnd(dt, {4, 1})}));
    CHECK_OK(check("expand", {{"shape", Ints{3, 4}}}, {rnd(dt, {})}));
    CHECK_OK(check("expand", {{"shape", Ints{1}}}, {rnd(dt, {2, 3})}));
    CHECK_OK(check("expand", {{"shape", Ints{0, 3}}}, {rnd(dt, {1, 3})}));
  }
  // Random permutations up to rank 6.
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 40; ++iter) {
    int rank = int(rng() % 7);
    Shape s;
    Ints perm;
    for (int d = 0; d < rank; ++d) {
      s.push_back(int64_t(1 + rng() % 4));
      perm.push_back(d);
    }
    std::shuffle(perm.begin(), perm.end(), rng);
    DType dt = kDTypes[size_t(iter) % kDTypes.size()];
    CHECK_OK(check("transpose", {{"perm", perm}}, {rnd(dt, s)}, uint64_t(iter)));
  }
}

TEST_CASE("slice kernel: steps, negative indices, clamping",
          "[host-kernels][host-kernels-tensor]") {
  struct C {
    Shape shape;
    Ints starts, ends, axes, steps;
  };
  const int64_t big = std::numeric_limits<int64_t>::max(),
                small = std::numeric_limits<int64_t>::min();
  const std::vector<C> cases = {
      {{4, 6}, {1, 0}, {3, 6}, {}, {}},
      {{4, 6}, {1}, {-1}, {1}, {2}},
      {{5, 7}, {-1, 6}, {small, 0}, {0, 1}, {-1, -2}},
      {{5, 7}, {4}, {1}, {0}, {-3}},
      {{5, 7}, {3}, {3}, {1}, {1}},   // empty
      {{5, 7}, {10}, {20}, {1}, {1}}, // clamped -> empty
      {{3, 4, 5}, {0, 1, -100}, {big, big, big}, {}, {2, 2, 2}},
      {{3, 4, 5}, {-1}, {small}, {-1}, {-1}},
      {{2, 3, 4, 5}, {1, 1}, {3, 5}, {-1, 1}, {1, 1}},
      {{0, 3}, {0}, {2}, {1}, {1}},
  };
  for (const C &c : cases)
    for (DType dt : {DType::F32, DType::I8, DType::F64}) {
      Attrs attrs{{"starts", c.starts}, {"ends", c.ends}};
      if (!c.axes.empty())
        attrs.set("axes", c.axes);
      if (!c.steps.empty())
        attrs.set("steps", c.steps);
      CHECK_OK(check("slice", attrs, {rnd(dt, c.shape)}));
    }
}

TEST_CASE("pad kernel: modes, crops, fill values", "[host-kernels][host-kernels-tensor]") {
  struct C {
    Shape shape;
    Ints pads;
  };
  const std::vector<C> cases = {{{2, 3}, {1, 0, 1, 2}},
                                {{3, 4}, {1, 2, 1, 2}},
                                {{3, 4}, {0, 1, 2, 0}},
                                {{4, 5}, {-1, 2, 1, -2}},
                                {{4, 5}, {0, 0, 0, 0}},
                                {{2, 3, 4}, {1, 0, 2, 0, 1, 3}},
                                {{1, 2, 5, 5}, {0, 0, 2, 2, 0, 0, 2, 2}},
                                {{5}, {-2, -3}},
                                {{6}, {3, -1}},
                                {{2, 300}, {0, 4, 0, 3}}};
  for (const C &c : cases)
    for (const char *mode : {"constant", "reflect", "edge"})
      for (DType dt : {DType::F32, DType::F16, DType::I32, DType::U8, DType::Bool, DType::F64}) {
        for (double value : {0.0, 2.75, -300.0}) {
          Attrs attrs{{"pads", c.pads}, {"mode", std::string(mode)}, {"value", value}};
          std::vector<Arg> args = {rnd(dt, c.shape)};
          if (typeChecks("pad", attrs, args))
            CHECK_OK(check("pad", attrs, args));
        }
      }
  CHECK_OK(check("pad", {{"pads", Ints{}}}, {rnd(DType::F32, {})}));
  CHECK_OK(check("pad", {{"pads", Ints{2, 1}}, {"value", 5.0}}, {rnd(DType::F32, {0})}));
  CHECK_OK(check("pad", {{"pads", Ints{1, 1, 1, 1}}, {"mode", std::string("reflect")}},
                 {rnd(DType::F32, {64, 1000})}));
}

TEST_CASE("concat and split kernels", "[host-kernels][host-kernels-tensor]") {
  for (DType dt : {DType::F32, DType::F16, DType::I64, DType::Bool}) {
    CHECK_OK(
        check("concat", {{"axis", int64_t(1)}},
              {rnd(dt, {2, 3, 4}), rnd(dt, {2, 1, 4}), rnd(dt, {2, 0, 4}), rnd(dt, {2, 5, 4})}));
    CHECK_OK(check("concat", {{"axis", int64_t(-1)}}, {rnd(dt, {2, 3}), rnd(dt, {2, 5})}));
    CHECK_OK(check("concat", {{"axis", int64_t(0)}}, {rnd(dt, {3})}));
    CHECK_OK(
        check("concat", {{"axis", int64_t(0)}}, {rnd(dt, {3, 2}), val(ints(dt, {1, 2}, {1, 0}))}));
    CHECK_OK(check("split", {{"axis", int64_t(1)}, {"sizes", Ints{2, 0, 4}}}, {rnd(dt, {4, 6})}));
    CHECK_OK(
        check("split", {{"axis", int64_t(-1)}, {"sizes", Ints{1, 1, 3}}}, {rnd(dt, {2, 3, 5})}));
    CHECK_OK(check("split", {{"sizes", Ints{3}}}, {rnd(dt, {3, 2})}));
  }
  CHECK_OK(check("concat", {{"axis", int64_t(0)}},
                 {rnd(DType::F32, {300, 64}), rnd(DType::F32, {200, 64})}));
  CHECK_OK(check("split", {{"axis", int64_t(1)}, {"sizes", Ints{50, 14}}},
                 {rnd(DType::F32, {500, 64})}));
}

TEST_CASE("gather kernels: axes, index dtypes, negative indices",
          "[host-kernels][host-kernels-tensor]") {
  for (DType idt : {DType::I32, DType::I64})
    for (DType dt : {DType::F32, DType::F16, DType::I8, DType::Bool, DType::U64}) {
      Tensor idx = ints(idt, {2, 3}, {0, -1, 2, -3, 1, 1});
      CHECK_OK(check("gather", {{"axis", int64_t(0)}}, {rnd(dt, {3, 4}), val(idx)}));
      CHECK_OK(check("gather", {{"axis", int64_t(1)}}, {rnd(dt, {2, 3, 5}), val(idx)}));
      CHECK_OK(check("gather", {{"axis", int64_t(-1)}}, {rnd(dt, {2, 3}), val(idx)}));
      CHECK_OK(check("gather", {{"axis", int64_t(0)}}, {rnd(dt, {3}), val(ints(idt, {}, {-2}))}));
      CHECK_OK(check("gather", {{"axis", int64_t(1)}}, {rnd(dt, {3, 4}), val(ints(idt, {0}, {}))}));
      // gather_elements: indices no larger than data off the axis.
      CHECK_OK(check("gather_elements", {{"axis", int64_t(1)}},
                     {rnd(dt, {3, 4}), val(ints(idt, {2, 3}, {0, 3, -1, -4, 2, 1}))}));
      CHECK_OK(check("gather_elements", {{"axis", int64_t(0)}},
                     {rnd(dt, {3, 4, 2}), val(ints(idt, {4, 2, 1}, {0, 1, 2, -1, -2, -3, 1, 0}))}));
    }
  CHECK_OK(check("gather", {{"axis", int64_t(0)}},
                 {rnd(DType::F32, {1000, 64}), val(ints(DType::I64, {500}, Ints(500, 7)))}));
  // Out of range -> TESSERA_HOST_ERR_INVALID.
  CHECK(nativeError("gather", {{"axis", int64_t(0)}},
                    {doubles(DType::F32, {3}, {1, 2, 3}), ints(DType::I64, {2}, {0, 3})}) ==
        "tk_gather returned 1");
  CHECK(nativeError("gather", {{"axis", int64_t(0)}},
                    {doubles(DType::F32, {3}, {1, 2, 3}), ints(DType::I32, {1}, {-4})}) ==
        "tk_gather returned 1");
  CHECK(nativeError("gather_elements", {{"axis", int64_t(0)}},
                    {doubles(DType::F32, {3}, {1, 2, 3}), ints(DType::I64, {2}, {0, 5})}) ==
        "tk_gather_elements returned 1");
}

TEST_CASE("gather_nd kernel: batch_dims and slices", "[host-kernels][host-kernels-tensor]") {
  for (DType dt : {DType::F32, DType::I16, DType::F16}) {
    CHECK_OK(
        check("gather_nd", {}, {rnd(dt, {2, 2}), val(ints(DType::I64, {2, 2}, {0, 0, 1, 1}))}));
    CHECK_OK(check("gather_nd", {}, {rnd(dt, {2, 3, 4}), val(ints(DType::I64, {2, 1}, {1, -2}))}));
    CHECK_OK(check("gather_nd", {},
                   {rnd(dt, {2, 3, 4}), val(ints(DType::I32, {3, 2}, {0, 2, 1, -1, -2, 0}))}));
    CHECK_OK(check("gather_nd", {{"batch_dims", int64_t(1)}},
                   {rnd(dt, {2, 3, 4}), val(ints(DType::I64, {2, 2, 1}, {0, 2, 1, 1}))}));
    CHECK_OK(check("gather_nd", {{"batch_dims", int64_t(1)}},
                   {rnd(dt, {2, 3, 4}), val(ints(DType::I64, {2, 2}, {0, 3, 2, -1}))}));
    CHECK_OK(check("gather_nd", {{"batch_dims", int64_t(2)}},
                   {rnd(dt, {2, 3, 4, 2}), val(ints(DType::I64, {2, 3, 1}, {0, 1, 2, 3, 0, -1}))}));
  }
  CHECK(nativeError("gather_nd", {},
                    {doubles(DType::F32, {2, 2}, {1, 2, 3, 4}),
                     ints(DType::I64, {2, 2}, {0, 0, 2, 1})}) == "tk_gather_nd returned 1");
}

TEST_CASE("scatter kernels: reductions, duplicates, dtypes",
          "[host-kernels][host-kernels-tensor]") {
  for (const char *red : {"none", "add", "mul", "max", "min"})
    for (DType dt : {DType::F32, DType::F16, DType::F64, DType::I32, DType::U8, DType::U64,
                     DType::Bool, DType::I8}) {
      Attrs attrs{{"reduction", std::string(red)}};
      Attrs axis1{{"reduction", std::string(red)}, {"axis", int64_t(1)}};
      std::vector<Arg> se = {rnd(dt, {3, 4}), val(ints(DType::I64, {2, 3}, {0, 3, 3, -1, 1, 0})),
                             rnd(dt, {2, 3})};
      if (!typeChecks("scatter_elements", axis1, se))
        continue;
      CHECK_OK(check("scatter_elements", axis1, se));
      CHECK_OK(check("scatter_elements", attrs,
                     {rnd(dt, {3, 2, 2}), val(ints(DType::I32, {2, 2, 1}, {2, 2, -1, 0})),
                      rnd(dt, {2, 2, 1})}));
      CHECK_OK(check("scatter_nd", attrs,
                     {rnd(dt, {4, 3}), val(ints(DType::I64, {3, 1}, {1, 3, 1})), rnd(dt, {3, 3})}));
      CHECK_OK(
          check("scatter_nd", attrs,
                {rnd(dt, {4, 3}), val(ints(DType::I32, {2, 2}, {1, 2, -1, -1})), rnd(dt, {2})}));
      CHECK_OK(check("scatter_nd", attrs,
                     {rnd(dt, {2, 3, 4}), val(ints(DType::I64, {2, 2, 1}, {0, 1, 1, 1})),
                      rnd(dt, {2, 2, 3, 4})}));
    }
  // NaN meets max/min.
  Tensor data = doubles(DType::F32, {3}, {kNaN, 1, 2});
  Tensor upd = doubles(DType::F32, {3}, {1, kNaN, 0.5});
  for (const char *red : {"max", "min", "add"})
    CHECK_OK(check("scatter_elements", {{"reduction", std::string(red)}},
                   {val(data), val(ints(DType::I64, {3}, {0, 1, 2})), val(upd)}));
  CHECK(nativeError("scatter_elements", {},
                    {doubles(DType::F32, {3}, {1, 2, 3}), ints(DType::I64, {1}, {3}),
                     doubles(DType::F32, {1}, {1})}) == "tk_scatter_elements returned 1");
  CHECK(nativeError("scatter_nd", {},
                    {doubles(DType::F32, {3}, {1, 2, 3}), ints(DType::I64, {1, 1}, {-4}),
                     doubles(DType::F32, {1}, {1})}) == "tk_scatter_nd returned 1");
}

TEST_CASE("resize2d kernel: modes and coordinate transforms",
          "[host-kernels][host-kernels-tensor]") {
  const char *coords[] = {"half_pixel",        "half_pixel_symmetric", "pytorch_half_pixel",
                          "align_corners",     "asymmetric",           "tf_half_pixel_for_nn",
                          "tf_crop_and_resize"};
  const std::vector<std::pair<Shape, Ints>> sizes = {{{1, 2, 4, 5}, {8, 10}},
                                                     {{2, 1, 5, 4}, {3, 2}},
                                                     {{1, 1, 3, 3}, {1, 7}},
                                                     {{1, 2, 1, 1}, {3, 2}}};
  for (const char *mode : {"nearest", "linear", "cubic"})
    for (const char *coord : coords)
      for (const auto &[shape, size] : sizes) {
        Attrs attrs{{"mode", std::string(mode)},
                    {"coordinate_transformation_mode", std::string(coord)},
                    {"size", size}};
        if (std::string(coord) == "tf_crop_and_resize") {
          attrs.set("roi", std::vector<double>{-0.2, 0.1, 0.9, 1.3});
          attrs.set("extrapolation_value", 7.5);
        }
        CHECK_OK(check("resize2d", attrs, {rnd(DType::F32, shape)}));
        if (std::string(mode) == "nearest") {
          for (const char *nm : {"round_prefer_ceil", "floor", "ceil"}) {
            Attrs a = attrs;
            a.set("nearest_mode", std::string(nm));
            CHECK_OK(check("resize2d", a, {rnd(DType::F32, shape)}));
          }
          CHECK_OK(check("resize2d", attrs, {rnd(DType::I32, shape)}));
          CHECK_OK(check("resize2d", attrs, {rnd(DType::U8, shape)}));
        } else {
          Attrs a = attrs;
          a.set("exclude_outside", true);
          a.set("cubic_coeff_a", -0.5);
          CHECK_OK(check("resize2d", a, {rnd(DType::F32, shape)}));
          CHECK_OK(check("resize2d", attrs, {rnd(DType::F16, shape)}));
          CHECK_OK(check("resize2d", attrs, {rnd(DType::F64, shape)}));
        }
        Attrs scaled = attrs;
        scaled.set("scales", std::vector<double>{2.5, 1.7});
        CHECK_OK(check("resize2d", scaled, {rnd(DType::F32, shape)}));
      }
}

TEST_CASE("grid_sample kernel: modes, padding, align_corners",
          "[host-kernels][host-kernels-tensor]") {
  std::mt19937_64 rng(5);
  // Grid positions in [-1.3, 1.3], so some fall outside the image.
  Tensor grid = randomTensor(DType::F32, {2, 3, 4, 2}, rng);
  for (int64_t i = 0; i < grid.numel(); ++i)
    grid.setDouble(i, grid.getDouble(i) * 1.3);
  for (const char *mode : {"bilinear", "nearest", "bicubic"})
    for (const char *pm : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        Attrs attrs{{"mode", std::string(mode)},
                    {"padding_mode", std::string(pm)},
                    {"align_corners", align}};
        CHECK_OK(check("grid_sample", attrs, {rnd(DType::F32, {2, 3, 5, 6}), val(grid)}));
        CHECK_OK(check("grid_sample", attrs,
                       {rnd(DType::F64, {2, 1, 4, 3}), rnd(DType::F64, {2, 2, 5, 2})}));
        CHECK_OK(check("grid_sample", attrs,
                       {rnd(DType::F16, {1, 2, 3, 3}), rnd(DType::F16, {1, 2, 2, 2})}));
      }
}

TEST_CASE("roi_align kernel: modes, sampling, coordinates", "[host-kernels][host-kernels-tensor]") {
  Tensor rois =
      doubles(DType::F32, {4, 4}, {0, 0, 3, 3, 1.2, 0.5, 6.7, 4.1, -2, -1, 2, 9, 5, 5, 5.3, 5.2});
  Tensor batch = ints(DType::I64, {4}, {0, 1, 1, 0});
  for (const char *mode : {"avg", "max"})
    for (const char *coord : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 1, 2})
        for (double scale : {1.0, 0.5}) {
          Attrs attrs{
              {"mode", std::string(mode)},   {"coordinate_transformation_mode", std::string(coord)},
              {"sampling_ratio", ratio},     {"spatial_scale", scale},
              {"output_height", int64_t(2)}, {"output_width", int64_t(3)}};
          CHECK_OK(
              check("roi_align", attrs, {rnd(DType::F32, {2, 3, 6, 7}), val(rois), val(batch)}));
        }
  // A roi so wide that its samples along a row (3 bins of ceil(590 / 3)
  // each) outnumber the kernel's per-roi table: those are computed per
  // sample; the narrow one beside it comes from the table.
  Tensor wide = doubles(DType::F32, {2, 4}, {4, 1, 594, 6.5, 2, 2, 9, 5});
  for (const char *mode : {"avg", "max"})
    CHECK_OK(check(
        "roi_align",
        {{"mode", std::string(mode)}, {"output_height", int64_t(2)}, {"output_width", int64_t(3)}},
        {rnd(DType::F32, {1, 2, 8, 600}), val(wide), val(ints(DType::I64, {2}, {0, 0}))}));
  Tensor rois64 = doubles(DType::F64, {2, 4}, {0.5, 0.5, 3.5, 2.5, 0, 0, 7, 7});
  CHECK_OK(check("roi_align", {},
                 {rnd(DType::F64, {1, 2, 5, 5}), val(rois64), val(ints(DType::I64, {2}, {0, 0}))}));
  CHECK(nativeError("roi_align", {},
                    {doubles(DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4}),
                     doubles(DType::F32, {1, 4}, {0, 0, 1, 1}), ints(DType::I64, {1}, {1})}) ==
        "tk_roi_align returned 1");
}
