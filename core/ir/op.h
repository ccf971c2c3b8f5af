//===- ir/op.h - Operator definitions and their registry -------*- C++ -*-===//
//
// Every op declares its attribute schema (names, kinds, defaults), its arity,
// a type relation (shape and dtype inference) and a reference kernel. The
// registry is filled explicitly by registerCoreOps() (no static registrars:
// linkers drop them from archives); OpRegistry::global() does so once.
//
// Type relations return plain messages ("attribute 'strides' must have 2
// values, got 3"); the registry wraps every failure as
//   conv2d: <message> (inputs: f32[1, 3, 8, 8], f32[8, 4, 3, 3])
// so a relation need not repeat the op name or the input shapes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/attrs.h"
#include "ir/tensor.h"
#include "ir/type.h"
#include "support/error.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir {

/// How an op's outputs depend on its inputs (used by fusion and by the
/// partitioner's cost rules).
enum class OpPattern : uint8_t {
  Elementwise, // out[i] = f(in[i]), same shape
  Broadcast,   // elementwise with numpy broadcasting
  Injective,   // each output element reads one input element (reshape, ...)
  Reduction,   // reduces axes
  ComputeHeavy,// conv, dense, matmul: worth offloading
  Opaque,      // anything else (softmax, resize, ...)
};
std::string_view opPatternName(OpPattern p);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  /// Absent: the attribute is required.
  std::optional<AttrValue> defaultValue;
  std::string doc;
};

/// Shape and dtype inference. `inputs` are the argument types (all tensor
/// types), `attrs` already normalised against the schema.
using TypeRelation =
    std::function<Expected<Type>(std::span<const Type> inputs, const Attrs &attrs)>;

/// Reference kernel: one tensor per output (tuple-typed results give one
/// tensor per field). `outType` is what the type relation inferred.
using Kernel = std::function<Expected<std::vector<Tensor>>(
    std::span<const Tensor> inputs, const Attrs &attrs, const Type &outType)>;

struct Op {
  std::string name;
  std::string description;
  /// Argument names, for diagnostics and docs ("data", "weight"). When
  /// variadic, the last name describes every remaining argument.
  std::vector<std::string> argNames;
  int minArgs = 1;
  int maxArgs = 1; // -1: variadic
  std::vector<AttrSpec> attrs;
  OpPattern pattern = OpPattern::Opaque;
  TypeRelation relation;
  Kernel kernel;
  /// Control flow (if, loop; ir/ops/control.cpp): some arguments are
  /// functions, run when the op says so. The kernel only reports that the
  /// interpreter and the executor run such an op; passes never fold it.
  bool controlFlow = false;
  /// A result dim is decided by the data (nonzero, non_max_suppression):
  /// attribute 'count' is the run-time symbol (ir/symbol.h runtimeSymbol)
  /// that dim is, and the last result is an i64 [1] tensor holding its
  /// value, from which the interpreter and the executor learn it
  /// (docs/design/0013-dynamic-shapes.md, "Run-time values").
  bool dataDependent = false;
  /// Takes or makes sequences (seq_insert, seq_at; ir/ops/sequence.cpp):
  /// the relation sees sequence types; no kernel (the interpreter and the
  /// executor run it on their lists), so passes never fold it.
  bool sequence = false;

  const AttrSpec *findAttr(std::string_view attrName) const;

  /// Checks kinds (an int is accepted where a float is declared, an int list
  /// where a float list is), rejects unknown names, fills defaults. Errors
  /// name the op and the attribute.
  Expected<Attrs> normalizeAttrs(const Attrs &given) const;
  /// Runs the relation after checking arity and that inputs are tensors;
  /// errors are wrapped as described above.
  /// With symbolic input dims, the relation is evaluated at the symbols'
  /// probe values and bounds, and the result read back (ir/symbol.h).
  Expected<Type> inferType(std::span<const Type> inputs, const Attrs &attrs) const;

private:
  Expected<Type> inferSymbolic(std::span<const Type> inputs, const Attrs &attrs) const;
};

class OpRegistry {
public:
  /// The process-wide registry holding the core op set.
  static const OpRegistry &global();

  /// Adds an op; returns an error if the name is taken or the op is malformed.
  Status add(Op op);
  const Op *find(std::string_view name) const;
  /// All ops, sorted by name.
  std::vector<const Op *> all() const;

private:
  std::map<std::string, std::unique_ptr<Op>, std::less<>> ops_;
};

/// Registers the whole core op set (see ops/*.cpp).
Status registerCoreOps(OpRegistry &registry);

} // namespace tessera::ir
