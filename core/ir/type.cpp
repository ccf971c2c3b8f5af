//===- ir/type.cpp - Tensor, tuple and function types --------------------===//
#include "ir/type.h"

#include "ir/symbol.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_set>

namespace tessera::ir {

struct Type::Impl {
  Kind kind;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<Type> fields; // tuple fields or function params
  std::vector<Type> result; // function result (one element)
  int64_t elementRank = -1; // sequences
  size_t hash = 0;
};

namespace {
size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

/// The process-wide table of uniqued types. Fields, parameters and results
/// are uniqued before the type that holds them, so comparing them compares
/// pointers.
class TypeTable {
public:
  /// The uniqued copy of `probe` (its hash already set).
  const Type::Impl *intern(Type::Impl &&probe) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = set_.find(&probe); it != set_.end())
      return *it;
    const Type::Impl *made = new Type::Impl(std::move(probe));
    set_.insert(made);
    return made;
  }

  static TypeTable &get() {
    // Never destroyed: static objects' destructors may still use types.
    static TypeTable *table = new TypeTable;
    return *table;
  }

private:
  struct Hash {
    size_t operator()(const Type::Impl *p) const { return p->hash; }
  };
  struct Eq {
    bool operator()(const Type::Impl *a, const Type::Impl *b) const {
      return a->kind == b->kind && a->dtype == b->dtype && a->shape == b->shape &&
             a->fields == b->fields && a->result == b->result &&
             a->elementRank == b->elementRank;
    }
  };
  std::mutex mu_;
  std::unordered_set<const Type::Impl *, Hash, Eq> set_;
};

const Type::Impl *emptyTupleImpl() {
  static const Type::Impl *impl = [] {
    Type::Impl probe;
    probe.kind = Type::Kind::Tuple;
    probe.hash = mix(0, 2);
    return TypeTable::get().intern(std::move(probe));
  }();
  return impl;
}
} // namespace

int64_t numElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (isSymbol(d))
      return -1; // known only at run time
    n *= d;
  }
  return n;
}

Status checkShape(std::span<const int64_t> shape) {
  if (shapeFits(shape))
    return okStatus();
  // A symbolic shape: its constant dims keep the limits (a symbol's own
  // values are checked when they are known, at run time).
  std::vector<int64_t> constants;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (isKnownSymbol(shape[i]))
      continue;
    if (shape[i] < 0)
      return Error::format("shape {}: dim {} is negative", shapeStr(shape), i);
    constants.push_back(shape[i]);
  }
  if (shapeFits(constants))
    return okStatus();
  return Error::format("shape {} has more than 2^48 elements", shapeStr(shape));
}

Status checkShapes(const Type &t) {
  switch (t.kind()) {
  case Type::Kind::Tensor:
    return checkShape(t.shape());
  case Type::Kind::Sequence:
    return okStatus();
  case Type::Kind::Tuple:
  case Type::Kind::Func: // fields are the parameter types
    for (const Type &f : t.fields())
      TS_RETURN_IF_ERROR(checkShapes(f));
    return t.isFunc() ? checkShapes(t.result()) : okStatus();
  }
  return okStatus();
}

std::string shapeStr(std::span<const int64_t> shape) {
  if (isStatic(shape))
    return fmt::format("[{}]", fmt::join(shape, ", "));
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + dimStr(shape[i]);
  return out + "]";
}

Type::Type() : impl_(emptyTupleImpl()) {}

Type Type::tensor(DType dtype, Shape shape) {
  Impl p;
  p.kind = Kind::Tensor;
  p.dtype = dtype;
  p.shape = std::move(shape);
  size_t h = mix(1, size_t(dtype));
  for (int64_t d : p.shape)
    h = mix(h, std::hash<int64_t>()(d));
  p.hash = h;
  return Type(TypeTable::get().intern(std::move(p)));
}

Type Type::tuple(std::vector<Type> fields) {
  if (fields.empty())
    return Type();
  Impl p;
  p.kind = Kind::Tuple;
  size_t h = mix(0, 2);
  for (const auto &f : fields)
    h = mix(h, f.hash());
  p.fields = std::move(fields);
  p.hash = h;
  return Type(TypeTable::get().intern(std::move(p)));
}

Type Type::func(std::vector<Type> params, Type result) {
  Impl p;
  p.kind = Kind::Func;
  size_t h = mix(0, 3);
  for (const auto &f : params)
    h = mix(h, f.hash());
  h = mix(h, result.hash());
  p.fields = std::move(params);
  p.result.push_back(std::move(result));
  p.hash = h;
  return Type(TypeTable::get().intern(std::move(p)));
}

Type Type::sequence(DType dtype, int64_t elementRank) {
  Impl p;
  p.kind = Kind::Sequence;
  p.dtype = dtype;
  p.elementRank = std::max<int64_t>(elementRank, -1);
  p.hash = mix(mix(4, size_t(dtype)), size_t(p.elementRank + 1));
  return Type(TypeTable::get().intern(std::move(p)));
}

Type::Kind Type::kind() const { return impl_->kind; }
DType Type::dtype() const { return impl_->dtype; }
const Shape &Type::shape() const { return impl_->shape; }
int64_t Type::numElements() const { return ir::numElements(impl_->shape); }
bool Type::isStatic() const {
  if (kind() == Kind::Tensor)
    return ir::isStatic(impl_->shape);
  if (kind() == Kind::Sequence)
    return false; // its length and element shapes are known at run time
  for (const Type &f : fields())
    if (!f.isStatic())
      return false;
  return kind() != Kind::Func || result().isStatic();
}
const std::vector<Type> &Type::fields() const { return impl_->fields; }
const Type &Type::result() const {
  static const Type empty;
  return impl_->result.empty() ? empty : impl_->result[0];
}
size_t Type::hash() const { return impl_->hash; }
int64_t Type::elementRank() const { return impl_->elementRank; }

std::string Type::str() const {
  std::string out;
  appendTo(out);
  return out;
}

void Type::appendTo(std::string &out) const {
  auto appendList = [&](const std::vector<Type> &types) {
    for (size_t i = 0; i < types.size(); ++i) {
      if (i)
        out += ", ";
      types[i].appendTo(out);
    }
  };
  switch (kind()) {
  case Kind::Tensor:
    out += dtypeName(dtype());
    out += '[';
    for (size_t i = 0; i < shape().size(); ++i) {
      if (i)
        out += ", ";
      if (isSymbol(shape()[i]))
        out += dimStr(shape()[i]);
      else
        fmt::format_to(std::back_inserter(out), "{}", shape()[i]);
    }
    out += ']';
    return;
  case Kind::Tuple:
    out += '(';
    appendList(fields());
    if (fields().size() == 1)
      out += ',';
    out += ')';
    return;
  case Kind::Sequence:
    out += "seq(";
    out += dtypeName(dtype());
    if (elementRank() >= 0) {
      out += '[';
      for (int64_t i = 0; i < elementRank(); ++i)
        out += i ? ", _" : "_";
      out += ']';
    }
    out += ')';
    return;
  case Kind::Func:
    out += "fn(";
    appendList(fields());
    out += ") -> ";
    result().appendTo(out);
    return;
  }
}

bool typesMatch(const Type &declared, const Type &inferred) {
  if (declared == inferred)
    return true;
  if (declared.kind() != inferred.kind())
    return false;
  if (declared.isTensor()) {
    if (declared.dtype() != inferred.dtype() || declared.rank() != inferred.rank())
      return false;
    for (size_t i = 0; i < declared.rank(); ++i) {
      const int64_t a = declared.shape()[i], b = inferred.shape()[i];
      if (a != b && !(isSymbol(a) && isSymbol(b) && symbolInfo(a).name.starts_with('?') &&
                      symbolInfo(b).derived() && dimStr(b) == symbolInfo(a).name))
        return false;
    }
    return true;
  }
  if (declared.fields().size() != inferred.fields().size())
    return false;
  for (size_t i = 0; i < declared.fields().size(); ++i)
    if (!typesMatch(declared.fields()[i], inferred.fields()[i]))
      return false;
  return !declared.isFunc() || typesMatch(declared.result(), inferred.result());
}

} // namespace tessera::ir
