//===- unit/ops_sequence_test.cpp - Sequences of run-time length ---------===//
//
// The sequence ops (ir/ops/sequence.cpp): their relations and messages, the
// text form of sequence types, the reference interpreter, and compiled
// artifacts (Sequence steps, runtime/plan.h) run by the runtime against the
// interpreter: every op on ragged sequences given as inputs, a loop that
// carries a sequence and inserts elements of run-time size taken out of
// another (their buffer grown mid-run), lengths 0 to 24; the errors of
// binding and running them; the C API's sequence functions.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "compile/compile.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/symbol.h"
#include "runtime/session.h"
#include "tessera/c/runtime.h"

#include <random>

using namespace tessera;
using ir::DType;
using ir::Type;
using test::f32;
using test::i64;

namespace {

const Type kSeqF32 = Type::sequence(DType::F32, 1);

ir::Expr call(const char *op, std::vector<ir::Expr> args, ir::Attrs a = {}) {
  return ir::expectOk(ir::makeCall(op, std::move(args), std::move(a), op));
}

ir::Attrs attrs(std::initializer_list<std::pair<const char *, ir::AttrValue>> list) {
  ir::Attrs a;
  for (const auto &[k, v] : list)
    a.set(k, v);
  return a;
}

int64_t runtimeDim(const char *name) {
  auto d = ir::runtimeSymbol(name, ir::kUnbounded);
  REQUIRE(d.ok());
  return *d;
}

/// main(s: seq(f32[_]), x: f32[3], p: i64[]) ->
///   (erased, at, length, concat, stacked pair):
///   s1 = s + [x]; s2 = s1 with x * 2 inserted before p; at = s2[p];
///   length = len(s2); erased = s2 without its last; concat = concat(erased);
///   stacked = stack([x, x]) on a new axis 1.
ir::Module everyOp() {
  ir::Var s = ir::makeVar("s", kSeqF32), x = ir::makeVar("x", Type::tensor(DType::F32, {3})),
          p = ir::makeVar("p", Type::tensor(DType::I64, {}));
  ir::Expr s1 = call("seq_insert", {s, x});
  ir::Expr x2 = call("add", {x, x});
  ir::Expr s2 = call("seq_insert", {s1, x2, p});
  ir::Expr at = call("seq_at", {s2, p}, attrs({{"shape", ir::Shape{runtimeDim("A")}}}));
  ir::Expr length = call("seq_length", {s2});
  ir::Expr erased = call("seq_erase", {s2});
  ir::Expr concat = call("concat_from_seq", {erased},
                         attrs({{"axis", int64_t(0)}, {"shape", ir::Shape{runtimeDim("C")}}}));
  ir::Expr pair = call("seq_construct", {x, x});
  ir::Expr stacked =
      call("concat_from_seq", {pair},
           attrs({{"axis", int64_t(1)}, {"new_axis", true},
                  {"shape", ir::Shape{runtimeDim("S0"), runtimeDim("S1")}}}));
  ir::Module m("every_op");
  m.set("main", ir::makeFunction({s, x, p}, ir::makeTuple({erased, at, length, concat, stacked})));
  return m;
}

/// main(in: seq(f32[_])) -> (out, concat(out)): a loop over len(in) that
/// inserts 2 * in[-1 - i] at the front of the carried sequence (which starts
/// empty), so out is 2 * in, and every element it takes has a run-time size.
ir::Module loopOver() {
  ir::Var in = ir::makeVar("in", kSeqF32);
  ir::Var i = ir::makeVar("i", Type::tensor(DType::I64, {})),
          c = ir::makeVar("c", Type::tensor(DType::Bool, {})), acc = ir::makeVar("acc", kSeqF32),
          captured = ir::makeVar("in_body", kSeqF32);
  ir::Expr minusOne = ir::makeConstant(i64({}, {-1}));
  ir::Expr zero = ir::makeConstant(i64({}, {0}));
  ir::Expr pos = call("subtract", {minusOne, i});
  ir::Expr e = call("seq_at", {captured, pos}, attrs({{"shape", ir::Shape{runtimeDim("E")}}}));
  ir::Expr doubled = call("add", {e, e});
  ir::Expr next = call("seq_insert", {acc, doubled, zero});
  ir::Function body = ir::makeFunction({i, c, acc, captured}, ir::makeTuple({c, next}));
  ir::Expr trip = call("seq_length", {in});
  ir::Expr yes = ir::makeConstant(ir::Tensor::fromInts(DType::Bool, {}, std::vector<int64_t>{1}));
  ir::Expr start = call("seq_empty", {}, attrs({{"dtype", DType::F32}, {"rank", int64_t(1)}}));
  ir::Expr loop = call("loop", {trip, yes, body, start, in}, attrs({{"carried", int64_t(1)}}));
  ir::Expr out = ir::expectOk(ir::makeTupleGetItem(loop, 0));
  ir::Expr concat = call("concat_from_seq", {out},
                         attrs({{"axis", int64_t(0)}, {"shape", ir::Shape{runtimeDim("T")}}}));
  ir::Module m("loop_over");
  m.set("main", ir::makeFunction({in}, ir::makeTuple({out, concat})));
  return m;
}

std::vector<ir::Tensor> ragged(std::vector<int64_t> sizes, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<ir::Tensor> out;
  for (int64_t n : sizes) {
    std::vector<double> v;
    for (int64_t k = 0; k < n; ++k)
      v.push_back(u(rng));
    out.push_back(f32({n}, v));
  }
  return out;
}

std::shared_ptr<const runtime::LoadedModel> compiled(const ir::Module &m) {
  auto r = compile::compileModule(m, {}, nullptr);
  if (!r.ok())
    FAIL(r.error().str());
  auto model = runtime::LoadedModel::load(r->artifact, m.name() + ".tsr");
  if (!model.ok())
    FAIL(model.error().str());
  return *model;
}

/// Binds `inputs` (tensors and sequences), runs, and compares every output
/// (tensors and sequences, element by element, exactly) with the
/// interpreter's.
void runAndCompare(runtime::Session &session, const ir::Module &m,
                   const std::vector<interp::Value> &inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].isSequence) {
      std::vector<DLTensor> elements;
      for (const auto &e : inputs[i].fields)
        elements.push_back(e.tensor.dl());
      REQUIRE(session.setInputSequence(i, elements).ok());
    } else {
      REQUIRE(session.setInput(i, inputs[i].tensor.dl()).ok());
    }
  }
  auto ran = session.run();
  if (!ran.ok())
    FAIL(ran.error().str());
  auto want = interp::runValues(m, inputs);
  if (!want.ok())
    FAIL(want.error().str());
  const std::vector<interp::Value> &expected = want->fields;
  REQUIRE(expected.size() == session.model().outputs().size());
  for (size_t o = 0; o < expected.size(); ++o) {
    INFO("output " << o);
    if (expected[o].isSequence) {
      auto got = session.outputSequence(o);
      REQUIRE(got.ok());
      REQUIRE(got->size() == expected[o].fields.size());
      for (size_t k = 0; k < got->size(); ++k) {
        INFO("element " << k);
        const ir::Tensor t = ir::Tensor::copyOf((*got)[k]);
        CHECK(t.shape() == expected[o].fields[k].tensor.shape());
        CHECK(t.toDoubles() == expected[o].fields[k].tensor.toDoubles());
      }
      continue;
    }
    auto got = session.output(o);
    REQUIRE(got.ok());
    const ir::Tensor t = ir::Tensor::copyOf(**got);
    CHECK(t.shape() == expected[o].tensor.shape());
    CHECK(t.toDoubles() == expected[o].tensor.toDoubles());
  }
}

} // namespace

TEST_CASE("sequence types: text form, uniqued, parsed back", "[op][seq_empty]") {
  CHECK(Type::sequence(DType::F32, 2).str() == "seq(f32[_, _])");
  CHECK(Type::sequence(DType::I64).str() == "seq(i64)");
  CHECK(Type::sequence(DType::F32, 0).str() == "seq(f32[])");
  CHECK(Type::sequence(DType::F32, 1) == kSeqF32);
  CHECK(Type::sequence(DType::F32, 1) != Type::sequence(DType::F32));
  CHECK_FALSE(kSeqF32.isStatic());
  auto m = ir::parseModule(R"(
def @main(%s: seq(f32[_]), %t: seq(i64)) -> (i64[], seq(f32[_])) {
  %n = seq_length(%t)
  %e = seq_empty() {dtype=f32, rank=1}
  %o = tuple(%n, %e)
  return %o
}
)");
  if (!m.ok())
    FAIL(m.error().str());
  const std::string printed = ir::printModule(*m);
  CHECK(printed.find("%s: seq(f32[_]), %t: seq(i64)") != std::string::npos);
  auto again = ir::parseModule(printed);
  REQUIRE(again.ok());
  CHECK(ir::printModule(*again) == printed);
  auto bad = ir::parseModule("def @main(%s: seq(f32[2])) -> seq(f32[2]) {\n  return %s\n}\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().str().find("expected '_'") != std::string::npos);
}

TEST_CASE("sequence ops: relations and their messages",
          "[op][seq_empty][seq_construct][seq_insert][seq_erase][seq_at][seq_length]"
          "[concat_from_seq]") {
  const Type x2 = Type::tensor(DType::F32, {2}), x23 = Type::tensor(DType::F32, {2, 3}),
             p = Type::tensor(DType::I64, {});
  CHECK(test::inferred("seq_empty", {}, attrs({{"dtype", DType::I32}, {"rank", int64_t(2)}})) ==
        Type::sequence(DType::I32, 2));
  CHECK(test::inferred("seq_construct", {x2, x2}) == kSeqF32);
  CHECK(test::inferred("seq_construct", {x2, x23}) == Type::sequence(DType::F32));
  CHECK(test::inferError("seq_construct", {x2, Type::tensor(DType::I64, {2})})
            .find("cannot hold i64[2]") != std::string::npos);
  CHECK(test::inferred("seq_insert", {kSeqF32, x2}) == kSeqF32);
  CHECK(test::inferred("seq_insert", {kSeqF32, x23, p}) == Type::sequence(DType::F32));
  CHECK(test::inferError("seq_insert", {x2, x2}).find("must be a sequence") != std::string::npos);
  CHECK(test::inferError("seq_insert", {kSeqF32, x2, Type::tensor(DType::F32, {})})
            .find("('position') must be one integer") != std::string::npos);
  CHECK(test::inferred("seq_erase", {kSeqF32}) == kSeqF32);
  CHECK(test::inferred("seq_length", {kSeqF32}) == p);
  const int64_t r = runtimeDim("R");
  CHECK(test::inferred("seq_at", {kSeqF32, p}, attrs({{"shape", ir::Shape{r}}})) ==
        Type::tensor(DType::F32, {r}));
  CHECK(test::inferError("seq_at", {kSeqF32, p}, attrs({{"shape", ir::Shape{r, 2}}}))
            .find("has rank 2, the result must have rank 1") != std::string::npos);
  CHECK(test::inferred("concat_from_seq", {kSeqF32},
                       attrs({{"axis", int64_t(1)}, {"new_axis", true}, {"shape", ir::Shape{2, r}}})) ==
        Type::tensor(DType::F32, {2, r}));
  CHECK(test::inferError("concat_from_seq", {kSeqF32},
                         attrs({{"axis", int64_t(3)}, {"shape", ir::Shape{r}}}))
            .find("out of range") != std::string::npos);
}

TEST_CASE("sequence ops: the interpreter on ragged sequences",
          "[op][seq_construct][seq_insert][seq_erase][seq_at][seq_length][concat_from_seq]") {
  const ir::Module m = everyOp();
  const ir::Tensor x = f32({3}, {1, 2, 3});
  auto out = interp::runValues(m, {interp::Value::ofSequence({f32({2}, {7, 8}), f32({1}, {9})}),
                                   interp::Value::ofTensor(x),
                                   interp::Value::ofTensor(i64({}, {1}))});
  if (!out.ok())
    FAIL(out.error().str());
  // s2 = [[7, 8], 2x, [9], x]; erased = [[7, 8], 2x, [9]].
  const interp::Value &erased = out->fields[0];
  REQUIRE(erased.isSequence);
  REQUIRE(erased.fields.size() == 3);
  CHECK(erased.fields[1].tensor.toDoubles() == std::vector<double>{2, 4, 6});
  CHECK(out->fields[1].tensor.toDoubles() == std::vector<double>{2, 4, 6});
  CHECK(out->fields[2].tensor.getInt(0) == 4);
  CHECK(out->fields[3].tensor.toDoubles() == std::vector<double>{7, 8, 2, 4, 6, 9});
  CHECK(out->fields[4].tensor.shape() == ir::Shape{3, 2});
  CHECK(out->fields[4].tensor.toDoubles() == std::vector<double>{1, 1, 2, 2, 3, 3});
  // A position past the end, an empty concat: errors that say so.
  auto past = interp::runValues(m, {interp::Value::ofSequence({}), interp::Value::ofTensor(x),
                                    interp::Value::ofTensor(i64({}, {5}))});
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().str().find("position 5 is out of range for a sequence of 1 element") !=
        std::string::npos);
}

TEST_CASE("sequence ops: compiled, the runtime matches the interpreter",
          "[op][seq_construct][seq_insert][seq_erase][seq_at][seq_length][concat_from_seq]") {
  const ir::Module m = everyOp();
  auto model = compiled(m);
  REQUIRE(model->inputs()[0].sequence);
  CHECK(model->inputs()[0].str() == "seq(f32[_])");
  CHECK(model->outputs()[0].sequence);
  auto session = runtime::Session::create(model);
  REQUIRE(session.ok());
  std::mt19937 rng{3};
  const ir::Tensor x = f32({3}, {1, -2, 3});
  for (const auto &[sizes, position] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{}, 0}, {{2, 1}, 1}, {{4, 0, 7}, -1}, {{1, 2, 3, 4, 5}, -6}, {{30, 1}, 3}}) {
    INFO("sizes " << sizes.size() << ", position " << position);
    runAndCompare(**session, m,
                  {interp::Value::ofSequence(ragged(sizes, rng)), interp::Value::ofTensor(x),
                   interp::Value::ofTensor(i64({}, {position}))});
  }
  // A position out of range stops the run at the step, which says why.
  auto &s = **session;
  REQUIRE(s.setInputSequence(0, std::vector<DLTensor>{}).ok());
  const ir::Tensor far = i64({}, {7});
  REQUIRE(s.setInput(2, far.dl()).ok());
  auto ran = s.run();
  REQUIRE_FALSE(ran.ok());
  CHECK(ran.error().str().find("position 7 is out of range for a sequence of 1 element") !=
        std::string::npos);
  CHECK(ran.error().str().find("seq_insert") != std::string::npos);
}

TEST_CASE("loop carrying a sequence: elements of run-time size, compiled and interpreted",
          "[op][loop][seq_at][seq_insert][seq_empty][seq_length][concat_from_seq]") {
  const ir::Module m = loopOver();
  auto model = compiled(m);
  auto session = runtime::Session::create(model);
  REQUIRE(session.ok());
  std::mt19937 rng{5};
  // Sizes past what the element's buffer was first planned for: it grows.
  for (const std::vector<int64_t> &sizes :
       std::vector<std::vector<int64_t>>{{3}, {1, 2, 3, 4, 5}, {0, 40, 2, 100, 1}}) {
    INFO(sizes.size() << " elements");
    runAndCompare(**session, m, {interp::Value::ofSequence(ragged(sizes, rng))});
  }
  std::vector<int64_t> many;
  for (int64_t k = 0; k < 24; ++k)
    many.push_back((k * 7) % 11);
  runAndCompare(**session, m, {interp::Value::ofSequence(ragged(many, rng))});
  // No element: the loop runs no iteration, and concatenating nothing is
  // refused by both, by the same rule.
  REQUIRE((*session)->setInputSequence(0, std::vector<DLTensor>{}).ok());
  auto empty = (*session)->run();
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().str().find("cannot concatenate an empty sequence") != std::string::npos);
  auto emptyInterp = interp::runValues(m, {interp::Value::ofSequence({})});
  REQUIRE_FALSE(emptyInterp.ok());
  CHECK(emptyInterp.error().str().find("cannot concatenate an empty sequence") !=
        std::string::npos);
  // out is 2 * in, element by element.
  const auto in = ragged({2, 5}, rng);
  auto want = interp::runValues(m, {interp::Value::ofSequence(in)});
  REQUIRE(want.ok());
  REQUIRE(want->fields[0].fields.size() == 2);
  for (size_t k = 0; k < 2; ++k)
    for (int64_t j = 0; j < in[k].numel(); ++j)
      CHECK(want->fields[0].fields[k].tensor.getDouble(j) == 2 * in[k].getDouble(j));
}

TEST_CASE("sequence inputs and outputs: binding errors name the input and what is wrong",
          "[op][seq_insert]") {
  auto model = compiled(everyOp());
  auto session = runtime::Session::create(model);
  REQUIRE(session.ok());
  auto &s = **session;
  const ir::Tensor x = f32({3}, {1, 2, 3}), m23 = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const ir::Tensor ints = i64({2}, {1, 2});
  auto asTensor = s.setInput(0, x.dl());
  REQUIRE_FALSE(asTensor.ok());
  CHECK(asTensor.error().str().find("input 's' is a sequence (seq(f32[_])): bind it with "
                                    "setInputSequence") != std::string::npos);
  auto rank = s.setInputSequence(0, std::vector<DLTensor>{x.dl(), m23.dl()});
  REQUIRE_FALSE(rank.ok());
  CHECK(rank.error().str().find("input 's' element 1: expected rank 1, got 2") !=
        std::string::npos);
  auto dtype = s.setInputSequence(0, std::vector<DLTensor>{ints.dl()});
  REQUIRE_FALSE(dtype.ok());
  CHECK(dtype.error().str().find("expected dtype f32, got i64") != std::string::npos);
  auto notSequence = s.setInputSequence(1, std::vector<DLTensor>{x.dl()});
  REQUIRE_FALSE(notSequence.ok());
  CHECK(notSequence.error().str().find("input 'x' is a tensor (f32[3]), not a sequence") !=
        std::string::npos);
  REQUIRE(s.setInput(1, x.dl()).ok());
  const ir::Tensor p = i64({}, {0});
  REQUIRE(s.setInput(2, p.dl()).ok());
  auto unset = s.run();
  REQUIRE_FALSE(unset.ok());
  CHECK(unset.error().str().find("input 's' was not set") != std::string::npos);
  REQUIRE(s.setInputSequence(0, std::vector<DLTensor>{}).ok());
  REQUIRE(s.run().ok());
  CHECK_FALSE(s.output(0).ok()); // a sequence
  CHECK(s.output(0).error().str().find("read it with outputSequence") != std::string::npos);
  CHECK_FALSE(s.outputSequence(1).ok()); // a tensor
  // The elements were copied: changing the caller's data changes nothing.
  ir::Tensor mine = f32({2}, {5, 6});
  REQUIRE(s.setInputSequence(0, std::vector<DLTensor>{mine.dl()}).ok());
  mine.data<float>()[0] = -100;
  REQUIRE(s.run().ok());
  auto erased = s.outputSequence(0);
  REQUIRE(erased.ok());
  REQUIRE(erased->size() == 2); // [2x, mine, x] without the last
  CHECK(ir::Tensor::copyOf((*erased)[1]).toDoubles() == std::vector<double>{5, 6});
}

TEST_CASE("sequence inputs and outputs through the C API", "[op][seq_insert]") {
  auto r = compile::compileModule(everyOp(), {}, nullptr);
  REQUIRE(r.ok());
  tessera_model_t *model = nullptr;
  REQUIRE(tessera_model_load_bytes(r->artifact.data(), r->artifact.size(), &model) == nullptr);
  CHECK(tessera_model_input_is_sequence(model, 0) == 1);
  CHECK(tessera_model_input_is_sequence(model, 1) == 0);
  CHECK(tessera_model_input_is_sequence(model, 9) == 0);
  CHECK(tessera_model_output_is_sequence(model, 0) == 1);
  DLDataType dtype{};
  int32_t ndim = 0;
  REQUIRE(tessera_model_input_info(model, 0, &dtype, &ndim, nullptr) == nullptr);
  CHECK(dtype.code == kDLFloat);
  CHECK(ndim == 1); // the elements' rank
  tessera_session_t *session = nullptr;
  REQUIRE(tessera_session_create(model, nullptr, &session) == nullptr);
  const ir::Tensor a = f32({2}, {1, 2}), b = f32({1}, {3}), x = f32({3}, {4, 5, 6});
  const ir::Tensor p = i64({}, {-1});
  const DLTensor elements[] = {a.dl(), b.dl()};
  REQUIRE(tessera_session_set_input_sequence(session, 0, elements, 2) == nullptr);
  DLTensor xt = x.dl(), pt = p.dl();
  REQUIRE(tessera_session_set_input(session, 1, &xt) == nullptr);
  REQUIRE(tessera_session_set_input(session, 2, &pt) == nullptr);
  tessera_status_t *st = tessera_session_set_input_sequence(session, 1, elements, 2);
  REQUIRE(st != nullptr);
  CHECK(tessera_status_code(st) == TESSERA_STATUS_INVALID_ARGUMENT);
  tessera_status_free(st);
  REQUIRE(tessera_session_run(session) == nullptr);
  const DLTensor *out = nullptr;
  size_t count = 0;
  REQUIRE(tessera_session_get_output_sequence(session, 0, &out, &count) == nullptr);
  // s2 = [a, b, 2x, x] (2x inserted before the last); erased = [a, b, 2x].
  REQUIRE(count == 3);
  CHECK(ir::Tensor::copyOf(out[2]).toDoubles() == std::vector<double>{8, 10, 12});
  st = tessera_session_get_output_sequence(session, 1, &out, &count);
  REQUIRE(st != nullptr);
  CHECK(tessera_status_code(st) == TESSERA_STATUS_INVALID_ARGUMENT);
  tessera_status_free(st);
  tessera_session_release(session);
  tessera_model_release(model);
}
