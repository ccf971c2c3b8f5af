//===- plugins/ccompiler/ops_internal.h - Shared by the op emitters -*- C++ -*-===//
//
// A small text builder for the C bodies and the op emitters' declarations;
// used by ops.cpp (elementwise, softmax, data movement) and ops_nn.cpp
// (products, windows). Attribute readers and shape checks are the SDK's op
// helpers (tessera/sdk/op_helpers.hpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops.h"

#include "tessera/sdk/op_helpers.hpp"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tessera::ccompiler::detail {

using namespace sdk;

/// Concatenates anything streamable.
template <typename... A> std::string cat(A &&...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// The C body under construction: lines indented by the current depth.
class Body {
public:
  Body() = default;
  template <typename... A> Body &line(A &&...args) {
    text_ += std::string(size_t(2 * depth_), ' ') + cat(std::forward<A>(args)...) + "\n";
    return *this;
  }
  /// A line that opens a block ("for (...) {").
  template <typename... A> Body &open(A &&...args) {
    line(std::forward<A>(args)...);
    ++depth_;
    return *this;
  }
  /// Ends a block: "}" (or another text; "" for a block without braces).
  Body &close(const char *text = "}") {
    --depth_;
    return *text ? line(text) : *this;
  }
  const std::string &text() const { return text_; }

private:
  std::string text_;
  int depth_ = 1;
};

inline void noEpilogue(const OpDesc &op, const Epilogue &e) {
  if (e.bias || e.act)
    throw Error("op '" + op.op + "' cannot take a fused bias or activation");
}

/// The products and windows (ops_nn.cpp).
OpCode emitConv2d(const OpDesc &op, const Epilogue &epi);
OpCode emitDense(const OpDesc &op, const Epilogue &epi);
OpCode emitMatmul(const OpDesc &op, const Epilogue &epi);
OpCode emitBatchMatmul(const OpDesc &op, const Epilogue &epi);
OpCode emitMaxPool2d(const OpDesc &op, const Epilogue &epi);
OpCode emitAvgPool2d(const OpDesc &op, const Epilogue &epi);
OpCode emitGlobalPool2d(const OpDesc &op, const Epilogue &epi);

} // namespace tessera::ccompiler::detail
