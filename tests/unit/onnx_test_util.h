//===- tests/unit/onnx_test_util.h - Helpers for converter tests -*- C++ -*-===//
//
// Runs one converter of ConverterRegistry::standard() on a NodeContext built
// in the test, without a model file. With constant inputs every call folds,
// so the outputs are constants whose data the test compares.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "test_util.h"

#include "frontend/onnx/converter.h"
#include "ir/module.h"
#include "ir/visit.h"

namespace tessera::test {

using OnnxAttrMap = std::map<std::string, frontend::onnx::OnnxAttr, std::less<>>;

inline Expected<std::vector<ir::Expr>> convertNode(const std::string &opType,
                                                   std::vector<ir::Expr> inputs,
                                                   OnnxAttrMap attrs, size_t numOutputs = 1,
                                                   int64_t opset = 17) {
  const auto *spec = frontend::onnx::ConverterRegistry::standard().find(opType);
  if (!spec)
    return Error("no converter for " + opType);
  frontend::onnx::NodeContext ctx(opType, "n0", opset, std::move(inputs), numOutputs,
                                  std::move(attrs));
  return spec->convert(ctx);
}

/// Converts a node whose inputs are all constants; returns its outputs' data.
inline std::vector<ir::Tensor> foldNode(const std::string &opType, std::vector<ir::Tensor> inputs,
                                        OnnxAttrMap attrs, size_t numOutputs = 1,
                                        int64_t opset = 17) {
  std::vector<ir::Expr> args;
  for (auto &t : inputs)
    args.push_back(ir::makeConstant(t));
  auto out = convertNode(opType, std::move(args), std::move(attrs), numOutputs, opset);
  if (!out.ok())
    FAIL("conversion failed: " << out.error().str());
  std::vector<ir::Tensor> result;
  for (const auto &e : *out) {
    const auto *c = e->as<ir::ConstantNode>();
    REQUIRE(c != nullptr);
    result.push_back(c->data());
  }
  return result;
}

/// foldNode for a node with one output.
inline ir::Tensor foldOne(const std::string &opType, std::vector<ir::Tensor> inputs,
                          OnnxAttrMap attrs = {}) {
  auto out = foldNode(opType, std::move(inputs), std::move(attrs));
  REQUIRE(out.size() == 1);
  return out[0];
}

/// The conversion's error message ("" when it succeeds).
inline std::string convertError(const std::string &opType, std::vector<ir::Expr> inputs,
                                OnnxAttrMap attrs = {}) {
  auto out = convertNode(opType, std::move(inputs), std::move(attrs));
  return out.ok() ? std::string() : out.error().str();
}

/// How many calls of `op` @main has, inside its functions too.
inline size_t countCalls(const ir::Module &m, std::string_view op) {
  size_t n = 0;
  for (const ir::ExprNode *e : ir::postOrder(m.find("main")->body()))
    if (const auto *c = e->as<ir::CallNode>(); c && c->op() && c->op()->name == op)
      ++n;
  return n;
}

} // namespace tessera::test
