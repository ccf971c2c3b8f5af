//===- unit/runtime_values_test.cpp - Sizes the data decides ---------------===//
//
// Run-time symbols (docs/design/0013-dynamic-shapes.md, "Run-time values"):
// nonzero, non_max_suppression and unique, whose result count the data decides,
// symbol_values, which turns sizes back into a tensor, and check, which
// stops a run whose data breaks a rule. Their reference
// kernels against hand-computed results; models over them compiled once and
// run at inputs that give different counts (none, some, all), every output
// and its shape compared with the reference interpreter on the same
// symbolic model; the plan's run-time symbols and SetSymbol steps through
// JSON and validation; an output whose size only the run knows cannot be
// bound before it.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "ir/symbol.h"
#include "runtime/plan.h"
#include "symbolic_test_util.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace tessera;
using namespace tessera::test;

namespace {

using Ints = std::vector<int64_t>;

ir::Expr call(const char *op, std::vector<ir::Expr> args, ir::Attrs a = {}) {
  return ir::expectOk(ir::makeCall(op, std::move(args), std::move(a), op));
}

ir::Expr item(const ir::Expr &tuple, int i) {
  return ir::expectOk(ir::makeTupleGetItem(tuple, i));
}

int64_t runtimeSymbol(const char *name, int64_t hi) {
  auto s = ir::runtimeSymbol(name, hi);
  REQUIRE(s.ok());
  return *s;
}

ir::Tensor f32(ir::Shape shape, std::vector<double> values) {
  return ir::Tensor::fromDoubles(ir::DType::F32, std::move(shape), values);
}

/// x f32[4, 5] -> the elements above `threshold` (nonzero, transpose,
/// gather_nd), their k largest with k = min(count, 3) (a clamped derived
/// dim), and the count as a tensor (symbol_values).
ir::Module selectAbove(double threshold) {
  const int64_t r = runtimeSymbol("above", 20);
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {4, 5}));
  ir::Expr mask = call("greater", {x, ir::makeConstant(f32({}, {threshold}))});
  ir::Expr nz = call("nonzero", {mask}, {{"count", r}});
  ir::Expr idx = call("transpose", {item(nz, 0)}, {{"perm", Ints{1, 0}}});
  ir::Expr picked = call("gather_nd", {x, idx});
  // k = min(count, 3), a clamped dim derived from the run-time count (the
  // size of the first three).
  ir::Expr first = call("slice", {picked}, {{"starts", Ints{0}}, {"ends", Ints{3}}});
  const int64_t k = first->type().shape()[0];
  ir::Expr top = call("topk", {call("sigmoid", {picked})}, {{"k", k}});
  ir::Expr count = call("symbol_values", {}, {{"values", Ints{r, 5}}, {"shape", Ints{2}}});
  ir::Module m("select");
  m.set("main", ir::makeFunction(
                    {x}, ir::makeTuple({picked, item(nz, 0), count, item(top, 0), item(top, 1)})));
  return m;
}

} // namespace

TEST_CASE("nonzero: row-major indices and the count; -0 is zero and NaN is not", "[nonzero]") {
  const ir::Op *op = ir::OpRegistry::global().find("nonzero");
  REQUIRE(op);
  REQUIRE(op->dataDependent);
  const ir::Tensor x = f32({2, 3}, {0, -0.0, 2, std::nan(""), 0, -1});
  const std::vector<ir::Tensor> in{x};
  auto out = op->kernel(in, ir::Attrs{{"count", int64_t(0)}}, ir::Type());
  REQUIRE(out.ok());
  REQUIRE(out->size() == 2);
  CHECK((*out)[0].shape() == ir::Shape{2, 3});
  CHECK((*out)[0].toInts() == Ints{0, 1, 1, 2, 0, 2});
  CHECK((*out)[1].toInts() == Ints{3});
  const std::vector<ir::Tensor> one{f32({}, {5})};
  auto scalar = op->kernel(one, ir::Attrs{{"count", int64_t(0)}}, ir::Type());
  REQUIRE(scalar.ok());
  CHECK((*scalar)[0].shape() == ir::Shape{1, 1});
  // The relation: [rank, count] and [1]; a count that is no size is refused.
  auto bad = op->normalizeAttrs({{"count", int64_t(-3)}});
  REQUIRE(bad.ok());
  auto t = op->inferType(std::vector<ir::Type>{x.type()}, *bad);
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.error().str(), Catch::Contains("'count' = -3 must be a size"));
}

TEST_CASE("nonzero: compiled once; counts from none to all match the interpreter",
          "[nonzero][symbol_values][compile]") {
  const ir::Module m = selectAbove(0.25);
  auto model = compileModule(m);
  // The count is a run-time symbol, set by a step after the kernel.
  bool runtimeSymbol = false, setter = false;
  for (const runtime::PlanSymbol &s : model->plan().symbols)
    runtimeSymbol = runtimeSymbol || (s.runtime && s.lo == 0 && s.hi == 20);
  for (const runtime::Step &s : model->plan().steps)
    setter = setter || s.kind == runtime::StepKind::SetSymbol;
  CHECK(runtimeSymbol);
  CHECK(setter);
  auto session = runtime::Session::create(model, {2});
  REQUIRE(session.ok());
  std::mt19937 rng{3};
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 6; ++trial) {
    INFO("trial " << trial);
    std::vector<double> v(20);
    for (double &e : v)
      e = trial == 0 ? -1 : trial == 1 ? 1 : u(rng); // none above, all above, some
    checkRun(**session, m, {f32({4, 5}, v)});
    auto counts = (*session)->output(2);
    REQUIRE(counts.ok());
    const int64_t count = static_cast<const int64_t *>((*counts)->data)[0];
    CHECK(count == (trial == 0 ? 0 : trial == 1 ? 20 : count));
    CHECK(static_cast<const int64_t *>((*counts)->data)[1] == 5);
    auto picked = (*session)->output(0);
    REQUIRE(picked.ok());
    CHECK((*picked)->shape[0] == count);
  }
}

TEST_CASE("non_max_suppression: greedy selection by score; IoU above the threshold suppresses",
          "[non_max_suppression]") {
  const ir::Op *op = ir::OpRegistry::global().find("non_max_suppression");
  REQUIRE(op);
  // A and B overlap (IoU 81/119 = 0.68), C is apart; scores 0.7, 0.9, 0.8.
  const ir::Tensor boxes = f32({1, 3, 4}, {0, 0, 10, 10, 1, 1, 11, 11, 20, 20, 30, 30});
  const ir::Tensor scores = f32({1, 1, 3}, {0.7, 0.9, 0.8});
  auto run = [&](ir::Attrs attrs) {
    attrs.set("count", int64_t(0));
    auto normalized = op->normalizeAttrs(attrs);
    REQUIRE(normalized.ok());
    const std::vector<ir::Tensor> in{boxes, scores};
    auto out = op->kernel(in, *normalized, ir::Type());
    REQUIRE(out.ok());
    return (*out)[0].toInts();
  };
  CHECK(run({{"max_output", int64_t(10)}, {"iou_threshold", 0.5}}) == Ints{0, 0, 1, 0, 0, 2});
  CHECK(run({{"max_output", int64_t(10)}, {"iou_threshold", 0.7}}) ==
        Ints{0, 0, 1, 0, 0, 2, 0, 0, 0});
  CHECK(run({{"max_output", int64_t(1)}, {"iou_threshold", 0.5}}) == Ints{0, 0, 1});
  CHECK(run({{"max_output", int64_t(10)},
             {"iou_threshold", 0.5},
             {"use_score_threshold", true},
             {"score_threshold", 0.85}}) == Ints{0, 0, 1});
  CHECK(run({{"max_output", int64_t(0)}, {"iou_threshold", 0.5}}).empty());
}

TEST_CASE("non_max_suppression: compiled once; matches the interpreter over batches and classes",
          "[non_max_suppression][compile]") {
  const int64_t count = runtimeSymbol("kept", 2 * 3 * 40);
  ir::Var b = ir::makeVar("boxes", ir::Type::tensor(ir::DType::F32, {2, 40, 4}));
  ir::Var s = ir::makeVar("scores", ir::Type::tensor(ir::DType::F32, {2, 3, 40}));
  ir::Attrs attrs{{"count", count},
                  {"max_output", int64_t(40)},
                  {"iou_threshold", 0.3},
                  {"center_point_box", true}};
  ir::Expr nms = call("non_max_suppression", {b, s}, attrs);
  ir::Module m("nms");
  m.set("main", ir::makeFunction({b, s}, item(nms, 0)));
  auto model = compileModule(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  std::mt19937 rng{5};
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<double> bv, sv;
    for (int i = 0; i < 2 * 40; ++i) // centre boxes of size 5..15 on a 40x40 field
      bv.insert(bv.end(), {u(rng) * 40, u(rng) * 40, 5 + u(rng) * 10, 5 + u(rng) * 10});
    for (int i = 0; i < 2 * 3 * 40; ++i)
      sv.push_back(u(rng));
    checkRun(**session, m, {f32({2, 40, 4}, bv), f32({2, 3, 40}, sv)});
    auto out = (*session)->output(0);
    REQUIRE(out.ok());
    CHECK((*out)->shape[0] > 3); // several selected, some suppressed
    CHECK((*out)->shape[0] < 2 * 3 * 40);
  }
}

TEST_CASE("non_max_suppression: hundreds of boxes kept; the selection is a box-by-box greedy one",
          "[non_max_suppression][compile]") {
  // The selection compares a candidate with the kept boxes that may overlap
  // it (buckets by left edge), a block at a time (ir/ops/nms_select.h); here
  // written box by box, as ONNX describes it, over 1200 corner boxes:
  // clusters that suppress within themselves, more than 256 kept (several
  // blocks), boxes of no area and NaN corners (which overlap nothing), equal
  // scores (lower index first); then wide boxes among them (one whose left
  // edge is left of many small boxes suppresses one to the right of those);
  // then boxes reaching to infinity (one bucket).
  const auto scenario = GENERATE(0, 1, 2);
  INFO("scenario " << scenario);
  const int64_t n = 1200;
  std::mt19937 rng{23};
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> bv, sv;
  for (int64_t i = 0; i < n; ++i) {
    const double cy = double(i % 20) * 50, cx = double(i / 20 % 20) * 50; // 3 per cell
    const double y = cy + u(rng) * 8, x = cx + u(rng) * 8;
    const double h = 10 + u(rng) * 20;
    if (scenario == 1 && i % 25 == 0) // 800 wide at x 0-20, or at x 150-170 (IoU 0.68)
      bv.insert(bv.end(), {0, (i % 50 ? 150 : 0) + u(rng) * 20, 800, 800.0 + (i % 50 ? 150 : 0)});
    else if (scenario == 2 && i % 101 == 0)
      bv.insert(bv.end(), {y, i % 2 ? -INFINITY : x, y + h, i % 3 ? INFINITY : x + h});
    else if (i % 97 == 0)
      bv.insert(bv.end(), {y, x, y, x + h}); // no area
    else if (i % 89 == 0)
      bv.insert(bv.end(), {std::nan(""), x, y + h, x + h});
    else
      bv.insert(bv.end(), {y + h, x, y, x + h}); // corners of the other diagonal
    // (the wide boxes on the left first: those on the right look back for them)
    const double wide = scenario == 1 && i % 25 == 0 ? (i % 50 ? 1.0 : 2.0) : 0.0;
    sv.push_back(wide + (i % 7 == 0 ? 0.5 : u(rng)));
  }
  const ir::Tensor boxes = f32({1, n, 4}, bv), scores = f32({1, 1, n}, sv);
  auto greedy = [&](float iou) {
    struct Box {
      float y0, x0, y1, x1, area;
    };
    auto box = [&](int64_t i) {
      const auto *b = &bv[size_t(4 * i)];
      const float a = float(b[0]), c = float(b[2]), d = float(b[1]), e = float(b[3]);
      const float y0 = std::min(a, c), y1 = std::max(a, c), x0 = std::min(d, e),
                  x1 = std::max(d, e);
      return Box{y0, x0, y1, x1, (y1 - y0) * (x1 - x0)};
    };
    Ints order(size_t(n), 0);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return float(sv[size_t(a)]) > float(sv[size_t(b)]); });
    std::vector<Box> kept;
    Ints rows;
    for (int64_t i : order) {
      const Box a = box(i);
      bool keep = true;
      for (const Box &k : kept) {
        const float y0 = std::max(a.y0, k.y0), x0 = std::max(a.x0, k.x0);
        const float y1 = std::min(a.y1, k.y1), x1 = std::min(a.x1, k.x1);
        if (!(y1 > y0) || !(x1 > x0) || !(a.area > 0) || !(k.area > 0))
          continue;
        const float inter = (y1 - y0) * (x1 - x0), uni = a.area + k.area - inter;
        if (uni > 0 && inter / uni > iou) {
          keep = false;
          break;
        }
      }
      if (keep) {
        kept.push_back(a);
        rows.insert(rows.end(), {0, 0, i});
      }
    }
    return rows;
  };
  const ir::Op *op = ir::OpRegistry::global().find("non_max_suppression");
  const int64_t count = runtimeSymbol("kept_many", n);
  ir::Var b = ir::makeVar("boxes", boxes.type());
  ir::Var s = ir::makeVar("scores", scores.type());
  for (double iou : {0.1, 0.5}) {
    ir::Attrs attrs{{"count", count}, {"max_output", n}, {"iou_threshold", iou}};
    auto normalized = op->normalizeAttrs(attrs);
    REQUIRE(normalized.ok());
    auto ref = op->kernel(std::vector<ir::Tensor>{boxes, scores}, *normalized, ir::Type());
    REQUIRE(ref.ok());
    const Ints expected = greedy(float(iou));
    CHECK((*ref)[0].toInts() == expected);
    CHECK(expected.size() / 3 > 250);     // several blocks of kept boxes
    CHECK(expected.size() / 3 < size_t(n)); // and some suppressed
    // Compiled: the host kernel against the interpreter.
    ir::Module m("nms_many");
    m.set("main", ir::makeFunction({b, s}, item(call("non_max_suppression", {b, s}, attrs), 0)));
    auto model = compileModule(m);
    auto session = runtime::Session::create(model, {1});
    REQUIRE(session.ok());
    checkRun(**session, m, {boxes, scores});
  }
}

TEST_CASE("non_max_suppression: thresholds as data, read when it runs, compiled and interpreted",
          "[non_max_suppression][compile]") {
  const ir::Op *op = ir::OpRegistry::global().find("non_max_suppression");
  const ir::Tensor boxes = f32({1, 3, 4}, {0, 0, 10, 10, 1, 1, 11, 11, 20, 20, 30, 30});
  const ir::Tensor scores = f32({1, 1, 3}, {0.7, 0.9, 0.8});
  auto scalarI64 = [](int64_t v) { return ir::Tensor::fromInts(ir::DType::I64, {}, Ints{v}); };
  // The reference kernel: the data wins over the attributes, max_output
  // within the attribute's bound.
  auto run = [&](int64_t maxOut, double iou, double score) {
    auto normalized = op->normalizeAttrs(ir::Attrs{
        {"count", int64_t(0)}, {"max_output", int64_t(3)}, {"use_score_threshold", true}});
    REQUIRE(normalized.ok());
    const std::vector<ir::Tensor> in{boxes, scores, scalarI64(maxOut), f32({}, {iou}),
                                     f32({}, {score})};
    auto out = op->kernel(in, *normalized, ir::Type());
    REQUIRE(out.ok());
    return (*out)[0].toInts();
  };
  CHECK(run(10, 0.5, 0) == Ints{0, 0, 1, 0, 0, 2});
  CHECK(run(10, 0.7, 0) == Ints{0, 0, 1, 0, 0, 2, 0, 0, 0});
  CHECK(run(1, 0.5, 0) == Ints{0, 0, 1});
  CHECK(run(10, 0.5, 0.85) == Ints{0, 0, 1});
  CHECK(run(-4, 0.5, 0).empty());
  // The relation checks the three.
  auto inferError = [](std::vector<ir::Type> types) {
    std::vector<ir::Expr> args;
    for (size_t i = 0; i < types.size(); ++i)
      args.push_back(ir::makeVar("a" + std::to_string(i), types[i]));
    auto c = ir::makeCall("non_max_suppression", std::move(args), {{"count", int64_t(0)}});
    return c.ok() ? std::string() : c.error().str();
  };
  CHECK_THAT(inferError({boxes.type(), scores.type(), f32({}, {1}).type(), f32({}, {1}).type(),
                         f32({}, {1}).type()}),
             Catch::Contains("argument 2 ('max_output') must be one i64"));
  CHECK_THAT(inferError({boxes.type(), scores.type(), scalarI64(1).type()}),
             Catch::Contains("not 3 arguments"));
  // Compiled once, run at several thresholds: the runtime against the interpreter.
  const int64_t count = runtimeSymbol("kept_data", 2 * 3 * 40);
  ir::Var b = ir::makeVar("boxes", ir::Type::tensor(ir::DType::F32, {2, 40, 4}));
  ir::Var s = ir::makeVar("scores", ir::Type::tensor(ir::DType::F32, {2, 3, 40}));
  ir::Var mo = ir::makeVar("max_output", ir::Type::tensor(ir::DType::I64, {1}));
  ir::Var iou = ir::makeVar("iou", ir::Type::tensor(ir::DType::F32, {}));
  ir::Var sc = ir::makeVar("score", ir::Type::tensor(ir::DType::F32, {1}));
  ir::Expr nms = call("non_max_suppression", {b, s, mo, iou, sc},
                      {{"count", count}, {"max_output", int64_t(40)}, {"use_score_threshold", true}});
  ir::Module m("nms_data");
  m.set("main", ir::makeFunction({b, s, mo, iou, sc}, item(nms, 0)));
  auto model = compileModule(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  std::mt19937 rng{9};
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> bv, sv;
  for (int i = 0; i < 2 * 40; ++i)
    bv.insert(bv.end(), {u(rng) * 30, u(rng) * 30, u(rng) * 30 + 10, u(rng) * 30 + 10});
  for (int i = 0; i < 2 * 3 * 40; ++i)
    sv.push_back(u(rng));
  std::vector<int64_t> counts;
  for (const auto &[maxOut, iouThr, scoreThr] : std::vector<std::tuple<int64_t, double, double>>{
           {40, 0.5, 0.0}, {2, 0.5, 0.0}, {40, 0.2, 0.5}, {1000, 0.9, 0.95}, {0, 0.5, 0.0}}) {
    checkRun(**session, m,
             {f32({2, 40, 4}, bv), f32({2, 3, 40}, sv),
              ir::Tensor::fromInts(ir::DType::I64, {1}, Ints{maxOut}), f32({}, {iouThr}),
              f32({1}, {scoreThr})});
    auto out = (*session)->output(0);
    REQUIRE(out.ok());
    counts.push_back((*out)->shape[0]);
  }
  CHECK(counts[1] == 2 * 3 * 2); // two per batch and class
  CHECK(counts[4] == 0);
  CHECK(counts[0] != counts[2]); // the thresholds changed the selection
}

TEST_CASE("run-time symbols: an output the data sizes cannot be bound before the run",
          "[symbol_values][compile]") {
  const ir::Module m = selectAbove(0.5);
  auto model = compileModule(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  ir::Tensor out(ir::DType::F32, {20});
  const DLTensor outDl = out.dl();
  auto bound = (*session)->setOutput(0, &outDl);
  REQUIRE_FALSE(bound.ok());
  CHECK_THAT(bound.error().str(), Catch::Contains("is known only when the model has run"));
  // Outputs with static shapes still can be.
  ir::Tensor counts(ir::DType::I64, {2});
  const DLTensor countsDl = counts.dl();
  CHECK((*session)->setOutput(2, &countsDl).ok());
}

TEST_CASE("run-time symbols: the plan's through JSON and validation", "[symbol_values][compile]") {
  auto model = compileModule(selectAbove(0.5));
  const runtime::Plan &plan = model->plan();
  auto again = runtime::parsePlan(runtime::serializePlan(plan));
  REQUIRE(again.ok());
  REQUIRE(again->symbols.size() == plan.symbols.size());
  for (size_t k = 0; k < plan.symbols.size(); ++k)
    CHECK(again->symbols[k].runtime == plan.symbols[k].runtime);
  runtime::Plan unset = plan; // a run-time symbol no step sets
  unset.steps.erase(
      std::remove_if(unset.steps.begin(), unset.steps.end(),
                     [](const runtime::Step &s) { return s.kind == runtime::StepKind::SetSymbol; }),
      unset.steps.end());
  auto refused = runtime::validatePlan(unset);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().str(), Catch::Contains("is set by no step"));
  runtime::Plan wrong = plan; // one more SetSymbol, of a derived symbol
  for (const runtime::Step &s : plan.steps)
    if (s.kind == runtime::StepKind::SetSymbol)
      wrong.steps.push_back(s);
  for (size_t k = 0; k < plan.symbols.size(); ++k)
    if (plan.symbols[k].derived())
      wrong.steps.back().target = uint32_t(k);
  auto notRuntime = runtime::validatePlan(wrong);
  REQUIRE_FALSE(notRuntime.ok());
  CHECK_THAT(notRuntime.error().str(), Catch::Contains("is not a run-time symbol of the plan"));
  // Only a loop's scan rows may grow without a bound (the session grows
  // them before a row past the memory is written); a count a kernel writes
  // needs one.
  runtime::Plan unbounded = plan;
  for (runtime::PlanSymbol &s : unbounded.symbols)
    if (s.runtime)
      s.hi = -1;
  auto noBound = runtime::validatePlan(unbounded);
  REQUIRE_FALSE(noBound.ok());
  CHECK_THAT(noBound.error().str(), Catch::Contains("has no upper bound to plan memory for"));
}

TEST_CASE("range: ONNX Range on integers; the ends may be symbolic dims", "[range][compile]") {
  const ir::Op *op = ir::OpRegistry::global().find("range");
  REQUIRE(op);
  auto run = [&](int64_t start, int64_t limit, int64_t delta) {
    auto attrs = op->normalizeAttrs({{"start", start}, {"limit", limit}, {"delta", delta}});
    REQUIRE(attrs.ok());
    auto type = op->inferType({}, *attrs);
    REQUIRE(type.ok());
    auto out = op->kernel({}, *attrs, *type);
    REQUIRE(out.ok());
    return (*out)[0].toInts();
  };
  CHECK(run(0, 5, 1) == Ints{0, 1, 2, 3, 4});
  CHECK(run(1, 8, 3) == Ints{1, 4, 7});
  CHECK(run(5, 0, -2) == Ints{5, 3, 1});
  CHECK(run(3, 1, 1).empty());
  auto zero =
      op->normalizeAttrs({{"start", int64_t(0)}, {"limit", int64_t(3)}, {"delta", int64_t(0)}});
  REQUIRE(zero.ok());
  auto refused = op->inferType({}, *zero);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().str(), Catch::Contains("'delta' must not be 0"));

  // x [1, S] plus its positions 0 .. S-1, and the even ones from 2 (a length
  // computed from S).
  auto s = ir::namedSymbol("S", 1, 64);
  REQUIRE(s.ok());
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {1, *s}));
  ir::Expr pos = call("range", {}, {{"start", int64_t(0)}, {"limit", *s}});
  ir::Expr sum = call("add", {x, call("cast", {pos}, {{"dtype", ir::DType::F32}})});
  ir::Expr even = call("range", {}, {{"start", int64_t(2)}, {"limit", *s}, {"delta", int64_t(2)}});
  ir::Module m("positions");
  m.set("main", ir::makeFunction({x}, ir::makeTuple({sum, even})));
  auto model = compileModule(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  std::mt19937 rng{9};
  for (int64_t size : {1, 2, 3, 7, 64}) {
    INFO("S = " << size);
    checkRun(**session, m, {randomTensor(ir::Type::tensor(ir::DType::F32, {1, size}), rng)});
    auto out = (*session)->output(1);
    REQUIRE(out.ok());
    CHECK((*out)->shape[0] == std::max<int64_t>((size - 2 + 1) / 2, 0));
  }
}

TEST_CASE("unique: groups sorted or by first occurrence; slices along an axis", "[unique]") {
  const ir::Op *op = ir::OpRegistry::global().find("unique");
  REQUIRE(op);
  REQUIRE(op->dataDependent);
  auto run = [&](const ir::Tensor &x, int64_t axis, bool sorted) {
    const std::vector<ir::Tensor> in{x};
    auto out = op->kernel(in, ir::Attrs{{"count", int64_t(0)}, {"axis", axis}, {"sorted", sorted}},
                          ir::Type());
    REQUIRE(out.ok());
    REQUIRE(out->size() == 4);
    return std::array<Ints, 4>{(*out)[0].toInts(), (*out)[1].toInts(), (*out)[2].toInts(),
                               (*out)[3].toInts()};
  };
  // ONNX's example: [2, 1, 1, 3, 4, 3].
  const ir::Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  auto s = run(x, 0, true); // Y = [1, 2, 3, 4]
  CHECK(s[0] == Ints{1, 0, 3, 4});
  CHECK(s[1] == Ints{1, 0, 0, 2, 3, 2});
  CHECK(s[2] == Ints{2, 1, 2, 1});
  CHECK(s[3] == Ints{4});
  auto f = run(x, 0, false); // Y = [2, 1, 3, 4]
  CHECK(f[0] == Ints{0, 1, 3, 4});
  CHECK(f[1] == Ints{0, 1, 1, 2, 3, 2});
  CHECK(f[2] == Ints{1, 2, 2, 1});
  // -0 equals 0; NaNs equal each other and sort last.
  auto z = run(f32({5}, {std::nan(""), 0, -0.0, std::nan(""), -1}), 0, true);
  CHECK(z[0] == Ints{4, 1, 0});
  CHECK(z[2] == Ints{1, 2, 2});
  // Rows of [[1, 0, 0], [1, 0, 0], [2, 3, 4]] along axis 0, columns along 1.
  const ir::Tensor m = f32({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  auto rows = run(m, 0, true);
  CHECK(rows[0] == Ints{0, 2});
  CHECK(rows[1] == Ints{0, 0, 1});
  auto cols = run(m, 1, true); // columns [1, 1, 2], [0, 0, 3], [0, 0, 4]
  CHECK(cols[0] == Ints{1, 2, 0});
  CHECK(cols[1] == Ints{2, 0, 1});
  // Integers exactly (u64 unsigned); nothing at all.
  auto big = run(ir::Tensor::fromInts(ir::DType::I64, {3}, Ints{5, -7, 5}), 0, true);
  CHECK(big[0] == Ints{1, 0});
  auto none = run(f32({0}, {}), 0, true);
  CHECK(none[3] == Ints{0});
}

TEST_CASE("unique: compiled once over a symbolic size; matches the interpreter",
          "[unique][compile]") {
  // x i32[N(1, 12), 2]: the unique rows, their groups and counts, and the
  // unique elements of the flattened x by first occurrence (ONNX Unique with
  // and without 'axis'), each gathered back as ONNX's Y.
  auto n = ir::namedSymbol("N", 1, 12);
  REQUIRE(n.ok());
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::I32, {*n, 2}));
  const int64_t rowsCount = runtimeSymbol("rows", 12), elemsCount = runtimeSymbol("elems", 24);
  ir::Expr rows = call("unique", {x}, {{"count", rowsCount}, {"axis", int64_t(0)}});
  ir::Expr flat = call("reshape", {x}, {{"newshape", Ints{-1}}});
  ir::Expr elems =
      call("unique", {flat}, {{"count", elemsCount}, {"axis", int64_t(0)}, {"sorted", false}});
  ir::Module m("unique");
  m.set("main", ir::makeFunction(
                    {x}, ir::makeTuple({call("gather", {x, item(rows, 0)}, {{"axis", int64_t(0)}}),
                                        item(rows, 1), item(rows, 2),
                                        call("gather", {flat, item(elems, 0)}), item(elems, 1),
                                        item(elems, 2)})));
  auto model = compileModule(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  std::mt19937 rng{11};
  std::uniform_int_distribution<int> pick(-2, 2);
  for (int64_t rowsN : {1, 5, 12, 3}) {
    INFO(rowsN << " rows");
    Ints v(size_t(2 * rowsN));
    for (int64_t &e : v)
      e = pick(rng);
    checkRun(**session, m, {ir::Tensor::fromInts(ir::DType::I32, {rowsN, 2}, v)});
  }
}

TEST_CASE("range_count and iota: ONNX Range over scalars known only at run time",
          "[range_count][iota][compile]") {
  const ir::Op *count = ir::OpRegistry::global().find("range_count");
  REQUIRE(count);
  REQUIRE(count->dataDependent);
  auto n = [&](ir::Tensor s, ir::Tensor l, ir::Tensor d) -> Expected<int64_t> {
    const std::vector<ir::Tensor> in{s, l, d};
    TS_ASSIGN_OR_RETURN(auto out, count->kernel(in, ir::Attrs{{"count", int64_t(0)}}, ir::Type()));
    return out.back().getInt(0);
  };
  auto i = [](int64_t v) { return ir::Tensor::fromInts(ir::DType::I64, {}, Ints{v}); };
  auto f = [](double v) {
    return ir::Tensor::fromDoubles(ir::DType::F32, {}, std::vector<double>{v});
  };
  CHECK(*n(i(3), i(50), i(2)) == 24);
  CHECK(*n(i(10), i(-3), i(-4)) == 4);
  CHECK(*n(i(3), i(3), i(1)) == 0);
  CHECK(*n(i(5), i(1), i(1)) == 0);
  CHECK(*n(f(1.0), f(2.05), f(0.25)) == 5); // ceil(4.2)
  CHECK_THAT(n(i(0), i(5), i(0)).error().str(), Catch::Contains("a range needs a non-zero step"));

  // start + iota(N) * delta, N = range_count(start, limit, delta): an
  // unbounded run-time symbol, planned at 16 first and grown mid-run.
  auto N = ir::runtimeSymbol("N", ir::kUnbounded);
  REQUIRE(N.ok());
  for (ir::DType dt : {ir::DType::I64, ir::DType::F32}) {
    INFO(ir::dtypeName(dt));
    const ir::Type scalar = ir::Type::tensor(dt, {});
    ir::Var s = ir::makeVar("s", scalar), l = ir::makeVar("l", scalar),
            d = ir::makeVar("d", scalar);
    ir::Expr c = call("range_count", {s, l, d}, {{"count", *N}});
    ir::Expr idx = call("iota", {item(c, 0)}, {{"count", *N}});
    ir::Expr steps = dt == ir::DType::I64 ? idx : call("cast", {idx}, {{"dtype", dt}});
    ir::Expr y = call("add", {call("multiply", {steps, d}), s});
    ir::Module m("ranges");
    m.set("main", ir::makeFunction({s, l, d}, ir::makeTuple({y, call("multiply", {y, y})})));
    auto model = compileModule(m);
    const runtime::Plan &plan = model->plan();
    REQUIRE(plan.symbols.size() == 1);
    CHECK(plan.symbols[0].runtime);
    CHECK(plan.symbols[0].hi < 0);
    auto session = runtime::Session::create(model, {2});
    REQUIRE(session.ok());
    auto scalarOf = [&](double v) {
      return ir::Tensor::fromDoubles(dt, {}, std::vector<double>{v});
    };
    // 24 and 200 elements grow the memory planned for 16; 0 and 5 reuse it.
    for (auto [a, b, st] : std::vector<std::array<double, 3>>{
             {3, 50, 2}, {0, 0, 1}, {-7, 193, 1}, {10, -3, -4}, {1, 6, 1}}) {
      INFO("range(" << a << ", " << b << ", " << st << ")");
      checkRun(**session, m, {scalarOf(a), scalarOf(b), scalarOf(st)});
      auto out = (*session)->output(0);
      REQUIRE(out.ok());
      CHECK((*out)->shape[0] == *n(scalarOf(a), scalarOf(b), scalarOf(st)));
    }
    // A zero step: the run fails naming the step; the interpreter refuses too.
    std::vector<ir::Tensor> zero{scalarOf(0), scalarOf(5), scalarOf(0)};
    for (size_t k = 0; k < zero.size(); ++k) {
      DLTensor t = zero[k].dl();
      REQUIRE((*session)->setInput(k, t).ok());
    }
    auto ran = (*session)->run();
    REQUIRE_FALSE(ran.ok());
    CHECK_THAT(ran.error().str(), Catch::Contains("range_count"));
    CHECK_FALSE(interp::run(m, zero).ok());
  }
}

TEST_CASE("check: passes its argument on while the rule holds; stops the run with its message",
          "[check][compile]") {
  const ir::Type v3 = ir::Type::tensor(ir::DType::I64, {3});
  ir::Var x = ir::makeVar("x", v3);
  ir::Expr ok = call("greater_equal", {x, ir::makeConstant(ir::Tensor::fromInts(
                                              ir::DType::I64, {}, Ints{0}))});
  CHECK_THAT(ir::makeCall("check", {x, x}, {{"message", std::string("m")}}).error().str(),
             Catch::Contains("must be a bool tensor"));
  CHECK_THAT(ir::makeCall("check", {x, ok}, {{"message", std::string()}}).error().str(),
             Catch::Contains("must say what the data broke"));
  const std::string message = "no negative dims";
  ir::Expr checked = call("check", {x, ok}, {{"message", message}});
  CHECK(checked->type() == v3);
  // The reference kernel.
  const ir::Op *op = ir::OpRegistry::global().find("check");
  auto run = [&](Ints values) {
    const ir::Tensor t = ir::Tensor::fromInts(ir::DType::I64, {3}, values);
    ir::Tensor holds(ir::DType::Bool, {3});
    for (int64_t i = 0; i < 3; ++i)
      holds.setInt(i, values[size_t(i)] >= 0);
    const std::vector<ir::Tensor> in{t, holds};
    return op->kernel(in, ir::Attrs{{"message", message}}, v3);
  };
  REQUIRE(run({1, 0, 7}).ok());
  CHECK(run({1, 0, 7})->at(0).toInts() == Ints{1, 0, 7});
  CHECK(run({1, -2, 7}).error().str() == message);
  // Compiled: the result used (doubled), the rule checked at run time; a
  // failed run names the step and says the message; the session runs on.
  ir::Module m("checked");
  m.set("main", ir::makeFunction({x}, call("add", {checked, checked})));
  auto model = compileModule(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  auto values = [](Ints v) { return ir::Tensor::fromInts(ir::DType::I64, {3}, v); };
  checkRun(**session, m, {values({4, 0, 9})});
  const ir::Tensor badValues = values({4, -1, 9});
  DLTensor bad = badValues.dl();
  REQUIRE((*session)->setInput(0, bad).ok());
  auto ran = (*session)->run();
  REQUIRE_FALSE(ran.ok());
  CHECK_THAT(ran.error().str(), Catch::Contains("check 'check': no negative dims"));
  CHECK_THAT(interp::run(m, {badValues}).error().str(), Catch::Contains(message));
  checkRun(**session, m, {values({0, 0, 0})});
}
