//===- tests/unit/runtime_session_test.cpp - Loading and running ----------===//
//
// LoadedModel and Session on artifacts written by hand (runtime_test_util.h):
// results against a computation done here from the inputs, memory reuse,
// every input-binding error, unset inputs, a failing host step, the load
// errors (missing plugin, host ABI version, missing symbol, tampered
// section, inconsistent metadata) and that none of them loads the host code,
// concurrent sessions on one model, caller-bound outputs, and guard bytes
// around every caller buffer.
//
//===----------------------------------------------------------------------===//
#include "runtime_test_util.h"

#include "runtime/session.h"
#include "runtime/sha256.h"

#include <atomic>
#include <cstring>
#include <thread>

using namespace tessera;
using namespace tessera::runtime;
using namespace tessera::test::rt;

namespace {

std::shared_ptr<const LoadedModel> loadOk(const std::string &bytes) {
  auto m = LoadedModel::load(bytes, "model.tsr");
  INFO((m.ok() ? "" : m.error().str()));
  REQUIRE(m.ok());
  return *m;
}

/// The load error; asserts that the host code was never loaded.
std::string loadError(const std::string &bytes) {
  ::unsetenv("TESSERA_TEST_HOST_LOADED");
  auto m = LoadedModel::load(bytes, "model.tsr");
  REQUIRE(!m.ok());
  return m.error().str();
}

bool hostLoaded() {
  return std::getenv("TESSERA_TEST_HOST_LOADED") != nullptr;
}

std::unique_ptr<Session> session(std::shared_ptr<const LoadedModel> m, int32_t threads = 0) {
  auto s = Session::create(std::move(m), SessionOptions{threads});
  INFO((s.ok() ? "" : s.error().str()));
  REQUIRE(s.ok());
  return std::move(*s);
}

std::string err(const Status &s) {
  return s.ok() ? "" : s.error().str();
}

const std::vector<int64_t> kShape{kRows, kCols};

std::vector<float> outputValues(const Session &s, size_t index) {
  auto t = s.output(index);
  REQUIRE(t.ok());
  const auto *p = static_cast<const float *>((*t)->data);
  return std::vector<float>(p, p + kN);
}

/// Runs the standard model on pattern(seed) inputs and checks both outputs.
void runAndCheck(Session &s, int seed) {
  std::vector<float> x = pattern(seed), y = pattern(seed + 1);
  DLTensor tx = tensorOf(x.data(), kShape), ty = tensorOf(y.data(), kShape);
  REQUIRE(err(s.setInput(0, tx)) == "");
  REQUIRE(err(s.setInput("y", ty)) == "");
  REQUIRE(err(s.run()) == "");
  CHECK(outputValues(s, 0) == expectedOut(x, y));
  CHECK(outputValues(s, 1) == x);
}

} // namespace

TEST_CASE("a session runs host, plugin and copy steps", "[runtime]") {
  auto model = loadOk(standardParts().bytes());
  REQUIRE(model->inputs().size() == 2);
  CHECK(model->inputs()[0].str() == "f32[4, 8]");
  CHECK(model->inputs()[1].name == "y");
  REQUIRE(model->outputs().size() == 2);
  CHECK(model->outputs()[1].name == "out_x");
  CHECK(model->metadataJson().find("\"regions\"") != std::string::npos);
  for (int32_t threads : {1, 2, 0}) {
    auto s = session(model, threads);
    CHECK(s->numThreads() >= 1);
    for (int seed = 0; seed < 3; ++seed)
      runAndCheck(*s, seed);
    auto out = s->output(0);
    REQUIRE(out.ok());
    CHECK((*out)->ndim == 2);
    CHECK((*out)->shape[1] == kCols);
    CHECK(reinterpret_cast<uintptr_t>((*out)->data) % 64 == 0);
  }
}

TEST_CASE("activations share arena bytes", "[runtime]") {
  ArtifactParts parts = standardParts();
  // a0 (read by step 1) and a2 (written by step 2) never live together.
  CHECK(parts.plan.buffers[3].offset == parts.plan.buffers[5].offset);
  CHECK(parts.plan.arenaBytes == 256);
  CHECK(parts.plan.activationBytesNoReuse == 3 * 128);
  auto s = session(loadOk(parts.bytes()), 1);
  runAndCheck(*s, 5);
}

TEST_CASE("inputs are checked and the errors name them", "[runtime]") {
  auto s = session(loadOk(standardParts().bytes()), 1);
  std::vector<float> x(kN + 8, 1.0f);
  {
    std::vector<int64_t> shape{4, 9};
    CHECK(err(s->setInput(0, tensorOf(x.data(), shape))) ==
          "input 'x': expected f32[4, 8], got f32[4, 9]");
    std::vector<int64_t> flat{32};
    CHECK(err(s->setInput("y", tensorOf(x.data(), flat))) ==
          "input 'y': expected f32[4, 8], got f32[32]");
    CHECK(err(s->setInput(0, tensorOf(x.data(), kShape, DLDataType{kDLInt, 32, 1}))) ==
          "input 'x': expected f32[4, 8], got i32[4, 8]");
    CHECK(err(s->setInput(0, tensorOf(x.data(), kShape, DLDataType{kDLFloat, 64, 1}))) ==
          "input 'x': expected f32[4, 8], got f64[4, 8]");
  }
  DLTensor t = tensorOf(x.data(), kShape);
  int64_t transposed[] = {1, 4};
  t.strides = transposed;
  CHECK(err(s->setInput(0, t)) == "input 'x': expected dense row-major strides [8, 1], got [1, 4]");
  int64_t compact[] = {8, 1};
  t.strides = compact;
  CHECK(err(s->setInput(0, t)) == "");
  t.strides = nullptr;
  t.device = {kDLCUDA, 0};
  CHECK(err(s->setInput(0, t)) ==
        "input 'x': expected a CPU tensor (device type 1), got device type 2");
  t.device = {kDLCPU, 0};
  t.byte_offset = 2;
  CHECK(err(s->setInput(0, t)).ends_with("is not aligned to the element size (4 bytes)"));
  t.byte_offset = 4; // an element in: fine
  CHECK(err(s->setInput(0, t)) == "");
  t.byte_offset = 0;
  t.data = nullptr;
  CHECK(err(s->setInput(0, t)) == "input 'x': data is null");
  t.data = x.data();
  CHECK(err(s->setInput("z", t)) == "no input named 'z' (the model's inputs: 'x', 'y')");
  CHECK(err(s->setInput(2, t)) == "input index 2 out of range (the model has 2 inputs)");
  CHECK(err(s->setOutput(2, &t)) == "output index 2 out of range (the model has 2 outputs)");
  auto missing = s->output(3);
  REQUIRE(!missing.ok());
  CHECK(missing.error().str() == "output index 3 out of range (the model has 2 outputs)");
}

TEST_CASE("running with an unset input fails naming it", "[runtime]") {
  auto s = session(loadOk(standardParts().bytes()), 1);
  std::vector<float> x = pattern(0);
  CHECK(err(s->run()) == "input 'x' was not set");
  REQUIRE(err(s->setInput(0, tensorOf(x.data(), kShape))) == "");
  CHECK(err(s->run()) == "input 'y' was not set");
}

TEST_CASE("a failing host step is reported with its label", "[runtime]") {
  ArtifactParts parts = standardParts();
  parts.plan.steps[2].symbol = "t_fail";
  auto s = session(loadOk(parts.bytes()), 1);
  std::vector<float> x = pattern(0);
  REQUIRE(err(s->setInput(0, tensorOf(x.data(), kShape))) == "");
  REQUIRE(err(s->setInput(1, tensorOf(x.data(), kShape))) == "");
  CHECK(err(s->run()) == "step 2 (multiply 'a2'): host function 't_fail' failed with code 1 "
                         "(TESSERA_HOST_ERR_INVALID: an index or value out of range)");
}

TEST_CASE("a missing plugin is named with its type key, before any code loads", "[runtime]") {
  ArtifactParts parts = standardParts();
  parts.plan.modules[0] = {"nope", "acme", "3.0", 0};
  parts.modules[0].first = "nope";
  std::string e = loadError(parts.bytes());
  CHECK(e.starts_with("model.tsr: needs plugin 'acme' (module type_key 'nope') which is not "
                      "loaded; search path: "));
  CHECK(e.find("build tree") != std::string::npos);
  CHECK(!hostLoaded());
  // A loaded plugin of that name without the factory says so.
  parts.plan.modules[0] = {"nope", "json", "1", 0};
  e = loadError(parts.bytes());
  CHECK(e.starts_with("model.tsr: needs plugin 'json' (module type_key 'nope'); the loaded "
                      "plugin 'json' "));
  CHECK(e.ends_with("has no module factory 'nope' (it has: json)"));
  CHECK(!hostLoaded());
}

TEST_CASE("load errors name the problem", "[runtime]") {
  SECTION("host ABI version") {
    ArtifactParts parts = standardParts();
    parts.hostCode = hostLibrary(2);
    CHECK(loadError(parts.bytes()) ==
          "model.tsr: the host code speaks host ABI version 2, this runtime version 1 "
          "(recompile the model with this Tessera)");
  }
  SECTION("missing host symbol") {
    ArtifactParts parts = standardParts();
    parts.plan.steps[3].symbol = "t_nope";
    CHECK(loadError(parts.bytes()) == "model.tsr: step 3 (add 'out'): the host code has no "
                                      "symbol 't_nope'");
  }
  SECTION("missing plugin function") {
    ArtifactParts parts = standardParts();
    parts.plan.steps[1].symbol = "json_other";
    CHECK(loadError(parts.bytes())
              .starts_with("model.tsr: step 1 (json_relu): module 'json' of plugin 'json': "
                           "function 'json_other'"));
  }
  SECTION("no host code section") {
    ArtifactParts parts = standardParts();
    parts.hostCode.clear();
    CHECK(loadError(parts.bytes()) ==
          "model.tsr: the plan has host steps but the artifact has no host code section");
  }
  SECTION("weights size") {
    ArtifactParts parts = standardParts();
    parts.weights.resize(64);
    CHECK(loadError(parts.bytes()) ==
          "model.tsr: the weights section has 64 bytes, the plan needs 128");
    CHECK(!hostLoaded());
  }
  SECTION("module section") {
    ArtifactParts parts = standardParts();
    parts.plan.modules[0].section = 1;
    CHECK(loadError(parts.bytes()) == "model.tsr: module 0 (type_key 'json' of plugin 'json') "
                                      "is in external module section 1, the artifact has 1");
    parts.plan.modules[0].section = 0;
    parts.modules[0].first = "other";
    CHECK(loadError(parts.bytes()) == "model.tsr: module 0: external module section 0 holds "
                                      "type_key 'other', the plan says 'json'");
    CHECK(!hostLoaded());
  }
  SECTION("metadata") {
    ArtifactParts parts = standardParts();
    std::string meta = metadataFor(parts.plan);
    parts.metadata = meta.substr(0, meta.find("\"outputs\"")) + "\"outputs\": []}";
    CHECK(loadError(parts.bytes()) == "model.tsr: the metadata lists 0 outputs, the plan 2");
    parts.metadata = std::string(meta).replace(meta.find("\"x\""), 3, "\"q\"");
    CHECK(loadError(parts.bytes()) ==
          "model.tsr: input 0: the metadata says 'q' f32[4, 8], the plan 'x' f32[4, 8]");
    parts.metadata = "{\"format\": 2}";
    CHECK(loadError(parts.bytes()) == "model.tsr: metadata format 2, this runtime reads format 1");
    parts.metadata = "[1]";
    CHECK(loadError(parts.bytes()) == "model.tsr: metadata: not a JSON object");
    CHECK(!hostLoaded());
  }
  SECTION("invalid plan") {
    ArtifactParts parts = standardParts();
    parts.plan.steps[0].args[0] = 99;
    CHECK(loadError(parts.bytes()) ==
          "model.tsr: plan: step 0 (add 'a0'): buffer 99 out of range (8 buffers)");
    CHECK(!hostLoaded());
  }
  SECTION("no such file") {
    auto m = LoadedModel::load(tempDir() + "/nothing.tsr");
    REQUIRE(!m.ok());
    CHECK(m.error().str() == tempDir() + "/nothing.tsr: cannot open the file (no such file)");
  }
}

TEST_CASE("a tampered host code section is refused before it is loaded", "[runtime]") {
  std::string bytes = standardParts().bytes();
  size_t elf = bytes.find("\x7f"
                          "ELF");
  REQUIRE(elf != std::string::npos);
  bytes[elf + 200] ^= 0x01; // the index is untouched: the section digest catches it
  std::string e = loadError(bytes);
  CHECK(e == "model.tsr: corrupted: section 3 (host code) does not match its SHA-256");
  CHECK(!hostLoaded());
  // The untampered artifact does load it.
  ::unsetenv("TESSERA_TEST_HOST_LOADED");
  loadOk(standardParts().bytes());
  CHECK(hostLoaded());
}

TEST_CASE("sessions on one model run concurrently", "[runtime]") {
  auto model = loadOk(standardParts().bytes());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto s = Session::create(model, SessionOptions{2});
      if (!s.ok()) {
        ++failures;
        return;
      }
      for (int i = 0; i < 200; ++i) {
        std::vector<float> x = pattern(t * 1000 + i), y = pattern(t * 1000 + i + 1);
        DLTensor tx = tensorOf(x.data(), kShape), ty = tensorOf(y.data(), kShape);
        if (!(*s)->setInput(0, tx).ok() || !(*s)->setInput(1, ty).ok() || !(*s)->run().ok()) {
          ++failures;
          return;
        }
        auto out = (*s)->output(0);
        const auto *p = static_cast<const float *>((*out)->data);
        if (std::vector<float>(p, p + kN) != expectedOut(x, y))
          ++failures;
      }
    });
  for (auto &t : threads)
    t.join();
  CHECK(failures == 0);
}

TEST_CASE("outputs bound to caller memory; no byte outside the tensors is touched", "[runtime]") {
  auto model = loadOk(standardParts().bytes());
  auto s = session(model, 2);
  // Each caller buffer sits between guard bytes.
  static constexpr size_t kGuard = 256;
  static constexpr unsigned char kFill = 0xA5;
  struct Guarded {
    std::vector<unsigned char> bytes = std::vector<unsigned char>(2 * kGuard + kN * 4, kFill);
    float *data() { return reinterpret_cast<float *>(bytes.data() + kGuard); }
    bool guardsIntact() const {
      for (size_t i = 0; i < kGuard; ++i)
        if (bytes[i] != kFill || bytes[bytes.size() - 1 - i] != kFill)
          return false;
      return true;
    }
  };
  Guarded x, y, out0, out1;
  std::vector<float> xv = pattern(3), yv = pattern(4);
  std::memcpy(x.data(), xv.data(), kN * 4);
  std::memcpy(y.data(), yv.data(), kN * 4);
  REQUIRE(err(s->setInput(0, tensorOf(x.data(), kShape))) == "");
  REQUIRE(err(s->setInput(1, tensorOf(y.data(), kShape))) == "");
  DLTensor t0 = tensorOf(out0.data(), kShape), t1 = tensorOf(out1.data(), kShape);
  REQUIRE(err(s->setOutput(0, &t0)) == "");
  REQUIRE(err(s->setOutput(1, &t1)) == "");
  REQUIRE(err(s->run()) == "");
  CHECK(std::vector<float>(out0.data(), out0.data() + kN) == expectedOut(xv, yv));
  CHECK(std::vector<float>(out1.data(), out1.data() + kN) == xv);
  CHECK((*s->output(0))->data == out0.data());
  // Inputs unchanged, guards intact.
  CHECK(std::vector<float>(x.data(), x.data() + kN) == xv);
  CHECK(std::vector<float>(y.data(), y.data() + kN) == yv);
  for (const Guarded *g : {&x, &y, &out0, &out1})
    CHECK(g->guardsIntact());
  // Unbinding goes back to the session's storage.
  REQUIRE(err(s->setOutput(0, nullptr)) == "");
  std::vector<float> before(out0.data(), out0.data() + kN);
  REQUIRE(err(s->run()) == "");
  CHECK((*s->output(0))->data != out0.data());
  CHECK(outputValues(*s, 0) == expectedOut(xv, yv));
  CHECK(std::vector<float>(out0.data(), out0.data() + kN) == before);
}

TEST_CASE("an input's byte_offset is honoured", "[runtime]") {
  auto s = session(loadOk(standardParts().bytes()), 1);
  std::vector<float> x = pattern(11), y = pattern(12);
  std::vector<float> padded(3, 99.0f);
  padded.insert(padded.end(), x.begin(), x.end());
  DLTensor tx = tensorOf(padded.data(), kShape);
  tx.byte_offset = 3 * sizeof(float);
  REQUIRE(err(s->setInput(0, tx)) == "");
  REQUIRE(err(s->setInput(1, tensorOf(y.data(), kShape))) == "");
  REQUIRE(err(s->run()) == "");
  CHECK(outputValues(*s, 0) == expectedOut(x, y));
  CHECK(outputValues(*s, 1) == x);
}
