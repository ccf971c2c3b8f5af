//===- tests/unit/runtime_capi_test.cpp - The runtime C API and C++ wrapper ===//
//
// tessera/c/runtime.h and tessera/runtime.hpp on the hand-written standard
// artifact (runtime_test_util.h): load from a file and from bytes, model
// queries, sessions, binding by index and name, status codes and messages,
// NULL arguments, and the wrapper's exceptions.
//
//===----------------------------------------------------------------------===//
#include "runtime_test_util.h"

#include "tessera/c/runtime.h"
#include "tessera/runtime.hpp"

#include <cstring>

using namespace tessera::test::rt;

namespace {

const std::vector<int64_t> kShape{kRows, kCols};

/// (code, message) of a status, released.
std::pair<tessera_status_code_t, std::string> take(tessera_status_t *s) {
  std::pair<tessera_status_code_t, std::string> out{tessera_status_code(s),
                                                    tessera_status_message(s)};
  tessera_status_free(s);
  return out;
}

std::string artifactFile() {
  static const std::string path = [] {
    std::string p = tempDir() + "/standard.tsr";
    std::ofstream(p, std::ios::binary) << standardParts().bytes();
    return p;
  }();
  return path;
}

} // namespace

TEST_CASE("C API: load, query, run, outputs", "[runtime]") {
  tessera_model_t *model = nullptr;
  REQUIRE(take(tessera_model_load(artifactFile().c_str(), &model)).second == "");
  REQUIRE(model);
  CHECK(tessera_model_num_inputs(model) == 2);
  CHECK(tessera_model_num_outputs(model) == 2);
  CHECK(std::string(tessera_model_input_name(model, 1)) == "y");
  CHECK(std::string(tessera_model_output_name(model, 0)) == "out");
  CHECK(tessera_model_input_name(model, 2) == nullptr);
  DLDataType dtype{};
  int32_t ndim = 0;
  const int64_t *shape = nullptr;
  REQUIRE(take(tessera_model_input_info(model, 0, &dtype, &ndim, &shape)).second == "");
  CHECK((dtype.code == kDLFloat && dtype.bits == 32 && dtype.lanes == 1));
  REQUIRE(ndim == 2);
  CHECK((shape[0] == kRows && shape[1] == kCols));
  auto bad = take(tessera_model_output_info(model, 5, &dtype, &ndim, &shape));
  CHECK(bad.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(bad.second == "output index 5 out of range (the model has 2)");
  CHECK(std::string(tessera_model_metadata_json(model)).find("\"format\": 1") != std::string::npos);

  // A thread count no machine runs well is refused, not taken silently.
  for (int32_t wrong : {-1, 100000}) {
    tessera_session_options_t bad{sizeof bad, wrong};
    tessera_session_t *none = nullptr;
    auto refused = take(tessera_session_create(model, &bad, &none));
    CHECK(refused.first == TESSERA_STATUS_INVALID_ARGUMENT);
    CHECK(refused.second.starts_with("num_threads: the number of threads must be 0 (every core) "
                                     "to "));
    CHECK(refused.second.ends_with(", not " + std::to_string(wrong)));
    CHECK(none == nullptr);
  }
  tessera_session_options_t options{sizeof options, 2};
  tessera_session_t *session = nullptr;
  REQUIRE(take(tessera_session_create(model, &options, &session)).second == "");
  tessera_model_release(model); // the session keeps it alive

  std::vector<float> x = pattern(1), y = pattern(2);
  DLTensor tx = tensorOf(x.data(), kShape), ty = tensorOf(y.data(), kShape);
  auto unset = take(tessera_session_run(session));
  CHECK(unset.first == TESSERA_STATUS_FAILED_PRECONDITION);
  CHECK(unset.second == "input 'x' was not set");
  REQUIRE(take(tessera_session_set_input(session, 0, &tx)).second == "");
  REQUIRE(take(tessera_session_set_input_by_name(session, "y", &ty)).second == "");
  REQUIRE(take(tessera_session_run(session)).second == "");
  const DLTensor *out = nullptr;
  REQUIRE(take(tessera_session_get_output(session, 0, &out)).second == "");
  const auto *p = static_cast<const float *>(out->data);
  CHECK(std::vector<float>(p, p + kN) == expectedOut(x, y));

  // Caller-bound output.
  std::vector<float> mine(kN, 0.0f);
  DLTensor tm = tensorOf(mine.data(), kShape);
  REQUIRE(take(tessera_session_set_output(session, 1, &tm)).second == "");
  REQUIRE(take(tessera_session_run(session)).second == "");
  CHECK(mine == x);

  // Errors and their codes.
  std::vector<int64_t> wrong{4, 9};
  DLTensor tw = tensorOf(x.data(), wrong);
  auto shapeErr = take(tessera_session_set_input(session, 0, &tw));
  CHECK(shapeErr.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(shapeErr.second == "input 'x': expected f32[4, 8], got f32[4, 9]");
  auto nameErr = take(tessera_session_set_input_by_name(session, "q", &tx));
  CHECK(nameErr.first == TESSERA_STATUS_NOT_FOUND);
  CHECK(nameErr.second == "no input named 'q' (the model's inputs: 'x', 'y')");
  CHECK(take(tessera_session_set_input(session, 0, nullptr)).second == "tensor is NULL");
  CHECK(take(tessera_session_run(nullptr)).second == "session is NULL");
  CHECK(take(tessera_session_get_output(session, 2, &out)).first ==
        TESSERA_STATUS_INVALID_ARGUMENT);
  // tessera_session_run_with: what binding refuses is the caller's
  // (INVALID_ARGUMENT, whatever its message says), as is a wrong count.
  tessera_run_result_t *result = nullptr;
  DLTensor pair[2] = {tx, ty};
  auto count = take(tessera_session_run_with(session, pair, 1, &result));
  CHECK(count.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(count.second == "1 input given; the model has 2");
  DLTensor badPair[2] = {tx, tw};
  auto shapeWith = take(tessera_session_run_with(session, badPair, 2, &result));
  CHECK(shapeWith.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(shapeWith.second == "input 'y': expected f32[4, 8], got f32[4, 9]");
  CHECK(result == nullptr);
  REQUIRE(take(tessera_session_run_with(session, pair, 2, &result)).second == "");
  tessera_run_result_release(result);
  tessera_session_release(session);
  tessera_session_release(nullptr);
  tessera_model_release(nullptr);
}

// What a C caller can get wrong and the runtime can see: a buffer shorter
// than its tensor (the _checked setters), names that do not exist, and
// handles used or released after their release (each an error, none a
// crash; run under ASan in the asan-ubsan preset).
TEST_CASE("C API: short buffers, output names, released handles", "[runtime]") {
  tessera_model_t *model = nullptr;
  REQUIRE(take(tessera_model_load(artifactFile().c_str(), &model)).second == "");
  tessera_session_t *session = nullptr;
  REQUIRE(take(tessera_session_create(model, nullptr, &session)).second == "");

  // A buffer of 31 floats under a [4, 8] tensor: refused before it is read.
  std::vector<float> x = pattern(1), y = pattern(2);
  DLTensor tx = tensorOf(x.data(), kShape), ty = tensorOf(y.data(), kShape);
  auto shortX = take(tessera_session_set_input_checked(session, 0, &tx, 31 * sizeof(float)));
  CHECK(shortX.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(shortX.second == "input 'x': the buffer has 124 bytes; the tensor needs 128 (its "
                         "byte_offset included)");
  tx.byte_offset = 4; // the same buffer, one float in: now 4 bytes short
  auto offset = take(tessera_session_set_input_by_name_checked(session, "x", &tx, kN * 4));
  CHECK(offset.second == "input 'x': the buffer has 128 bytes; the tensor needs 132 (its "
                         "byte_offset included)");
  tx.byte_offset = 0;
  REQUIRE(take(tessera_session_set_input_checked(session, 0, &tx, kN * sizeof(float))).second ==
          "");
  REQUIRE(take(tessera_session_set_input_by_name_checked(session, "y", &ty, kN * 4)).second == "");
  std::vector<float> mine(kN - 1);
  DLTensor tm = tensorOf(mine.data(), kShape);
  CHECK(take(tessera_session_set_output_checked(session, 1, &tm, mine.size() * 4)).second ==
        "output 'out_x': the buffer has 124 bytes; the tensor needs 128 (its byte_offset "
        "included)");
  REQUIRE(take(tessera_session_run(session)).second == "");

  // Outputs by name.
  const DLTensor *byName = nullptr, *byIndex = nullptr;
  REQUIRE(take(tessera_session_get_output_by_name(session, "out", &byName)).second == "");
  REQUIRE(take(tessera_session_get_output(session, 0, &byIndex)).second == "");
  CHECK(byName == byIndex);
  auto unknown = take(tessera_session_get_output_by_name(session, "logits", &byName));
  CHECK(unknown.first == TESSERA_STATUS_NOT_FOUND);
  CHECK(unknown.second == "no output named 'logits' (the outputs: 'out', 'out_x')");
  std::vector<float> mineOut(kN, -1.0f);
  DLTensor tmo = tensorOf(mineOut.data(), kShape);
  REQUIRE(take(tessera_session_set_output_by_name(session, "out", &tmo)).second == "");
  REQUIRE(take(tessera_session_run(session)).second == "");
  CHECK(mineOut == expectedOut(x, y));

  // Released handles: errors, and a second release does nothing.
  tessera_session_release(session);
  auto afterRelease = take(tessera_session_run(session));
  CHECK(afterRelease.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(afterRelease.second ==
        "session is not a live handle (released already, or not from tessera_session_create)");
  CHECK(take(tessera_session_set_input(session, 0, &tx)).first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(take(tessera_session_get_output(session, 0, &byName)).first ==
        TESSERA_STATUS_INVALID_ARGUMENT);
  tessera_session_release(session);
  tessera_model_release(model);
  CHECK(tessera_model_num_inputs(model) == 0);
  CHECK(tessera_model_input_name(model, 0) == nullptr);
  CHECK(std::string(tessera_model_metadata_json(model)).empty());
  CHECK(std::string(tessera_model_host_cpu(model)).empty());
  auto modelGone = take(tessera_model_input_info(model, 0, nullptr, nullptr, nullptr));
  CHECK(modelGone.second ==
        "model is not a live handle (released already, or not from tessera_model_load)");
  CHECK(take(tessera_session_create(model, nullptr, &session)).first ==
        TESSERA_STATUS_INVALID_ARGUMENT);
  tessera_model_release(model);
  // A pointer that never was a handle.
  int notAHandle = 0;
  CHECK(take(tessera_session_run(reinterpret_cast<tessera_session_t *>(&notAHandle))).first ==
        TESSERA_STATUS_INVALID_ARGUMENT);
}

// An app can read what an artifact needs (its plugins, CPU features)
// before it loads any of it.
TEST_CASE("C API: an artifact's metadata without loading it", "[runtime]") {
  size_t size = 0;
  REQUIRE(take(tessera_artifact_metadata(artifactFile().c_str(), nullptr, 0, &size)).second == "");
  std::string json(size, '\0');
  REQUIRE(take(tessera_artifact_metadata(artifactFile().c_str(), json.data(), json.size(), &size))
              .second == "");
  json.resize(size - 1);
  tessera_model_t *model = nullptr;
  REQUIRE(take(tessera_model_load(artifactFile().c_str(), &model)).second == "");
  CHECK(json == tessera_model_metadata_json(model));
  CHECK(json.find("\"plugins\"") != std::string::npos);
  tessera_model_release(model);
  std::vector<char> small(size - 1);
  auto tooSmall = take(tessera_artifact_metadata(artifactFile().c_str(), small.data(), small.size(),
                                                 &size));
  CHECK(tooSmall.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(tooSmall.second == "the buffer has " + std::to_string(small.size()) +
                               " bytes; the metadata needs " + std::to_string(size));
  auto missing = take(tessera_artifact_metadata("/nonexistent/m.tsr", nullptr, 0, &size));
  CHECK(missing.first == TESSERA_STATUS_NOT_FOUND);
  CHECK(missing.second == "/nonexistent/m.tsr: cannot open the file (no such file)");
  CHECK(take(tessera_artifact_metadata(artifactFile().c_str(), nullptr, 0, nullptr)).second ==
        "out_size is NULL");
}

TEST_CASE("C API: load errors carry codes", "[runtime]") {
  tessera_model_t *model = nullptr;
  auto missing = take(tessera_model_load("/nonexistent/m.tsr", &model));
  CHECK(missing.first == TESSERA_STATUS_NOT_FOUND);
  CHECK(missing.second == "/nonexistent/m.tsr: cannot open the file (no such file)");
  // A directory where the artifact should be: refused before it is read.
  auto folder = take(tessera_model_load(tempDir().c_str(), &model));
  CHECK(folder.first == TESSERA_STATUS_INVALID_ARGUMENT);
  CHECK(folder.second == tempDir() + ": is a directory, not a file");
  CHECK(model == nullptr);
  CHECK(model == nullptr);

  const std::string bytes = standardParts().bytes();
  std::string garbage = bytes;
  garbage[0] = 'X';
  auto corrupt = take(tessera_model_load_bytes(garbage.data(), garbage.size(), &model));
  CHECK(corrupt.first == TESSERA_STATUS_DATA_LOSS);
  CHECK(corrupt.second == "<memory>: not a Tessera artifact (no \"TSRA\" magic)");

  ArtifactParts parts = standardParts();
  parts.plan.modules[0] = {"nope", "acme", "1", 0};
  parts.modules[0].first = "nope";
  const std::string noPlugin = parts.bytes();
  auto plugin = take(tessera_model_load_bytes(noPlugin.data(), noPlugin.size(), &model));
  CHECK(plugin.first == TESSERA_STATUS_FAILED_PRECONDITION);
  CHECK(plugin.second.starts_with("<memory>: needs plugin 'acme' (module type_key 'nope')"));

  REQUIRE(take(tessera_model_load_bytes(bytes.data(), bytes.size(), &model)).second == "");
  tessera_model_release(model);
  CHECK(take(tessera_model_load(nullptr, &model)).second == "path is NULL");
  CHECK(std::string(tessera_runtime_version()).find('.') != std::string::npos);
}

TEST_CASE("C++ wrapper: RAII handles and exceptions", "[runtime]") {
  namespace rt = tessera::rt;
  rt::Model model = rt::Model::load(artifactFile());
  REQUIRE(model.numInputs() == 2);
  CHECK(model.input(0).str() == "f32[4, 8]");
  CHECK(model.input(0).name == "x");
  CHECK(model.output(1).name == "out_x");
  CHECK(model.output(1).bytes() == kN * 4);
  CHECK(rt::dtypeName(model.input(0).dtype) == "f32");

  std::vector<float> x = pattern(7), y = pattern(8);
  rt::Session a(model, {1}), b(model);
  std::vector<int64_t> shape = model.input(0).shape;
  a.setInput("x", rt::makeTensor(x.data(), model.input(0).dtype, shape));
  a.setInput(1, rt::makeTensor(y.data(), model.input(1).dtype, shape));
  a.run();
  const DLTensor &out = a.output(0);
  const auto *p = static_cast<const float *>(out.data);
  CHECK(std::vector<float>(p, p + kN) == expectedOut(x, y));

  try {
    b.run();
    FAIL("run without inputs did not throw");
  } catch (const rt::Error &e) {
    CHECK(e.code() == TESSERA_STATUS_FAILED_PRECONDITION);
    CHECK(std::string(e.what()) == "input 'x' was not set");
  }
  std::vector<int64_t> wrong{8, 4};
  CHECK_THROWS_WITH(b.setInput("x", rt::makeTensor(x.data(), model.input(0).dtype, wrong)),
                    "input 'x': expected f32[4, 8], got f32[8, 4]");
  CHECK_THROWS_AS(rt::Model::load("/nonexistent.tsr"), rt::Error);
  const std::string bytes = readBytes(artifactFile());
  rt::Model again = rt::Model::fromBytes(bytes.data(), bytes.size());
  CHECK(again.numOutputs() == 2);
}

// The shape a DLTensor points to must outlive it: a temporary one does not
// compile (it dangled before), an lvalue does.
template <typename V>
concept MakesTensorFrom = requires(V v) {
  tessera::rt::makeTensor(nullptr, DLDataType{kDLFloat, 32, 1}, std::move(v));
};
template <typename V>
concept MakesTensorFromLvalue = requires(V &v) {
  tessera::rt::makeTensor(nullptr, DLDataType{kDLFloat, 32, 1}, v);
};
static_assert(!MakesTensorFrom<std::vector<int64_t>>);
static_assert(MakesTensorFromLvalue<std::vector<int64_t>>);

TEST_CASE("C++ wrapper: an owning tensor, size-checked binding, outputs by name", "[runtime]") {
  namespace rt = tessera::rt;
  rt::Model model = rt::Model::load(artifactFile());
  rt::Session session(model, {1});
  rt::Tensor x = rt::Tensor::zeros(model.input(0)), y = rt::Tensor::zeros(model.input(1));
  CHECK(x.bytes() == kN * 4);
  CHECK(reinterpret_cast<uintptr_t>(x.data<float>()) % 64 == 0);
  const std::vector<float> px = pattern(3), py = pattern(4);
  std::copy(px.begin(), px.end(), x.data<float>());
  std::copy(py.begin(), py.end(), y.data<float>());
  rt::Tensor moved = std::move(y); // its DLTensor follows the shape it owns
  CHECK(moved.dl().shape == moved.shape().data());
  session.setInput("x", x);
  session.setInput(1, moved);
  session.run();
  const DLTensor &out = session.output("out");
  const auto *p = static_cast<const float *>(out.data);
  CHECK(std::vector<float>(p, p + kN) == expectedOut(px, py));
  CHECK_THROWS_WITH(session.output("nope"), "no output named 'nope' (the outputs: 'out', 'out_x')");
  // A caller buffer with its size: one float short is refused.
  std::vector<float> small(kN - 1);
  std::vector<int64_t> shape = model.input(0).shape;
  CHECK_THROWS_WITH(session.setInput("x", rt::makeTensor(small.data(), model.input(0).dtype, shape),
                                     small.size() * sizeof(float)),
                    "input 'x': the buffer has 124 bytes; the tensor needs 128 (its byte_offset "
                    "included)");
}
