//===- ir/type.h - Tensor, tuple and function types ------------*- C++ -*-===//
//
// A Type is a small immutable value: a tensor type (dtype + shape; a dim is
// a constant or a symbol, ir/symbol.h), a tuple of types, a function type
// (parameter types -> result type), or a sequence type: a list of tensors
// of one dtype whose length and element shapes are known only at run time
// (ONNX's sequences where a tuple of known length cannot stand for them;
// docs/design/0013-dynamic-shapes.md, "Sequences"), with the rank every
// element has when it is known.
//
// Types are uniqued: each distinct type is made once, in a process-wide
// table, and lives until the process exits (as MLIR's types live in their
// context). A Type is one pointer to that representation, so copying one
// costs nothing, touches no shared counter, and comparing two is comparing
// pointers. The table holds as many entries as the process has seen
// distinct types (shapes, dtypes, tuples and signatures), which for a
// compiler is small. Making a type takes a lock; reading one does not.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/dtype.h"
#include "support/error.h"
#include "tessera/sdk/shape_math.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tessera::ir {

using Shape = std::vector<int64_t>;

/// The largest element count of a tensor type, and whether a shape can be a
/// tensor type's: the SDK's rule (tessera/sdk/shape_math.hpp), which the
/// core hands plugins and the SDK's readers enforce.
using sdk::kMaxElements;
using sdk::shapeFits;
/// shapeFits, with an error that says what is wrong.
Status checkShape(std::span<const int64_t> shape);
/// checkShape on every tensor type in `t` (tuple fields, function types).
class Type;
Status checkShapes(const Type &t);

/// Number of elements of a shape (1 for a scalar; -1 when a dim is symbolic).
int64_t numElements(std::span<const int64_t> shape);
/// "[1, 3, 224, 224]"
std::string shapeStr(std::span<const int64_t> shape);

class Type {
public:
  enum class Kind : uint8_t { Tensor, Tuple, Func, Sequence };

  /// An empty tuple type.
  Type();
  static Type tensor(DType dtype, Shape shape);
  static Type tuple(std::vector<Type> fields);
  static Type func(std::vector<Type> params, Type result);
  /// A sequence of `dtype` tensors, each of rank `elementRank` (-1: any,
  /// or not known).
  static Type sequence(DType dtype, int64_t elementRank = -1);

  Kind kind() const;
  bool isTensor() const { return kind() == Kind::Tensor; }
  bool isTuple() const { return kind() == Kind::Tuple; }
  bool isFunc() const { return kind() == Kind::Func; }
  bool isSequence() const { return kind() == Kind::Sequence; }

  // Sequence types: dtype() is the elements', and this their rank (-1: any).
  int64_t elementRank() const;

  // Tensor types. The shape is the uniqued type's own, so the reference
  // (and its data pointer) stays valid until the process exits.
  DType dtype() const;
  const Shape &shape() const;
  size_t rank() const { return shape().size(); }
  /// -1 when a dim is symbolic (known only at run time; see isStatic()).
  int64_t numElements() const;
  /// Whether every dim of every tensor in the type is a constant (ir/symbol.h).
  bool isStatic() const;

  // Tuple types: the fields. Function types: the parameter types.
  const std::vector<Type> &fields() const;
  // Function types: the result type.
  const Type &result() const;

  /// Text form: f32[1, 3], (f32[2], i64[]), fn(f32[2]) -> f32[2], seq(f32[_]),
  /// seq(f32) (elements of any rank)
  std::string str() const;
  /// Appends the text form (what the IR printer uses).
  void appendTo(std::string &out) const;
  size_t hash() const;

  /// Structural equality, which uniquing makes pointer equality.
  friend bool operator==(const Type &a, const Type &b) { return a.impl_ == b.impl_; }
  friend bool operator!=(const Type &a, const Type &b) { return a.impl_ != b.impl_; }

  struct Impl; // opaque; public only so that type.cpp can name it

private:
  explicit Type(const Impl *impl) : impl_(impl) {}
  const Impl *impl_; // uniqued, never freed
};

/// `declared` (from text) against `inferred`: equal, except that a derived
/// placeholder matches the derived symbol that prints as it
/// (derivedPlaceholder, symbol.h).
bool typesMatch(const Type &declared, const Type &inferred);

} // namespace tessera::ir
