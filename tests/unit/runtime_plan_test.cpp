//===- tests/unit/runtime_plan_test.cpp - The executor plan ---------------===//
//
// dtype names and TensorInfo; planMemory on a chain, a diamond and random
// plans (no two simultaneously live activations share a byte, checked by
// brute force against lifetimes computed here); the JSON round trip; each
// validatePlan and parsePlan error with its exact message.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan.h"
#include "tessera/c/dtype.h"

#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <regex>

using namespace tessera;
using namespace tessera::runtime;

namespace {

const DLDataType kF32{kDLFloat, 32, 1};

TensorInfo f32(std::vector<int64_t> shape, std::string name = "") {
  return TensorInfo{std::move(name), kF32, std::move(shape)};
}

/// A plan under construction.
struct PlanBuilder {
  Plan plan;

  uint32_t input(TensorInfo info) {
    plan.inputs.push_back(add({BufferKind::Input, uint32_t(plan.inputs.size()), 0, info}));
    return plan.inputs.back();
  }
  uint32_t output(TensorInfo info) {
    plan.outputs.push_back(add({BufferKind::Output, uint32_t(plan.outputs.size()), 0, info}));
    return plan.outputs.back();
  }
  uint32_t constant(TensorInfo info) {
    uint64_t offset = plan.weightsBytes;
    plan.weightsBytes += (info.bytes() + 63) / 64 * 64;
    return add({BufferKind::Constant, 0, offset, info});
  }
  uint32_t activation(TensorInfo info) { return add({BufferKind::Activation, 0, 0, info}); }
  void host(std::string symbol, std::vector<uint32_t> ins, std::vector<uint32_t> outs,
            std::string label = "") {
    Step s;
    s.kind = StepKind::Host;
    s.symbol = std::move(symbol);
    s.numInputs = uint32_t(ins.size());
    s.args = ins;
    s.args.insert(s.args.end(), outs.begin(), outs.end());
    s.label = label.empty() ? "op '" + s.symbol + "'" : label;
    plan.steps.push_back(std::move(s));
  }
  uint32_t add(Buffer b) {
    plan.buffers.push_back(std::move(b));
    return uint32_t(plan.buffers.size() - 1);
  }
};

/// Lifetimes computed independently: [first write, last read] per activation.
void checkNoOverlap(const Plan &plan) {
  const size_t nb = plan.buffers.size();
  std::vector<int64_t> first(nb, -1), last(nb, -1);
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (size_t a = 0; a < plan.steps[s].args.size(); ++a) {
      uint32_t b = plan.steps[s].args[a];
      if (a >= plan.steps[s].numInputs && first[b] < 0)
        first[b] = int64_t(s);
      if (a < plan.steps[s].numInputs)
        last[b] = int64_t(s);
    }
  for (size_t i = 0; i < nb; ++i) {
    const Buffer &bi = plan.buffers[i];
    if (bi.kind != BufferKind::Activation)
      continue;
    REQUIRE(bi.offset % kBufferAlignment == 0);
    REQUIRE(bi.offset + bi.info.bytes() <= plan.arenaBytes);
    for (size_t j = i + 1; j < nb; ++j) {
      const Buffer &bj = plan.buffers[j];
      if (bj.kind != BufferKind::Activation)
        continue;
      int64_t li = std::max(first[i], last[i]), lj = std::max(first[j], last[j]);
      bool liveTogether = first[i] <= lj && first[j] <= li;
      bool overlap =
          bi.offset < bj.offset + bj.info.bytes() && bj.offset < bi.offset + bi.info.bytes();
      INFO("buffers " << i << " and " << j);
      REQUIRE(!(liveTogether && overlap));
    }
  }
}

std::string validateError(const Plan &plan) {
  auto s = validatePlan(plan);
  return s.ok() ? "" : s.error().str();
}

std::string parseError(const std::string &json) {
  auto p = parsePlan(json);
  return p.ok() ? "" : p.error().str();
}

/// x -> add 'a0' -> act -> relu 'r' -> out, plus constant w.
PlanBuilder smallPlan() {
  PlanBuilder b;
  uint32_t x = b.input(f32({2, 3}, "x"));
  uint32_t w = b.constant(f32({2, 3}));
  uint32_t a = b.activation(f32({2, 3}));
  uint32_t out = b.output(f32({2, 3}, "y"));
  b.host("f0", {x, w}, {a}, "add 'a0'");
  b.host("f1", {a}, {out}, "relu 'r'");
  REQUIRE(planMemory(b.plan).ok());
  return b;
}

} // namespace

TEST_CASE("dtype names round trip; TensorInfo sizes and text", "[runtime]") {
  for (const char *name : {"f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "u8", "u16",
                           "u32", "u64", "bool"}) {
    auto t = parseDtypeString(name);
    REQUIRE(t.ok());
    CHECK(dtypeString(*t) == name);
  }
  CHECK(parseDtypeString("f8").error().str() ==
        "unknown dtype 'f8' (expected one of f32, f16, bf16, f64, i8, i16, i32, i64, u8, u16, "
        "u32, u64, bool)");
  CHECK(dtypeString(DLDataType{kDLFloat, 32, 4}) == "dtype(code 2, bits 32, lanes 4)");
  CHECK(f32({1, 3, 224, 224}).str() == "f32[1, 3, 224, 224]");
  CHECK(f32({1, 3, 224, 224}).bytes() == 4u * 3 * 224 * 224);
  CHECK(f32({}).str() == "f32[]");
  CHECK(f32({}).bytes() == 4);
  CHECK((TensorInfo{"", *parseDtypeString("bool"), {5}}).bytes() == 5);
  CHECK((TensorInfo{"", *parseDtypeString("bf16"), {5}}).bytes() == 10);
}

TEST_CASE("planMemory reuses the bytes of a chain", "[runtime]") {
  PlanBuilder b;
  uint32_t prev = b.input(f32({250}, "x"));
  for (int i = 0; i < 6; ++i) {
    uint32_t next = b.activation(f32({250})); // 1000 bytes -> 1024
    b.host("f" + std::to_string(i), {prev}, {next});
    prev = next;
  }
  b.host("last", {prev}, {b.output(f32({250}, "y"))});
  REQUIRE(planMemory(b.plan).ok());
  // Two live at a time: a step's input and output never share bytes.
  CHECK(b.plan.arenaBytes == 2048);
  CHECK(b.plan.activationBytesNoReuse == 6 * 1024);
  checkNoOverlap(b.plan);
  CHECK(validateError(b.plan) == "");
}

TEST_CASE("planMemory on a diamond keeps both branches live", "[runtime]") {
  PlanBuilder b;
  uint32_t x = b.input(f32({16}, "x"));
  uint32_t a = b.activation(f32({16})), l = b.activation(f32({32})), r = b.activation(f32({8}));
  uint32_t d = b.activation(f32({16})), e = b.activation(f32({16}));
  b.host("a", {x}, {a});
  b.host("l", {a}, {l});
  b.host("r", {a}, {r});
  b.host("d", {l, r}, {d});
  b.host("e", {d}, {e});
  b.host("out", {e, x}, {b.output(f32({16}, "y"))});
  REQUIRE(planMemory(b.plan).ok());
  CHECK(b.plan.arenaBytes < b.plan.activationBytesNoReuse);
  checkNoOverlap(b.plan);
  CHECK(validateError(b.plan) == "");
}

TEST_CASE("planMemory never overlaps live activations on random plans", "[runtime]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    PlanBuilder b;
    std::vector<uint32_t> live{b.input(f32({int64_t(rng() % 64 + 1)}, "x"))};
    const int steps = int(rng() % 30) + 1;
    for (int s = 0; s < steps; ++s) {
      std::vector<uint32_t> ins, outs;
      int nin = int(rng() % 3) + 1;
      for (int i = 0; i < nin; ++i)
        ins.push_back(live[rng() % live.size()]);
      int nout = int(rng() % 2) + 1;
      for (int o = 0; o < nout; ++o) {
        outs.push_back(b.activation(f32({int64_t(rng() % 300)})));
        live.push_back(outs.back());
      }
      b.host("s" + std::to_string(s), ins, outs);
    }
    b.host("end", {live.back()}, {b.output(f32({1}, "y"))});
    INFO("trial " << trial);
    REQUIRE(planMemory(b.plan).ok());
    CHECK(b.plan.arenaBytes <= b.plan.activationBytesNoReuse);
    checkNoOverlap(b.plan);
    REQUIRE(validateError(b.plan) == "");
  }
}

TEST_CASE("planMemory refuses an activation read before it is written", "[runtime]") {
  PlanBuilder b;
  uint32_t a = b.activation(f32({4}));
  b.host("f", {a}, {b.output(f32({4}, "y"))}, "relu 'r'");
  auto s = planMemory(b.plan);
  REQUIRE(!s.ok());
  CHECK(s.error().str() ==
        "step 0 (relu 'r'): reads activation buffer 0 before any step writes it");
}

TEST_CASE("plans round-trip through JSON", "[runtime]") {
  PlanBuilder b = smallPlan();
  b.plan.modules.push_back({"json", "json", "1.0.0", 0});
  Step ext;
  ext.kind = StepKind::External;
  ext.symbol = "tessera_main_json_0";
  ext.module = 0;
  ext.args = {0, 3};
  ext.numInputs = 1;
  ext.label = "tessera_main_json_0";
  b.plan.steps.push_back(ext);
  Step copy;
  copy.kind = StepKind::Copy;
  copy.args = {0, 3};
  copy.numInputs = 1;
  b.plan.steps.push_back(copy);
  REQUIRE(validateError(b.plan) == "");

  const std::string text = serializePlan(b.plan);
  auto parsed = parsePlan(text);
  INFO(text);
  REQUIRE(parsed.ok());
  CHECK(serializePlan(*parsed) == text);
  const Plan &p = *parsed;
  REQUIRE(p.buffers.size() == b.plan.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    CHECK(p.buffers[i].kind == b.plan.buffers[i].kind);
    CHECK(p.buffers[i].index == b.plan.buffers[i].index);
    CHECK(p.buffers[i].offset == b.plan.buffers[i].offset);
    CHECK(p.buffers[i].info.str() == b.plan.buffers[i].info.str());
    CHECK(p.buffers[i].info.name == b.plan.buffers[i].info.name);
  }
  REQUIRE(p.steps.size() == 4);
  CHECK(p.steps[2].kind == StepKind::External);
  CHECK(p.steps[2].module == 0);
  CHECK(p.steps[2].symbol == "tessera_main_json_0");
  CHECK(p.steps[3].kind == StepKind::Copy);
  CHECK(p.steps[1].label == "relu 'r'");
  CHECK(p.steps[0].args == std::vector<uint32_t>{0, 1, 2});
  CHECK(p.steps[0].numInputs == 2);
  CHECK(p.modules[0].typeKey == "json");
  CHECK(p.modules[0].pluginVersion == "1.0.0");
  CHECK(p.arenaBytes == b.plan.arenaBytes);
  CHECK(p.weightsBytes == b.plan.weightsBytes);
  CHECK(p.activationBytesNoReuse == b.plan.activationBytesNoReuse);
}

TEST_CASE("validatePlan names the step or buffer that is wrong", "[runtime]") {
  auto err = [](const std::function<void(Plan &)> &edit) {
    Plan p = smallPlan().plan;
    edit(p);
    return validateError(p);
  };
  CHECK(err([](Plan &) {}) == "");
  CHECK(err([](Plan &p) { p.steps[1].args[0] = 17; }) ==
        "step 1 (relu 'r'): buffer 17 out of range (4 buffers)");
  CHECK(err([](Plan &p) { p.steps[0].args[2] = 0; }) == "step 0 (add 'a0'): writes input buffer 0");
  CHECK(err([](Plan &p) { p.steps[0].args[2] = 1; }) ==
        "step 0 (add 'a0'): writes constant buffer 1");
  CHECK(err([](Plan &p) { p.steps[0].numInputs = 4; }) ==
        "step 0 (add 'a0'): 4 inputs but only 3 arguments");
  CHECK(err([](Plan &p) { p.steps[0].symbol.clear(); }) ==
        "step 0 (add 'a0'): host step without a symbol");
  CHECK(err([](Plan &p) {
          p.steps[1].kind = StepKind::External;
          p.steps[1].module = 2;
        }) == "step 1 (relu 'r'): module 2 out of range (0 modules)");
  CHECK(err([](Plan &p) {
          p.steps[1].kind = StepKind::Copy;
          p.steps[1].args = {1, 3};
          p.buffers[3].info.shape = {3};
        }) == "step 1 (relu 'r'): copies f32[2, 3] (24 bytes) into f32[3] (12 bytes)");
  CHECK(err([](Plan &p) {
          p.steps[1].kind = StepKind::Copy;
          p.steps[1].args = {1, 2, 3};
        }) == "step 1 (relu 'r'): a copy takes 1 input and 1 output (or an input and a row index "
              "and 1 output), not 1 and 2");
  // A copy into a row of a loop's scan output: {from, row, to}.
  auto rowCopy = [](Plan &p, std::vector<int64_t> to) {
    p.steps[1].kind = StepKind::Copy;
    p.steps[1].args = {2, 0, 3};
    p.steps[1].numInputs = 2;
    p.buffers[0].info.dtype = DLDataType{kDLInt, 64, 1};
    p.buffers[0].info.shape = {};
    p.buffers[3].info.shape = std::move(to);
  };
  CHECK(err([&](Plan &p) { rowCopy(p, {4, 2, 3}); }) == "");
  CHECK(err([&](Plan &p) { rowCopy(p, {2, 3}); }) ==
        "step 1 (relu 'r'): copies f32[2, 3] into a row of f32[2, 3], which is not f32[rows, 2, "
        "3]");
  CHECK(err([&](Plan &p) {
          rowCopy(p, {4, 2, 3});
          p.buffers[0].info.dtype = DLDataType{kDLFloat, 32, 1};
        }) == "step 1 (relu 'r'): the row f32[] must be one i64");
  CHECK(err([](Plan &p) {
          p.steps[1].label.clear();
          p.steps[1].args[0] = 9;
        }) == "step 1: buffer 9 out of range (4 buffers)");
  CHECK(err([](Plan &p) { p.weightsBytes = 16; }) ==
        "buffer 1 (constant f32[2, 3]): bytes [0, 24) outside the weights (16 bytes)");
  CHECK(err([](Plan &p) { p.buffers[2].offset = 64; }) ==
        "buffer 2 (activation f32[2, 3]): bytes [64, 88) outside the arena (64 bytes)");
  CHECK(err([](Plan &p) { p.buffers[2].offset = 8; }) ==
        "buffer 2 (activation f32[2, 3]): offset 8 is not 64-byte aligned");
  CHECK(err([](Plan &p) { p.buffers[1].offset = 4; }) ==
        "buffer 1 (constant f32[2, 3]): offset 4 is not 64-byte aligned");
  CHECK(err([](Plan &p) { p.buffers[0].index = 1; }) ==
        "buffer 0 (input f32[2, 3]): model input 1 does not name this buffer");
  CHECK(err([](Plan &p) { p.buffers[3].index = 5; }) ==
        "buffer 3 (output f32[2, 3]): model output 5 does not name this buffer");
  CHECK(err([](Plan &p) { p.buffers[2].info.dtype.lanes = 2; }) ==
        "buffer 2 (activation dtype(code 2, bits 32, lanes 2)[2, 3]): unsupported dtype "
        "dtype(code 2, bits 32, lanes 2)");
  CHECK(err([](Plan &p) { p.buffers[2].info.shape = {-1}; }) ==
        "buffer 2 (activation f32[$0]): dimension -1 is no symbol (0 symbols)");
  CHECK(err([](Plan &p) { p.inputs.push_back(2); }) ==
        "model input 1: buffer 2 is activation 0 f32[2, 3], not input 1");
  CHECK(err([](Plan &p) { p.outputs.push_back(40); }) ==
        "model output 1: buffer 40 out of range (4 buffers)");
  CHECK(err([](Plan &p) {
          p.modules.push_back({"", "json", "", 0});
        }) == "module 0: empty type key");
}

TEST_CASE("parsePlan names the JSON field that is wrong", "[runtime]") {
  const std::string good = serializePlan(smallPlan().plan);
  REQUIRE(parseError(good) == "");
  auto edit = [&](const std::string &from, const std::string &to) {
    std::string s = good;
    size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return parseError(s.replace(at, from.size(), to));
  };
  CHECK(parseError("{") == "plan: not valid JSON");
  CHECK(parseError("[]") == "plan: expected a JSON object");
  CHECK(parseError("{}") == "plan: missing field 'format'");
  CHECK(edit("\"format\": 1", "\"format\": 2") ==
        "plan.format: version 2, this runtime reads version 1");
  CHECK(edit("\"kind\": \"activation\"", "\"kind\": \"scratch\"") ==
        "plan.buffers[2].kind: unknown value 'scratch' (expected input, output, constant, "
        "activation)");
  CHECK(edit("\"dtype\": \"f32\"", "\"dtype\": \"f7\"") ==
        "plan.buffers[0].dtype: unknown dtype 'f7' (expected one of f32, f16, bf16, f64, i8, "
        "i16, i32, i64, u8, u16, u32, u64, bool)");
  CHECK(edit("\"num_inputs\": 2", "\"num_inputs\": -2") ==
        "plan.steps[0].num_inputs: expected an unsigned integer, got -2");
  CHECK(edit("\"num_inputs\": 2", "\"num_inputs\": 7") ==
        "plan.steps[0].num_inputs: 7 but only 3 args");
  CHECK(edit("\"symbol\": \"f1\"", "\"symbol\": 3") ==
        "plan.steps[1].symbol: expected a string, got 3");
  CHECK(edit("\"arena_bytes\"", "\"arena\"") == "plan: missing field 'arena_bytes'");
  CHECK(edit("\"steps\": [", "\"steps\": {\"x\": 1}, \"old\": [") ==
        "plan.steps: expected an array");
  // The parsed plan is validated.
  CHECK(edit("\"weights_bytes\": 64", "\"weights_bytes\": 0") ==
        "plan: buffer 1 (constant f32[2, 3]): bytes [0, 24) outside the weights (0 bytes)");
}

namespace {

const DLDataType kI64{kDLInt, 64, 1};
const DLDataType kBool{TESSERA_DL_BOOL, 8, 1};

Step control(StepKind kind, std::vector<uint32_t> args, uint32_t target, std::string label) {
  Step s;
  s.kind = kind;
  s.numInputs = uint32_t(args.size());
  s.args = std::move(args);
  s.target = target;
  s.label = std::move(label);
  return s;
}

/// A loop as the compiler lowers one (compile/lower.cpp):
///   0 copy x -> carried       3 host body(carried, k) -> t      6 jump -> 1
///   1 loop_test i, n, c -> 7  4 copy t -> carried
///   2 host pre(k) -> k2       5 increment i
/// with `before` (written at step 0) read inside the body at step 3, and
/// body temporaries t (and k2) that must not take before's bytes.
PlanBuilder loopPlan() {
  PlanBuilder b;
  uint32_t x = b.input(f32({16}, "x"));
  uint32_t n = b.input(TensorInfo{"n", kI64, {}});
  uint32_t c = b.constant(TensorInfo{"c", kBool, {}});
  uint32_t zero = b.constant(TensorInfo{"zero", kI64, {}});
  uint32_t carried = b.activation(f32({16}));
  uint32_t before = b.activation(f32({16}));
  uint32_t i = b.activation(TensorInfo{"", kI64, {}});
  uint32_t k2 = b.activation(f32({16}));
  uint32_t t = b.activation(f32({16}));
  uint32_t out = b.output(f32({16}, "y"));
  b.host("init", {x, zero}, {carried, before, i}, "init");                  // 0
  b.plan.steps.push_back(control(StepKind::LoopTest, {i, n, c}, 7, "test")); // 1
  b.host("pre", {before}, {k2}, "pre");                                     // 2
  b.host("body", {carried, k2}, {t}, "body");                               // 3
  b.host("back", {t}, {carried}, "back");                                   // 4
  b.plan.steps.push_back(control(StepKind::Increment, {i}, 0, "i + 1"));    // 5
  b.plan.steps.push_back(control(StepKind::Jump, {}, 1, "repeat"));         // 6
  b.host("after", {carried}, {out}, "after");                               // 7
  return b;
}

} // namespace

TEST_CASE("planMemory keeps values used across a loop live for the whole loop", "[runtime]") {
  PlanBuilder b = loopPlan();
  REQUIRE(planMemory(b.plan).ok());
  REQUIRE(validateError(b.plan) == "");
  const auto &bufs = b.plan.buffers;
  auto overlaps = [&](uint32_t p, uint32_t q) {
    return bufs[p].offset < bufs[q].offset + bufs[q].info.bytes() &&
           bufs[q].offset < bufs[p].offset + bufs[p].info.bytes();
  };
  // 'before' (5) is last read at step 2 in list order, but every iteration
  // reads it: the body's k2 (7) and t (8), and the iteration (6), must not
  // share its bytes; 'carried' (4) lives through the loop too.
  for (uint32_t inner : {6u, 7u, 8u}) {
    INFO("buffer " << inner);
    CHECK(!overlaps(5, inner));
    CHECK(!overlaps(4, inner));
  }
  CHECK(!overlaps(4, 5));
  // Without the loop's jump back, straight-line liveness lets t reuse
  // 'before' (freed after step 2): the widening is what keeps them apart.
  PlanBuilder straight = loopPlan();
  straight.plan.steps[6] = control(StepKind::Jump, {}, 7, "forward");
  REQUIRE(planMemory(straight.plan).ok());
  const auto &sb = straight.plan.buffers;
  CHECK(sb[8].offset == sb[5].offset);
}

TEST_CASE("control steps round-trip through JSON and are validated", "[runtime]") {
  PlanBuilder b = loopPlan();
  REQUIRE(planMemory(b.plan).ok());
  const std::string text = serializePlan(b.plan);
  auto parsed = parsePlan(text);
  REQUIRE(parsed.ok());
  CHECK(serializePlan(*parsed) == text);
  CHECK(parsed->steps[1].kind == StepKind::LoopTest);
  CHECK(parsed->steps[1].target == 7);
  CHECK(parsed->steps[5].kind == StepKind::Increment);
  CHECK(parsed->steps[6].kind == StepKind::Jump);
  CHECK(parsed->steps[6].target == 1);

  auto err = [&](const std::function<void(Plan &)> &edit) {
    Plan p = b.plan;
    edit(p);
    return validateError(p);
  };
  CHECK(err([](Plan &p) { p.steps[6].target = 9; }) ==
        "step 6 (repeat): target 9 out of range (8 steps)");
  CHECK(err([](Plan &p) { p.steps[1].args = {6, 0, 2}; }) ==
        "step 1 (test): the iteration i64[] and trip count f32[16] must be one i64 each");
  CHECK(err([](Plan &p) { p.steps[1].args = {6, 1, 4}; }) ==
        "step 1 (test): the condition f32[16] is not one bool or integer");
  CHECK(err([](Plan &p) { p.steps[6].args = {4}, p.steps[6].numInputs = 1; }) ==
        "step 6 (repeat): the condition f32[16] is not one bool or integer");
  CHECK(err([](Plan &p) { p.steps[5].args = {1}; }) ==
        "step 5 (i + 1): an increment takes one i64 activation of one element");
  CHECK(err([](Plan &p) { p.steps[6].numInputs = 0, p.steps[6].args = {6}; }) ==
        "step 6 (repeat): a control step has no outputs");
  CHECK(parseError(std::regex_replace(text, std::regex("\"target\": 7"), "\"target\": -1"))
            .find("plan.steps[1].target") != std::string::npos);
}
