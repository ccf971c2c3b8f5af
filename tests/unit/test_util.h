//===- tests/unit/test_util.h - Helpers for unit tests ---------*- C++ -*-===//
#pragma once

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/tensor.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace tessera::test {

using namespace tessera::ir;

/// Infers the type of `opName` applied to arguments of the given types.
inline Expected<Type> inferOp(const std::string &opName, std::vector<Type> argTypes,
                              Attrs attrs = {}) {
  std::vector<Expr> args;
  for (size_t i = 0; i < argTypes.size(); ++i)
    args.push_back(makeVar("a" + std::to_string(i), argTypes[i]));
  auto call = makeCall(opName, std::move(args), std::move(attrs));
  if (!call.ok())
    return std::move(call).error();
  return (*call)->type();
}

/// The message of a type error ("" when inference succeeded).
inline std::string inferError(const std::string &opName, std::vector<Type> argTypes,
                              Attrs attrs = {}) {
  auto t = inferOp(opName, std::move(argTypes), std::move(attrs));
  return t.ok() ? std::string() : t.error().str();
}

/// Runs the reference kernel of `opName` on `inputs` (the call must
/// type-check); the kernel's result, error included.
inline Expected<std::vector<Tensor>> runKernel(const std::string &opName,
                                               std::vector<Tensor> inputs, Attrs attrs = {}) {
  std::vector<Expr> args;
  for (auto &t : inputs)
    args.push_back(makeConstant(t));
  auto call = makeCall(opName, std::move(args), std::move(attrs));
  if (!call.ok())
    FAIL("type error: " << call.error().str());
  const auto *node = (*call)->as<CallNode>();
  return node->op()->kernel(inputs, node->attrs(), node->type());
}

/// Runs the reference kernel of `opName` on `inputs` (types inferred first).
inline std::vector<Tensor> runOp(const std::string &opName, std::vector<Tensor> inputs,
                                 Attrs attrs = {}) {
  auto out = runKernel(opName, std::move(inputs), std::move(attrs));
  if (!out.ok())
    FAIL("kernel error: " << out.error().str());
  return std::move(out).value();
}

/// Runs a single-output op.
inline Tensor run1(const std::string &opName, std::vector<Tensor> inputs, Attrs attrs = {}) {
  auto outs = runOp(opName, std::move(inputs), std::move(attrs));
  REQUIRE(outs.size() == 1);
  return outs[0];
}

/// The message of a kernel error ("" when the kernel succeeded); the call
/// must type-check.
inline std::string kernelError(const std::string &opName, std::vector<Tensor> inputs,
                               Attrs attrs = {}) {
  auto out = runKernel(opName, std::move(inputs), std::move(attrs));
  return out.ok() ? std::string() : out.error().str();
}

/// The inferred type of a call that must type-check.
inline Type inferred(const std::string &opName, std::vector<Type> argTypes, Attrs attrs = {}) {
  auto t = inferOp(opName, std::move(argTypes), std::move(attrs));
  if (!t.ok())
    FAIL("type error: " << t.error().str());
  return *t;
}

inline Tensor f32(Shape shape, std::vector<double> values) {
  return Tensor::fromDoubles(DType::F32, std::move(shape), values);
}
inline Tensor i64(Shape shape, std::vector<int64_t> values) {
  return Tensor::fromInts(DType::I64, std::move(shape), values);
}

/// Element-wise comparison with |a - b| <= atol + rtol * |b|; NaNs and
/// infinities must match.
inline void requireClose(const Tensor &actual, const Tensor &expected, double rtol = 1e-5,
                         double atol = 1e-6) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape() == expected.shape());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.getDouble(i), b = expected.getDouble(i);
    if (std::isnan(b)) {
      INFO("element " << i);
      REQUIRE(std::isnan(a));
      continue;
    }
    INFO("element " << i << ": got " << a << ", expected " << b);
    if (std::isinf(b)) {
      REQUIRE(a == b);
      continue;
    }
    REQUIRE(std::abs(a - b) <= atol + rtol * std::abs(b));
  }
}

} // namespace tessera::test
