//===- ir/expr.h - Expression nodes of the core IR -------------*- C++ -*-===//
//
// The IR is an immutable DAG of expressions held by shared pointers:
//   Var           a function parameter
//   Constant      a tensor that the node owns
//   Call          of an op, of a global function (@name) or of a local
//                 Function expression (e.g. a composite)
//   Tuple, TupleGetItem
//   Function      params, body and typed attributes
// Every node carries its type, computed when the node is built; builders
// return Expected<Expr> because an op's type relation may reject its inputs.
// Nodes also carry a source span and an optional name (the value name in the
// text format, or e.g. the ONNX node name); neither takes part in structural
// equality or hashing.
//
// Nothing here recurses on the depth of the graph: node destruction is
// iterative, and traversal lives in ir/visit.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/attrs.h"
#include "ir/op.h"
#include "ir/tensor.h"
#include "ir/type.h"
#include "support/error.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tessera::ir {

class ExprNode;
class VarNode;
class ConstantNode;
class CallNode;
class TupleNode;
class TupleGetItemNode;
class FunctionNode;

using Expr = std::shared_ptr<const ExprNode>;
using Var = std::shared_ptr<const VarNode>;
using Function = std::shared_ptr<const FunctionNode>;

/// A position in a source text (1-based; 0 means unknown).
struct Span {
  uint32_t line = 0;
  uint32_t col = 0;
  bool known() const { return line != 0; }
};

enum class ExprKind : uint8_t { Var, Constant, Call, Tuple, TupleGetItem, Function };

class ExprNode {
public:
  virtual ~ExprNode();
  ExprNode(const ExprNode &) = delete;
  ExprNode &operator=(const ExprNode &) = delete;

  ExprKind kind() const { return kind_; }
  const Type &type() const { return type_; }
  /// Operands in evaluation order: call arguments (after the callee, for a
  /// call of a local function), tuple fields, the tuple of a TupleGetItem,
  /// the body of a Function.
  std::span<const Expr> operands() const { return {operandData(), numOperands_}; }
  const std::string &name() const { return name_; }
  Span span() const { return span_; }

  template <typename T> const T *as() const {
    return kind_ == T::kKind ? static_cast<const T *>(this) : nullptr;
  }

protected:
  ExprNode(ExprKind kind, Type type, std::vector<Expr> operands, std::string name, Span span);

private:
  static constexpr uint32_t kInlineOperands = 2;
  const Expr *operandData() const {
    return numOperands_ <= kInlineOperands ? inline_ : heap_;
  }
  Expr *operandData() { return numOperands_ <= kInlineOperands ? inline_ : heap_; }

  // Laid out so that a walk reads one cache line per node: the kind and the
  // operands come first (with make_shared's control block they fill the
  // allocation's first 64 bytes). Most nodes have one or two operands,
  // kept inline; a node with more keeps them in an array of its own. Every
  // owned child lives here, so that ~ExprNode can release long chains
  // without recursion.
  ExprKind kind_;
  uint32_t numOperands_;
  union {
    Expr inline_[kInlineOperands];
    Expr *heap_;
  };
  Type type_;
  std::string name_;
  Span span_;
};

class VarNode final : public ExprNode {
public:
  static constexpr ExprKind kKind = ExprKind::Var;
  VarNode(std::string name, Type type, Span span = {})
      : ExprNode(kKind, std::move(type), {}, std::move(name), span) {}
};

class ConstantNode final : public ExprNode {
public:
  static constexpr ExprKind kKind = ExprKind::Constant;
  ConstantNode(Tensor data, std::string name = {}, Span span = {})
      : ExprNode(kKind, data.type(), {}, std::move(name), span), data_(std::move(data)) {}
  const Tensor &data() const { return data_; }

private:
  Tensor data_;
};

class CallNode final : public ExprNode {
public:
  static constexpr ExprKind kKind = ExprKind::Call;
  enum class CalleeKind : uint8_t { Op, Global, Local };

  CalleeKind calleeKind() const { return calleeKind_; }
  /// The op, for calls of an op (else null).
  const Op *op() const { return op_; }
  /// The global function's name, for calls of @name (else empty).
  const std::string &global() const { return global_; }
  /// The Function expression, for calls of a local function (else null).
  const FunctionNode *localFn() const;
  const Expr &localFnExpr() const { return operands()[0]; }

  std::span<const Expr> args() const {
    return operands().subspan(calleeKind_ == CalleeKind::Local ? 1 : 0);
  }
  const Attrs &attrs() const { return attrs_; }
  /// op name, "@global" or "fn".
  std::string calleeName() const;

  CallNode(CalleeKind ck, const Op *op, std::string global, Attrs attrs, Type type,
           std::vector<Expr> operands, std::string name, Span span)
      : ExprNode(kKind, std::move(type), std::move(operands), std::move(name), span),
        calleeKind_(ck), op_(op), global_(std::move(global)), attrs_(std::move(attrs)) {}

private:
  CalleeKind calleeKind_;
  const Op *op_;
  std::string global_;
  Attrs attrs_;
};

class TupleNode final : public ExprNode {
public:
  static constexpr ExprKind kKind = ExprKind::Tuple;
  TupleNode(Type type, std::vector<Expr> fields, std::string name, Span span)
      : ExprNode(kKind, std::move(type), std::move(fields), std::move(name), span) {}
  std::span<const Expr> fields() const { return operands(); }
};

class TupleGetItemNode final : public ExprNode {
public:
  static constexpr ExprKind kKind = ExprKind::TupleGetItem;
  TupleGetItemNode(Type type, Expr tuple, int index, std::string name, Span span)
      : ExprNode(kKind, std::move(type), {std::move(tuple)}, std::move(name), span),
        index_(index) {}
  const Expr &tuple() const { return operands()[0]; }
  int index() const { return index_; }

private:
  int index_;
};

class FunctionNode final : public ExprNode {
public:
  static constexpr ExprKind kKind = ExprKind::Function;
  FunctionNode(std::vector<Var> params, Expr body, Attrs attrs, std::string name, Span span);
  const std::vector<Var> &params() const { return params_; }
  const Expr &body() const { return operands()[0]; }
  const Attrs &attrs() const { return attrs_; }
  const Type &resultType() const { return body()->type(); }

private:
  std::vector<Var> params_;
  Attrs attrs_;
};

//===----------------------------------------------------------------------===//
// Builders. Calls normalise attributes and run the type relation; errors name
// the op, the attribute and the shapes.
//===----------------------------------------------------------------------===//

Var makeVar(std::string name, Type type, Span span = {});
Expr makeConstant(Tensor data, std::string name = {}, Span span = {});
Expected<Expr> makeCall(const Op *op, std::vector<Expr> args, Attrs attrs = {},
                        std::string name = {}, Span span = {});
/// Looks the op up in OpRegistry::global(); unknown names are an error.
Expected<Expr> makeCall(std::string_view opName, std::vector<Expr> args, Attrs attrs = {},
                        std::string name = {}, Span span = {});
/// A call of a global function whose type is `fnType` (a function type).
Expected<Expr> makeGlobalCall(std::string global, const Type &fnType, std::vector<Expr> args,
                              std::string name = {}, Span span = {});
/// A call of a local Function expression.
Expected<Expr> makeLocalCall(Expr fn, std::vector<Expr> args, std::string name = {},
                             Span span = {});
Expr makeTuple(std::vector<Expr> fields, std::string name = {}, Span span = {});
Expected<Expr> makeTupleGetItem(Expr tuple, int index, std::string name = {}, Span span = {});
Function makeFunction(std::vector<Var> params, Expr body, Attrs attrs = {},
                      std::string name = {}, Span span = {});

/// Rebuilds `node` with new operands (same kind, callee, attributes, name and
/// span); re-infers its type when an operand's type changed (otherwise the
/// node keeps its type, which inference would give again). Returns `node`
/// itself when the operands are the same pointers. For a Function,
/// `operands` is {body}.
Expected<Expr> withOperands(const Expr &node, std::vector<Expr> operands);

/// Helper for tests and passes: the value or a fatal diagnostic. Only for
/// code paths where failure is a bug in the caller, never for user input.
Expr expectOk(Expected<Expr> e);

} // namespace tessera::ir
