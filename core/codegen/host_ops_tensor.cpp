//===- codegen/host_ops_tensor.cpp - Lowerings of the tensor family -------===//
//
// Host lowerings (codegen/host_ops.h) of the tensor family: elementwise,
// broadcast, cast, where, the injective data-movement ops, the index ops
// and the image ops. Each lowering turns a call's normalised attributes and
// static types into a call of a kernel of codegen/kernels/{elementwise,
// transform,index,image}.cpp, with everything that depends only on shapes
// and attributes precomputed here: op codes (kernels/tensor_ops.h),
// broadcast and source strides over collapsed dims, pad geometry, fill
// values as bytes of the dtype, resize taps. The ia / fa layout of each
// kernel is documented next to its lowering.
//
//===----------------------------------------------------------------------===//
#include "codegen/host_ops.h"

#include "codegen/kernels/tensor_ops.h"
#include "ir/ops/common.h"
#include "ir/ops/nms_select.h"
#include "ir/ops/resize.h"
#include "ir/ops/transform_common.h"
#include "ir/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace tessera::codegen {

namespace {

using Ints = std::vector<int64_t>;
using ir::DType;

// Must match TK_MAX_RANK of codegen/kernels/tensor_common.h.
constexpr size_t kMaxRank = 16;

int64_t numel(const Ints &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t product(const Ints &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

int64_t elemSize(const ir::Type &t) {
  return int64_t(ir::dtypeSize(t.dtype()));
}

Status checkRank(size_t rank) {
  if (rank > kMaxRank)
    return Error::format("rank {} exceeds the host kernels' maximum of {}", rank, kMaxRank);
  return okStatus();
}

/// The bytes of `v` stored in `dtype` as ir::Tensor::setDouble stores it,
/// little-endian in an int64 (the kernels copy the low elem-size bytes).
int64_t fillBits(DType dtype, double v) {
  ir::Tensor t(dtype, {1});
  t.setDouble(0, v);
  uint64_t bits = 0;
  std::memcpy(&bits, t.bytes(), ir::dtypeSize(dtype));
  return int64_t(bits);
}

/// An output shape and, per source, element strides per output dim.
struct Walk {
  Ints shape;
  std::vector<Ints> strides;
};

/// Drops size-1 dims and merges neighbours that are contiguous for every
/// source, so the innermost run is as long as possible; at least one dim.
/// An empty output becomes [0].
Expected<Walk> collapse(Walk w) {
  if (numel(w.shape) == 0)
    return Walk{{0}, std::vector<Ints>(w.strides.size(), Ints{0})};
  Walk out;
  out.strides.resize(w.strides.size());
  for (size_t d = 0; d < w.shape.size(); ++d) {
    if (w.shape[d] == 1)
      continue;
    bool merge = !out.shape.empty();
    for (size_t k = 0; merge && k < w.strides.size(); ++k)
      merge = out.strides[k].back() == w.strides[k][d] * w.shape[d];
    if (merge) {
      out.shape.back() *= w.shape[d];
      for (size_t k = 0; k < w.strides.size(); ++k)
        out.strides[k].back() = w.strides[k][d];
    } else {
      out.shape.push_back(w.shape[d]);
      for (size_t k = 0; k < w.strides.size(); ++k)
        out.strides[k].push_back(w.strides[k][d]);
    }
  }
  if (out.shape.empty()) {
    out.shape = {1};
    for (Ints &s : out.strides)
      s = {0};
  }
  TS_RETURN_IF_ERROR(checkRank(out.shape.size()));
  return out;
}

/// Appends rank, shape, then each source's strides (tk_read_walk).
void appendWalk(Ints &ia, const Walk &w) {
  ia.push_back(int64_t(w.shape.size()));
  ia.insert(ia.end(), w.shape.begin(), w.shape.end());
  for (const Ints &s : w.strides)
    ia.insert(ia.end(), s.begin(), s.end());
}

/// Numpy broadcasting: the element strides of an input of shape `in` per
/// dim of `out` (0 where the input is broadcast).
Ints broadcastStrides(const Ints &out, const Ints &in) {
  Ints rowStrides = ir::rowMajorStrides(in);
  Ints s(out.size(), 0);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    s[offset + i] = in[i] == 1 ? 0 : rowStrides[i];
  return s;
}

/// The collapsed broadcast walk of the output over every input.
Expected<Walk> broadcastWalk(const HostOpTypes &t) {
  Walk w{t.outputs[0].shape(), {}};
  for (const ir::Type &in : t.inputs)
    w.strides.push_back(broadcastStrides(w.shape, in.shape()));
  return collapse(std::move(w));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// A clip bound as an integer bound of dtype `t` (ir/ops/common.h): u64
/// bounds travel as bit patterns.
int64_t clipBound(double v, bool lower, DType t) {
  return t == DType::U64 ? int64_t(ir::ops::uintBound(v, lower)) : ir::ops::intBound(v, lower, t);
}

// unary: ia = [op, i1, i2], fa = [f0, f1]; per op (tensor_ops.h):
//   leaky_relu fa = [alpha]; hard_sigmoid fa = [alpha, beta];
//   clip fa = [min, max], ia[1..2] = integer bounds (u64: bit patterns);
//   isinf ia[1..2] = [detect_positive, detect_negative].
void addUnary(LoweringTable &table) {
  static const std::map<std::string, int64_t> codes = {
      {"abs", TK_U_ABS},     {"neg", TK_U_NEG},
      {"relu", TK_U_RELU},   {"sigmoid", TK_U_SIGMOID},
      {"tanh", TK_U_TANH},   {"hard_swish", TK_U_HARD_SWISH},
      {"silu", TK_U_SILU},
      {"mish", TK_U_MISH},
      {"sqrt", TK_U_SQRT},   {"exp", TK_U_EXP},
      {"log", TK_U_LOG},     {"erf", TK_U_ERF},
      {"floor", TK_U_FLOOR}, {"ceil", TK_U_CEIL},
      {"round", TK_U_ROUND}, {"reciprocal", TK_U_RECIPROCAL},
      {"sign", TK_U_SIGN},   {"sin", TK_U_SIN},
      {"cos", TK_U_COS},     {"tan", TK_U_TAN},
      {"asin", TK_U_ASIN},   {"acos", TK_U_ACOS},
      {"atan", TK_U_ATAN},   {"sinh", TK_U_SINH},
      {"cosh", TK_U_COSH},   {"asinh", TK_U_ASINH},
      {"acosh", TK_U_ACOSH}, {"atanh", TK_U_ATANH},
      {"isnan", TK_U_ISNAN}, {"logical_not", TK_U_LOGICAL_NOT},
  };
  for (const auto &[name, code] : codes)
    table.add(name, [code](const ir::Attrs &, const HostOpTypes &) -> Expected<KernelCall> {
      return KernelCall{"unary", {code}, {}, 0};
    });
  table.add("leaky_relu", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"unary", {TK_U_LEAKY_RELU}, {attrs.getFloat("alpha")}, 0};
  });
  table.add(
      "hard_sigmoid", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
        return KernelCall{
            "unary", {TK_U_HARD_SIGMOID}, {attrs.getFloat("alpha"), attrs.getFloat("beta")}, 0};
      });
  table.add("gelu", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    bool tanhApprox = attrs.getString("approximate") == "tanh";
    return KernelCall{"unary", {tanhApprox ? TK_U_GELU_TANH : TK_U_GELU}, {}, 0};
  });
  table.add("clip", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    double lo = attrs.getFloat("min"), hi = attrs.getFloat("max");
    DType dt = t.inputs[0].dtype();
    return KernelCall{
        "unary", {TK_U_CLIP, clipBound(lo, true, dt), clipBound(hi, false, dt)}, {lo, hi}, 0};
  });
  table.add("isinf", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"unary",
                      {TK_U_ISINF, attrs.getBool("detect_positive") ? 1 : 0,
                       attrs.getBool("detect_negative") ? 1 : 0},
                      {},
                      0};
  });
}

// binary / compare: ia = [op, rank, shape[rank], strides_a[rank],
// strides_b[rank]] over the collapsed output.
Expected<KernelCall> lowerBroadcast(const char *kernel, int64_t op, const HostOpTypes &t) {
  TS_ASSIGN_OR_RETURN(Walk w, broadcastWalk(t));
  KernelCall call{kernel, {op}, {}, 0};
  appendWalk(call.ia, w);
  return call;
}

void addBinary(LoweringTable &table) {
  static const std::map<std::string, int64_t> binary = {
      {"add", TK_B_ADD},   {"subtract", TK_B_SUB}, {"multiply", TK_B_MUL}, {"divide", TK_B_DIV},
      {"power", TK_B_POW}, {"maximum", TK_B_MAX},  {"minimum", TK_B_MIN},
  };
  for (const auto &[name, code] : binary)
    table.add(name, [code](const ir::Attrs &, const HostOpTypes &t) {
      return lowerBroadcast("binary", code, t);
    });
  table.add("mod", [](const ir::Attrs &attrs, const HostOpTypes &t) {
    return lowerBroadcast("binary", attrs.getInt("fmod") == 1 ? TK_B_FMOD : TK_B_MOD, t);
  });
  table.add("bit_shift", [](const ir::Attrs &attrs, const HostOpTypes &t) {
    return lowerBroadcast("binary", attrs.getString("direction") == "left" ? TK_B_SHL : TK_B_SHR,
                          t);
  });
  static const std::map<std::string, int64_t> compare = {
      {"equal", TK_C_EQ},      {"less", TK_C_LT},          {"greater", TK_C_GT},
      {"less_equal", TK_C_LE}, {"greater_equal", TK_C_GE}, {"logical_and", TK_C_AND},
      {"logical_or", TK_C_OR}, {"logical_xor", TK_C_XOR},
  };
  for (const auto &[name, code] : compare)
    table.add(name, [code](const ir::Attrs &, const HostOpTypes &t) {
      return lowerBroadcast("compare", code, t);
    });
  // where: ia = [elem_size, rank, shape[rank], strides_cond, strides_x, strides_y].
  table.add("where", [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
    TS_ASSIGN_OR_RETURN(Walk w, broadcastWalk(t));
    KernelCall call{"where", {elemSize(t.outputs[0])}, {}, 0};
    appendWalk(call.ia, w);
    return call;
  });
  // cast: no attributes (the kernel reads the dtypes of its tensors).
  table.add("cast", [](const ir::Attrs &, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"cast", {}, {}, 0};
  });
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// strided_copy: ia = [elem_size, base, rank, shape[rank], strides[rank]].
Expected<KernelCall> stridedCopy(const ir::Type &out, int64_t base, Ints strides) {
  TS_ASSIGN_OR_RETURN(Walk w, collapse(Walk{out.shape(), {std::move(strides)}}));
  KernelCall call{"strided_copy", {elemSize(out), base}, {}, 0};
  appendWalk(call.ia, w);
  return call;
}

void addTransform(LoweringTable &table) {
  // copy: ia = [nbytes]; the shape-only ops.
  for (const char *op : {"reshape", "flatten", "squeeze", "unsqueeze"})
    table.add(op, [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
      return KernelCall{"copy", {numel(t.outputs[0].shape()) * elemSize(t.outputs[0])}, {}, 0};
    });
  table.add("transpose", [](const ir::Attrs &attrs, const HostOpTypes &t) {
    const Ints &in = t.inputs[0].shape();
    Ints perm = attrs.getInts("perm");
    if (perm.empty())
      for (int64_t i = int64_t(in.size()) - 1; i >= 0; --i)
        perm.push_back(i);
    Ints inStrides = ir::rowMajorStrides(in), strides;
    for (int64_t p : perm)
      strides.push_back(inStrides[size_t(p)]);
    return stridedCopy(t.outputs[0], 0, strides);
  });
  table.add("slice", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &in = t.inputs[0].shape();
    // First index and step per dim, as the reference kernel computes them
    // (the counts are the output shape).
    TS_ASSIGN_OR_RETURN(std::vector<ir::ops::SliceDim> dims, ir::ops::sliceDims(in, attrs));
    Ints inStrides = ir::rowMajorStrides(in), strides(in.size());
    int64_t base = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      base += dims[d].start * inStrides[d];
      strides[d] = dims[d].step * inStrides[d];
    }
    if (numel(t.outputs[0].shape()) == 0)
      base = 0;
    return stridedCopy(t.outputs[0], base, strides);
  });
  // dynamic_slice: strided_copy's walk over the window, then per sliced
  // axis its dim, size and stride (kernels/transform.cpp).
  table.add("dynamic_slice",
            [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
              const Ints &in = t.inputs[0].shape();
              TS_ASSIGN_OR_RETURN(Ints axes, ir::ops::normalizeAxes(attrs.getInts("axes"),
                                                                    int64_t(in.size()), "axes"));
              const Ints sizes = attrs.getInts("sizes"), inStrides = ir::rowMajorStrides(in);
              TS_ASSIGN_OR_RETURN(KernelCall call, stridedCopy(t.outputs[0], 0, inStrides));
              call.kernel = "dynamic_slice";
              call.ia.push_back(int64_t(axes.size()));
              for (size_t j = 0; j < axes.size(); ++j)
                call.ia.insert(call.ia.end(),
                               {in[size_t(axes[j])], sizes[j], inStrides[size_t(axes[j])]});
              return call;
            });
  table.add("expand", [](const ir::Attrs &, const HostOpTypes &t) {
    return stridedCopy(t.outputs[0], 0,
                       broadcastStrides(t.outputs[0].shape(), t.inputs[0].shape()));
  });
  // concat: ia = [elem_size, outer, out_row, len[nin]] (rows of the inputs,
  // in elements, per index of the dims before the axis).
  table.add("concat", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &out = t.outputs[0].shape();
    TS_ASSIGN_OR_RETURN(int64_t axis,
                        ir::ops::normalizeAxis(attrs.getInt("axis"), int64_t(out.size())));
    int64_t inner = product(out, size_t(axis) + 1, out.size());
    KernelCall call{
        "concat",
        {elemSize(t.outputs[0]), product(out, 0, size_t(axis)), out[size_t(axis)] * inner},
        {},
        0};
    for (const ir::Type &in : t.inputs)
      call.ia.push_back(in.shape()[size_t(axis)] * inner);
    return call;
  });
  // split: ia = [elem_size, outer, in_row, (offset_j, len_j) per output].
  table.add("split", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &in = t.inputs[0].shape();
    TS_ASSIGN_OR_RETURN(int64_t axis,
                        ir::ops::normalizeAxis(attrs.getInt("axis"), int64_t(in.size())));
    int64_t inner = product(in, size_t(axis) + 1, in.size());
    KernelCall call{"split",
                    {elemSize(t.inputs[0]), product(in, 0, size_t(axis)), in[size_t(axis)] * inner},
                    {},
                    0};
    int64_t offset = 0;
    for (const ir::Type &out : t.outputs) {
      int64_t len = out.shape()[size_t(axis)] * inner;
      call.ia.push_back(offset);
      call.ia.push_back(len);
      offset += len;
    }
    return call;
  });
  // pad: ia = [elem_size, rank, mode, fill_bits, (out, in_stride, begin, lo, n)
  // per dim] with begin = max(pad_begin, 0), the kept input range [lo, lo + n)
  // after cropping. A rank-0 input is padded as [1].
  table.add("pad", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    Ints in = t.inputs[0].shape(), out = t.outputs[0].shape();
    Ints pads = attrs.getInts("pads");
    size_t rank = in.size();
    if (rank == 0) {
      in = out = {1};
      pads = {0, 0};
      rank = 1;
    }
    TS_RETURN_IF_ERROR(checkRank(rank));
    std::string mode = attrs.getString("mode");
    int64_t code = mode == "reflect" ? TK_PAD_REFLECT
                   : mode == "edge"  ? TK_PAD_EDGE
                                     : TK_PAD_CONSTANT;
    KernelCall call{"pad",
                    {elemSize(t.inputs[0]), int64_t(rank), code,
                     fillBits(t.inputs[0].dtype(), attrs.getFloat("value"))},
                    {},
                    0};
    Ints strides = ir::rowMajorStrides(in);
    for (size_t d = 0; d < rank; ++d) {
      int64_t b = pads[d], e = pads[d + rank];
      call.ia.insert(call.ia.end(),
                     {out[d], strides[d], std::max<int64_t>(b, 0), std::max<int64_t>(-b, 0),
                      in[d] + std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0)});
    }
    return call;
  });
}

//===----------------------------------------------------------------------===//
// Index ops
//===----------------------------------------------------------------------===//

int64_t reductionCode(const std::string &s) {
  return s == "add"   ? TK_R_ADD
         : s == "mul" ? TK_R_MUL
         : s == "max" ? TK_R_MAX
         : s == "min" ? TK_R_MIN
                      : TK_R_NONE;
}

void addIndex(LoweringTable &table) {
  // gather: ia = [elem_size, outer, dim, nidx, inner].
  table.add("gather", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &ds = t.inputs[0].shape();
    TS_ASSIGN_OR_RETURN(int64_t axis,
                        ir::ops::normalizeAxis(attrs.getInt("axis"), int64_t(ds.size())));
    return KernelCall{"gather",
                      {elemSize(t.inputs[0]), product(ds, 0, size_t(axis)), ds[size_t(axis)],
                       numel(t.inputs[1].shape()), product(ds, size_t(axis) + 1, ds.size())},
                      {},
                      0};
  });
  // gather_elements: ia = [elem_size, rank, axis, dim, indices_shape[rank],
  // data_strides[rank]].
  table.add("gather_elements",
            [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
              const Ints &ds = t.inputs[0].shape(), &is = t.inputs[1].shape();
              TS_RETURN_IF_ERROR(checkRank(ds.size()));
              TS_ASSIGN_OR_RETURN(int64_t axis,
                                  ir::ops::normalizeAxis(attrs.getInt("axis"), int64_t(ds.size())));
              KernelCall call{"gather_elements",
                              {elemSize(t.inputs[0]), int64_t(ds.size()), axis, ds[size_t(axis)]},
                              {},
                              0};
              Ints strides = ir::rowMajorStrides(ds);
              call.ia.insert(call.ia.end(), is.begin(), is.end());
              call.ia.insert(call.ia.end(), strides.begin(), strides.end());
              return call;
            });
  // nonzero: ia = [elem_size, rank, dims...] (a scalar as [1]).
  table.add("nonzero", [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &ds = t.inputs[0].shape();
    KernelCall call{"nonzero", {elemSize(t.inputs[0]), std::max<int64_t>(int64_t(ds.size()), 1)},
                    {}, 0};
    call.ia.insert(call.ia.end(), ds.begin(), ds.end());
    if (ds.empty())
      call.ia.push_back(1);
    return call;
  });
  // unique: ia = [outer, n, inner, sorted]; scratch 4n i64 (the sort's).
  table.add("unique", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &ds = t.inputs[0].shape();
    const auto axis = size_t(attrs.getInt("axis"));
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < ds.size(); ++d)
      (d < axis ? outer : inner) *= d == axis ? 1 : ds[d];
    const int64_t n = ds[axis];
    return KernelCall{"unique", {outer, n, inner, attrs.getBool("sorted")}, {},
                      uint64_t(32 * std::max<int64_t>(n, 1))};
  });
  // non_max_suppression: ia = [batches, classes, n, max_output,
  // use_score_threshold, center_point_box], fa = [iou, score threshold].
  table.add("non_max_suppression",
            [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
              const Ints &s = t.inputs[1].shape();
              return KernelCall{"non_max_suppression",
                                {s[0], s[1], s[2], attrs.getInt("max_output"),
                                 attrs.getBool("use_score_threshold"),
                                 attrs.getBool("center_point_box")},
                                {attrs.getFloat("iou_threshold"), attrs.getFloat("score_threshold")},
                                // the selection (i64 per box), then the selection's own
                                uint64_t(8 * s[2] + nms::scratchBytes(s[2]))};
            });
  // range: ia = [start, delta, n] (the count from the result's shape).
  table.add("range", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    if (t.outputs[0].dtype() != ir::DType::I64 && t.outputs[0].dtype() != ir::DType::I32)
      return Error::format("range to {}: the host kernel writes i64 and i32",
                           ir::dtypeName(t.outputs[0].dtype()));
    return KernelCall{
        "range", {attrs.getInt("start"), attrs.getInt("delta"), t.outputs[0].shape()[0]}, {}, 0};
  });
  // iota: the range kernel from 0 by 1 (the length from the result's shape).
  table.add("iota", [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
    return KernelCall{"range", {0, 1, t.outputs[0].shape()[0]}, {}, 0};
  });
  // check: ia = [elem_size] (the sizes from the tensors' run-time shapes).
  table.add("check", [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
    return KernelCall{"check", {int64_t(ir::dtypeSize(t.inputs[0].dtype()))}, {}, 0};
  });
  // range_count: no parameters (the dtype is the inputs').
  table.add("range_count", [](const ir::Attrs &, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"range_count", {}, {}, 0};
  });
  // symbol_values: ia = [n, values...].
  table.add("symbol_values", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    const Ints values = attrs.getInts("values");
    KernelCall call{"symbol_values", {int64_t(values.size())}, {}, 0};
    call.ia.insert(call.ia.end(), values.begin(), values.end());
    return call;
  });
  // gather_nd: ia = [elem_size, batches, tuples, k, slice, batch_stride,
  // (dim_j, stride_j) for data axes batch_dims .. batch_dims + k - 1].
  table.add("gather_nd", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &ds = t.inputs[0].shape(), &is = t.inputs[1].shape();
    size_t b = size_t(attrs.getInt("batch_dims"));
    size_t k = size_t(is.back());
    Ints strides = ir::rowMajorStrides(ds);
    KernelCall call{"gather_nd",
                    {elemSize(t.inputs[0]), product(ds, 0, b), product(is, b, is.size() - 1),
                     int64_t(k), product(ds, b + k, ds.size()), b == 0 ? 0 : strides[b - 1]},
                    {},
                    0};
    for (size_t j = 0; j < k; ++j) {
      call.ia.push_back(ds[b + j]);
      call.ia.push_back(strides[b + j]);
    }
    return call;
  });
  // scatter_nd: ia = [reduction, tuples, k, slice, (dim_j, stride_j) for
  // the first k data axes].
  table.add("scatter_nd", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &ds = t.inputs[0].shape(), &is = t.inputs[1].shape();
    size_t k = size_t(is.back());
    Ints strides = ir::rowMajorStrides(ds);
    KernelCall call{"scatter_nd",
                    {reductionCode(attrs.getString("reduction")), product(is, 0, is.size() - 1),
                     int64_t(k), product(ds, k, ds.size())},
                    {},
                    0};
    for (size_t j = 0; j < k; ++j) {
      call.ia.push_back(ds[j]);
      call.ia.push_back(strides[j]);
    }
    return call;
  });
  // scatter_elements: ia = [reduction, rank, axis, dim, indices_shape[rank],
  // data_strides[rank]].
  table.add("scatter_elements",
            [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
              const Ints &ds = t.inputs[0].shape(), &is = t.inputs[1].shape();
              TS_RETURN_IF_ERROR(checkRank(ds.size()));
              TS_ASSIGN_OR_RETURN(int64_t axis,
                                  ir::ops::normalizeAxis(attrs.getInt("axis"), int64_t(ds.size())));
              KernelCall call{"scatter_elements",
                              {reductionCode(attrs.getString("reduction")), int64_t(ds.size()),
                               axis, ds[size_t(axis)]},
                              {},
                              0};
              Ints strides = ir::rowMajorStrides(ds);
              call.ia.insert(call.ia.end(), is.begin(), is.end());
              call.ia.insert(call.ia.end(), strides.begin(), strides.end());
              return call;
            });
}

//===----------------------------------------------------------------------===//
// Image ops
//===----------------------------------------------------------------------===//

void addImage(LoweringTable &table) {
  // resize2d: ia = [elem_size, nearest, H, W, OH, OW, fill_bits, (outside, n,
  // idx[4]) per output row then per output column], fa = [w[4] per output
  // row then per output column]. Over symbolic shapes (anySize), the taps
  // are computed per run: resize2d_dyn, ia = [elem_size, mode, coord,
  // nearest_mode, exclude_outside, fill_bits, has_scales], fa = [cubic_a,
  // scale_h, scale_w, roi0_h, roi0_w, roi1_h, roi1_w], scratch = the taps.
  table.add("resize2d", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &xs = t.inputs[0].shape(), &ys = t.outputs[0].shape();
    const ir::ops::ResizeSampling p = ir::ops::resizeSampling(attrs);
    auto scales = attrs.getFloats("scales");
    auto roi = attrs.getFloats("roi");
    const int64_t fill = fillBits(t.outputs[0].dtype(), attrs.getFloat("extrapolation_value"));
    if (t.anySize) {
      const bool hasRoi = roi.size() == 4;
      return KernelCall{"resize2d_dyn",
                        {elemSize(t.inputs[0]), p.mode, p.coord, p.nearest, p.excludeOutside,
                         fill, !scales.empty()},
                        {p.cubicA, scales.empty() ? 0 : scales[0], scales.empty() ? 0 : scales[1],
                         hasRoi ? roi[0] : 0, hasRoi ? roi[1] : 0, hasRoi ? roi[2] : 1,
                         hasRoi ? roi[3] : 1},
                        uint64_t(ys[2] + ys[3]) * TK_RESIZE_TAP_BYTES};
    }
    KernelCall call{"resize2d",
                    {elemSize(t.inputs[0]), p.mode == ir::ops::kResizeNearest ? 1 : 0, xs[2], xs[3],
                     ys[2], ys[3], fill},
                    {},
                    0};
    for (size_t a = 0; a < 2; ++a) {
      int64_t inSize = xs[2 + a], outSize = ys[2 + a];
      double scale = scales.empty() ? double(outSize) / double(inSize) : scales[a];
      double roi0 = roi.size() == 4 ? roi[a] : 0, roi1 = roi.size() == 4 ? roi[2 + a] : 1;
      for (int64_t o = 0; o < outSize; ++o) {
        ir::ops::Taps tp = ir::ops::resizeHostTaps(p, o, scale, inSize, outSize, roi0, roi1);
        call.ia.insert(call.ia.end(),
                       {tp.outside ? 1 : 0, tp.n, tp.idx[0], tp.idx[1], tp.idx[2], tp.idx[3]});
        call.fa.insert(call.fa.end(), {tp.w[0], tp.w[1], tp.w[2], tp.w[3]});
      }
    }
    return call;
  });
  // grid_sample: ia = [mode, padding_mode, align_corners] (tensor_ops.h).
  table.add("grid_sample", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    std::string mode = attrs.getString("mode"), pm = attrs.getString("padding_mode");
    return KernelCall{"grid_sample",
                      {mode == "nearest"   ? TK_GS_NEAREST
                       : mode == "bicubic" ? TK_GS_BICUBIC
                                           : TK_GS_BILINEAR,
                       pm == "border"       ? TK_GS_BORDER
                       : pm == "reflection" ? TK_GS_REFLECTION
                                            : TK_GS_ZEROS,
                       attrs.getBool("align_corners") ? 1 : 0},
                      {},
                      0};
  });
  // roi_align: ia = [output_height, output_width, sampling_ratio,
  // half_pixel, max_mode], fa = [spatial_scale].
  table.add("roi_align", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"roi_align",
                      {attrs.getInt("output_height"), attrs.getInt("output_width"),
                       attrs.getInt("sampling_ratio"),
                       attrs.getString("coordinate_transformation_mode") == "half_pixel" ? 1 : 0,
                       attrs.getString("mode") == "max" ? 1 : 0},
                      {attrs.getFloat("spatial_scale")},
                      0};
  });
}

} // namespace

void addTensorLowerings(LoweringTable &table) {
  addUnary(table);
  addBinary(table);
  addTransform(table);
  addIndex(table);
  addImage(table);
}

} // namespace tessera::codegen
