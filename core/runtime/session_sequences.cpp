//===- runtime/session_sequences.cpp - Sequences in a session ------------===//
//
// A sequence (runtime/plan.h, TensorInfo::sequence) is a list of tensors of
// run-time length whose elements may differ in shape: what a Loop run at
// run time builds when its body inserts into a list, and a model's sequence
// inputs and outputs. A session holds each sequence buffer's list
// (SessionImpl::sequences); its elements are copies, made once and never
// written, so copying a list (a loop's carried value, an output) shares
// them. Sequence steps run the sequence ops on those lists; an element
// taken out (seq_at, concat_ and stack_from_seq) is written into its
// output buffer after the step has set the run-time symbols that size it,
// which may grow memory as a SetSymbol step does.
//
//===----------------------------------------------------------------------===//
#include "runtime/session.h"

#include "runtime/session_internal.h"
#include "tessera/c/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

namespace tessera::runtime {

namespace detail {

std::shared_ptr<const SequenceElement> SequenceElement::make(DLDataType dtype,
                                                             std::vector<int64_t> shape,
                                                             const void *src, uint64_t bytes) {
  auto e = std::make_shared<SequenceElement>();
  e->dtype = dtype;
  e->shape = std::move(shape);
  e->bytes = bytes;
  e->data = AlignedBytes::make(bytes);
  if (bytes > 0)
    std::memcpy(e->data.data(), src, bytes);
  return e;
}

DLTensor SequenceElement::view() const {
  DLTensor t{};
  t.data = data.data();
  t.device = {kDLCPU, 0};
  t.ndim = int32_t(shape.size());
  t.dtype = dtype;
  t.shape = const_cast<int64_t *>(shape.data());
  return t;
}

} // namespace detail

namespace {

using detail::SequenceElement;
using detail::SequenceList;

uint64_t bytesOf(DLDataType dtype, const std::vector<int64_t> &shape) {
  TensorInfo t;
  t.dtype = dtype;
  t.shape = shape;
  return t.bytes();
}

/// The one integer at `p` of dtype `t` (a position).
int64_t readInt(const void *p, DLDataType t) {
  const bool isSigned = t.code == kDLInt;
  switch (t.bits) {
  case 8: return isSigned ? *static_cast<const int8_t *>(p) : *static_cast<const uint8_t *>(p);
  case 16: return isSigned ? *static_cast<const int16_t *>(p) : *static_cast<const uint16_t *>(p);
  case 32: return isSigned ? *static_cast<const int32_t *>(p) : *static_cast<const uint32_t *>(p);
  default: return *static_cast<const int64_t *>(p);
  }
}

/// Position `p` in a list of n elements, in [-n, n - 1] (or [-n, n] when
/// `end` allows the place after the last), made non-negative.
Expected<size_t> position(int64_t p, size_t n, bool end) {
  const int64_t count = int64_t(n);
  if (p < -count || p > (end ? count : count - 1))
    return Error::format("position {} is out of range for a sequence of {} element{}", p, n,
                         n == 1 ? "" : "s");
  return size_t(p < 0 ? p + count : p);
}

/// The shape of the elements joined along `axis` (stacked on a new axis
/// there with `stack`): every element has the first's rank and dims but
/// (concatenated) along the axis.
Expected<std::vector<int64_t>> joinedShape(const SequenceList &list, size_t axis, bool stack) {
  if (list.empty())
    return Error("cannot concatenate an empty sequence");
  const std::vector<int64_t> &first = list[0]->shape;
  if (axis >= first.size() + (stack ? 1 : 0))
    return Error::format("axis {} is out of range for elements of rank {}", axis, first.size());
  std::vector<int64_t> shape = first;
  if (stack)
    shape.insert(shape.begin() + ptrdiff_t(axis), 0);
  shape[axis] = 0; // the sum below
  for (size_t i = 0; i < list.size(); ++i) {
    const std::vector<int64_t> &s = list[i]->shape;
    bool fits = s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = s[d] == first[d] || (!stack && d == axis);
    if (!fits)
      return Error::format("element {} has shape [{}], element 0 [{}]: they differ {}", i,
                           fmt::join(s, ", "), fmt::join(first, ", "),
                           stack ? "(stacked elements must agree)" : "outside the axis");
    shape[axis] += stack ? 1 : s[axis];
  }
  return shape;
}

/// Writes the elements joined along `axis` to `out` (joinedShape's layout).
void writeJoined(const SequenceList &list, size_t axis, void *out) {
  int64_t outer = 1;
  for (size_t d = 0; d < axis && d < list[0]->shape.size(); ++d)
    outer *= list[0]->shape[d];
  if (outer == 0)
    return;
  auto *dst = static_cast<uint8_t *>(out);
  for (int64_t o = 0; o < outer; ++o)
    for (const auto &e : list) {
      const uint64_t chunk = e->bytes / uint64_t(outer);
      std::memcpy(dst, e->data.data() + uint64_t(o) * chunk, chunk);
      dst += chunk;
    }
}

/// An element bound to a sequence input: a CPU tensor of `dtype`, dense
/// row-major, its data there when it has bytes. Its size in bytes.
Expected<uint64_t> checkElement(const DLTensor &t, DLDataType dtype) {
  if (t.device.device_type != kDLCPU)
    return Error::format("expected a CPU tensor, got device type {}", int(t.device.device_type));
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    return Error::format("invalid DLTensor (ndim {}, shape {})", t.ndim, t.shape ? "set" : "null");
  if (t.dtype.code != dtype.code || t.dtype.bits != dtype.bits || t.dtype.lanes != dtype.lanes)
    return Error::format("expected dtype {}, got {}", dtypeString(dtype), dtypeString(t.dtype));
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  for (int64_t d : shape)
    if (d < 0)
      return Error::format("shape [{}] has a negative dim", fmt::join(shape, ", "));
  if (t.strides) {
    int64_t compact = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      if (shape[d] > 1 && t.strides[d] != compact)
        return Error("expected dense row-major strides");
      compact *= shape[d];
    }
  }
  const uint64_t bytes = bytesOf(dtype, shape);
  if (bytes > 0 && !t.data)
    return Error("data is null");
  return bytes;
}

} // namespace

std::pair<void *, std::vector<int64_t>> SessionImpl::tensorArg(size_t step, size_t a) const {
  const Plan &plan = model->plan();
  const uint32_t b = plan.steps[step].args[a];
  return {hostArgs[steps[step].first + a], dynamic ? shapes[b] : plan.buffers[b].info.shape};
}

Status SessionImpl::runSequenceStep(size_t i) {
  const Plan &plan = model->plan();
  const Step &step = plan.steps[i];
  const std::string &op = step.symbol;
  const size_t n = step.numInputs;
  const uint32_t outBuffer = step.args[n];
  auto fail = [&](const Error &e) {
    return Error::format("{}: {}", detail::stepName(plan, i), e.str()).setCode(e.code());
  };
  auto element = [&](size_t a) {
    auto [ptr, shape] = tensorArg(i, a);
    const DLDataType dtype = plan.buffers[step.args[a]].info.dtype;
    const uint64_t bytes = bytesOf(dtype, shape);
    return SequenceElement::make(dtype, std::move(shape), ptr, bytes);
  };
  auto positionArg = [&](size_t a, size_t length, bool end) {
    return position(readInt(tensorArg(i, a).first, plan.buffers[step.args[a]].info.dtype), length,
                    end);
  };
  // Writes `shape` (setting the run-time symbols of the output's dims) and
  // returns the output's data pointer (memory may have grown meanwhile).
  auto sizeOutput = [&](const std::vector<int64_t> &shape) -> Expected<void *> {
    const TensorInfo &info = plan.buffers[outBuffer].info;
    if (shape.size() != info.shape.size())
      return Error::format("the element has rank {}, the result {} rank {}", shape.size(),
                           plan.str(info), info.shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (isSymbolDim(info.shape[d])) {
        TS_RETURN_IF_ERROR(setSymbolAt(i, uint32_t(symbolIndexOf(info.shape[d])), shape[d]));
      } else if (info.shape[d] != shape[d]) {
        return Error::format("dim {} of the element is {}, the result {} has {}", d, shape[d],
                             plan.str(info), info.shape[d]);
      }
    }
    return tensorArg(i, n).first;
  };

  if (op == "seq_empty") {
    sequences[outBuffer].clear();
    return okStatus();
  }
  if (op == "seq_construct") {
    SequenceList list;
    for (size_t a = 0; a < n; ++a)
      list.push_back(element(a));
    sequences[outBuffer] = std::move(list);
    return okStatus();
  }
  const SequenceList &in = sequences[step.args[0]];
  if (op == "seq_length") {
    *static_cast<int64_t *>(tensorArg(i, n).first) = int64_t(in.size());
    return okStatus();
  }
  if (op == "seq_insert") {
    size_t p = in.size();
    if (n > 2) {
      auto at = positionArg(2, in.size(), /*end=*/true);
      if (!at.ok())
        return fail(at.error());
      p = *at;
    }
    SequenceList list = in;
    list.insert(list.begin() + ptrdiff_t(p), element(1));
    sequences[outBuffer] = std::move(list);
    return okStatus();
  }
  if (op == "seq_erase") {
    if (in.empty())
      return fail(Error("cannot erase from an empty sequence"));
    size_t p = in.size() - 1;
    if (n > 1) {
      auto at = positionArg(1, in.size(), /*end=*/false);
      if (!at.ok())
        return fail(at.error());
      p = *at;
    }
    SequenceList list = in;
    list.erase(list.begin() + ptrdiff_t(p));
    sequences[outBuffer] = std::move(list);
    return okStatus();
  }
  if (op == "seq_at") {
    auto at = positionArg(1, in.size(), /*end=*/false);
    if (!at.ok())
      return fail(at.error());
    const std::shared_ptr<const SequenceElement> e = in[*at]; // `in` may be the output's
    auto out = sizeOutput(e->shape);
    if (!out.ok())
      return fail(out.error());
    if (e->bytes > 0)
      std::memcpy(*out, e->data.data(), e->bytes);
    return okStatus();
  }
  // concat_from_seq, stack_from_seq
  const bool stack = op == "stack_from_seq";
  auto shape = joinedShape(in, step.target, stack);
  if (!shape.ok())
    return fail(shape.error());
  auto out = sizeOutput(*shape); // grows memory, never the lists
  if (!out.ok())
    return fail(out.error());
  writeJoined(in, step.target, *out);
  return okStatus();
}

Status Session::setInputSequence(size_t index, std::span<const DLTensor> elements) {
  SessionImpl &s = *impl_;
  const auto &inputs = s.model->inputs();
  if (index >= inputs.size())
    return Error::format("input index {} out of range (the model has {} input{})", index,
                         inputs.size(), inputs.size() == 1 ? "" : "s");
  const TensorInfo &info = inputs[index];
  const std::string who = info.name.empty() ? fmt::format("input {}", index)
                                            : fmt::format("input '{}'", info.name);
  if (!info.sequence)
    return Error::format("{} is a tensor ({}), not a sequence: bind it with setInput", who,
                         s.model->plan().str(info));
  SequenceList list;
  for (size_t k = 0; k < elements.size(); ++k) {
    const DLTensor &t = elements[k];
    if (info.elementRank >= 0 && t.ndim != info.elementRank)
      return Error::format("{} element {}: expected rank {}, got {}", who, k, info.elementRank,
                           t.ndim);
    auto bytes = checkElement(t, info.dtype);
    if (!bytes.ok())
      return Error::format("{} element {}: {}", who, k, bytes.error().str());
    const uint8_t *data = static_cast<const uint8_t *>(t.data);
    list.push_back(SequenceElement::make(info.dtype, std::vector<int64_t>(t.shape, t.shape + t.ndim),
                                         data ? data + t.byte_offset : nullptr, *bytes));
  }
  s.sequences[s.model->plan().inputs[index]] = std::move(list);
  s.inputSet[index] = true;
  return okStatus();
}

Expected<std::span<const DLTensor>> Session::outputSequence(size_t index) const {
  const SessionImpl &s = *impl_;
  const auto &outputs = s.model->outputs();
  if (index >= outputs.size())
    return Error::format("output index {} out of range (the model has {} output{})", index,
                         outputs.size(), outputs.size() == 1 ? "" : "s");
  if (!outputs[index].sequence)
    return Error::format("output {} ('{}') is a tensor ({}): read it with output", index,
                         outputs[index].name, s.model->plan().str(outputs[index]));
  return std::span<const DLTensor>(s.sequenceViews[index]);
}

} // namespace tessera::runtime
