//===- frontend/onnx/conformance.h - ONNX backend test runner --*- C++ -*-===//
//
// Runs ONNX backend tests (a folder with model.onnx and test_data_set_*/
// {input,output}_N.pb) through the importer and the reference interpreter,
// and compares every output: dtype and shape equal; floats within
// |a - b| <= 1e-5 + 1e-3 * |b| (bf16: 1e-5 + 2^-7 * |b|, one bf16 ulp, since
// ONNX 1.12's bf16 data truncates where Tessera rounds to nearest even;
// NaN matches NaN, infinities must match exactly); integers and bools
// exactly.
//
// A test is UNSUPPORTED only when the importer rejects an op type of the
// model by name: no converter, a converter that does not cover the model's
// opset ("Relu (opset 6)"), or an op applied to an element type the IR lacks
// ("Cast (to STRING)"). Any other problem (import error, run error, wrong
// result) is a FAIL. Inputs that converters need as constants (Reshape's shape, ...) are
// bound from the test data and the model is imported again.
//
// By default @main runs in the reference interpreter. ConformanceOptions::run
// replaces it (`tessera conformance --compile`: compile to an artifact, load
// it with the runtime and run it; tools/compiled_runner.h); the imports, the
// data and the comparison stay the same. The frontend does not depend on
// the compiler's back half: the tool supplies the callback.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "interp/interpreter.h"
#include "ir/module.h"
#include "ir/tensor.h"
#include "support/error.h"

#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace tessera::frontend::onnx {

class ConverterRegistry;

/// Runs @main of an imported module (types inferred) on `inputs`, one per
/// parameter (a tensor, or a sequence for a sequence parameter), and returns
/// its results flattened depth first (tuples in order; a sequence is one
/// result). Errors become the test's FAIL reason, prefixed with the data set.
using ConformanceRunner = std::function<Expected<std::vector<interp::Value>>(
    const ir::Module &module, const std::vector<interp::Value> &inputs)>;

struct ConformanceOptions {
  /// Only tests whose name contains this substring (empty: all).
  std::string filter;
  /// Print details: bound constants, parameters, all mismatches.
  bool verbose = false;
  /// Before the closing counts line, list the unsupported op types by how
  /// many tests they block.
  bool summary = false;
  /// The converters to use; null means ConverterRegistry::standard().
  const ConverterRegistry *registry = nullptr;
  /// How to run @main; empty: the reference interpreter (interp::run).
  ConformanceRunner run;
};

enum class TestStatus { Pass, Fail, Unsupported };

struct TestOutcome {
  std::string name;
  TestStatus status = TestStatus::Fail;
  /// FAIL: the reason; UNSUPPORTED: the op types, ", "-separated.
  std::string detail;
  /// UNSUPPORTED: the op types.
  std::vector<std::string> unsupportedOps;
};

struct ConformanceSummary {
  int passed = 0;
  int failed = 0;
  int unsupported = 0;
  /// Op type -> number of tests it makes unsupported.
  std::map<std::string, int> blockedBy;
};

/// Runs one test folder (containing model.onnx).
TestOutcome runBackendTest(const std::string &dir, const ConformanceOptions &options = {},
                           std::ostream *verboseOut = nullptr);

/// The test folders under `dirs`: each is a test folder itself (contains
/// model.onnx) or a folder of test folders, listed sorted by name. A path
/// that is neither is an error.
Expected<std::vector<std::string>> findBackendTests(const std::vector<std::string> &dirs);

/// Runs every test under `dirs` that matches the filter, printing one line
/// per test ("PASS name", "FAIL name: reason", "UNSUPPORTED name: ops") and
/// the closing "N passed, M failed, K unsupported".
Expected<ConformanceSummary> runConformance(const std::vector<std::string> &dirs,
                                            const ConformanceOptions &options, std::ostream &out);

} // namespace tessera::frontend::onnx
