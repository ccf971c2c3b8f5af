//===- tests/unit/host_kernel_harness.h - Run host kernels natively -*- C++ -*-===//
//
// The host kernel library (core/codegen/kernels) is also compiled natively
// into the unit tests (tessera_host_kernels_native, linked whole, symbols
// exported). This harness runs one op call through its lowering
// (codegen/host_ops.h) and the native kernel tk_<kernel>, looked up with
// dlsym, and compares the outputs with the reference interpreter using the
// conformance kit's tolerances (kit/kit.h: f32 1e-5 + 1e-4|x|,
// f16/bf16 1e-3 + 1e-2|x|, ints and bool exact, NaN meets NaN).
//
// The kernels run with a context that claims 4 threads and whose
// parallel_for runs the chunks of [0, n) in reverse order (serially), so a
// kernel that depends on the order or coverage of its ranges fails here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/host_ops.h"
#include "codegen/kernels/tk.h"
#include "interp/interpreter.h"
#include "kit/kit.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::test::hostkernel {

using KernelFn = int32_t (*)(const tk_args *, const tessera_host_ctx_t *);

inline void reverseChunks(const tessera_host_ctx_t *, int64_t n, tessera_host_body_t body,
                          void *closure) {
  int64_t chunks = n < 3 ? n : 3, step = (n + chunks - 1) / chunks;
  for (int64_t c = chunks - 1; c >= 0; --c) {
    int64_t begin = c * step, end = begin + step < n ? begin + step : n;
    if (begin < end)
      body(closure, begin, end);
  }
}

inline const tessera_host_ctx_t *testContext() {
  static const tessera_host_ctx_t ctx{&reverseChunks, nullptr, 4};
  return &ctx;
}

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};

/// Runs `call` (a call of a core op) natively on `inputs` (one tensor per
/// argument); the outputs, one per result tensor.
inline Expected<std::vector<ir::Tensor>> runNative(const ir::CallNode &call,
                                                   const std::vector<ir::Tensor> &inputs) {
  auto lowered = codegen::lowerHostOp(call);
  if (!lowered)
    return std::move(lowered).error();
  auto types = codegen::hostOpTypes(call);
  if (!types)
    return std::move(types).error();
  std::string symbol = "tk_" + lowered->kernel;
  auto fn = reinterpret_cast<KernelFn>(dlsym(RTLD_DEFAULT, symbol.c_str()));
  if (!fn)
    return Error::format("kernel {} not found in the native kernel library", symbol);
  std::vector<ir::Tensor> outputs;
  for (const ir::Type &t : types->outputs)
    outputs.emplace_back(t.dtype(), t.shape());
  auto view = [](const ir::Tensor &t) {
    return tk_tensor{const_cast<uint8_t *>(t.bytes()), t.shape().data(), int32_t(t.rank()),
                     int32_t(t.dtype())};
  };
  std::vector<tk_tensor> in, out;
  for (const ir::Tensor &t : inputs)
    in.push_back(view(t));
  // Constant arguments the lowering laid out (KernelCall::packed) replace
  // the inputs, as compile/lower.cpp replaces their buffers.
  for (const codegen::PackedInput &p : lowered->packed)
    in.at(p.input) = view(p.data);
  for (const ir::Tensor &t : outputs)
    out.push_back(view(t));
  std::unique_ptr<void, AlignedFree> scratch;
  if (lowered->scratchBytes)
    scratch.reset(std::aligned_alloc(64, (lowered->scratchBytes + 63) / 64 * 64));
  tk_args args{in.data(),
               out.data(),
               lowered->ia.data(),
               lowered->fa.data(),
               scratch.get(),
               int32_t(in.size()),
               int32_t(out.size()),
               int32_t(lowered->ia.size()),
               int32_t(lowered->fa.size())};
  int32_t rc = fn(&args, testContext());
  if (rc != TESSERA_HOST_OK)
    return Error::format("{} returned {}", symbol, rc);
  return outputs;
}

/// Runs a kit case (kit/kit.h: @main is one op call on
/// parameters and constants) natively and with the interpreter on random
/// inputs from `seed`. "" when they agree, else what differs.
inline std::string checkCase(const kit::KitCase &kc, uint64_t seed) {
  const ir::Function main = kc.module.find("main");
  if (!main || kc.ops.size() != 1)
    return "case '" + kc.label + "' is not a single-op case";
  const auto *call = kc.ops[0]->as<ir::CallNode>();
  std::mt19937_64 rng(seed);
  std::vector<ir::Tensor> params;
  std::unordered_map<const ir::ExprNode *, ir::Tensor> values;
  for (size_t i = 0; i < main->params().size(); ++i) {
    params.push_back(kit::randomTensor(main->params()[i]->type(),
                                                  kc.inputDomains[i], rng));
    values[main->params()[i].get()] = params.back();
  }
  std::vector<ir::Tensor> args;
  for (const ir::Expr &arg : call->args()) {
    if (const auto *c = arg->as<ir::ConstantNode>())
      args.push_back(c->data());
    else if (values.count(arg.get()))
      args.push_back(values.at(arg.get()));
    else
      return "case '" + kc.label + "': an argument is neither a parameter nor a constant";
  }
  auto want = interp::run(kc.module, params);
  if (!want)
    return "case '" + kc.label + "': interpreter: " + want.error().str();
  std::vector<ir::Tensor> wantT = want->flatten();
  auto got = runNative(*call, args);
  if (!got)
    return "case '" + kc.label + "': " + got.error().str();
  if (got->size() != wantT.size())
    return fmt::format("case '{}': {} outputs, want {}", kc.label, got->size(), wantT.size());
  for (size_t i = 0; i < wantT.size(); ++i) {
    std::string diff = kit::compareTensors((*got)[i], wantT[i]);
    if (!diff.empty())
      return fmt::format("case '{}': output {}: {}", kc.label, i, diff);
  }
  return "";
}

/// Every catalogue sample of `op` (kit::samplesFor) through
/// checkCase; the failures (empty: all passed). No samples is a failure.
inline std::vector<std::string> checkOpSamples(std::string_view op, uint64_t seed = 7) {
  std::vector<std::string> failures;
  auto samples = kit::samplesFor(op);
  if (samples.empty())
    failures.push_back(fmt::format("no catalogue samples for op '{}'", op));
  for (const auto &sample : samples) {
    auto kc = kit::buildOpCase(sample, seed);
    if (!kc) {
      failures.push_back(kc.error().str());
      continue;
    }
    std::string diff = checkCase(*kc, seed + 1);
    if (!diff.empty())
      failures.push_back(diff);
  }
  return failures;
}

} // namespace tessera::test::hostkernel
