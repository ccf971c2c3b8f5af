//===- codegen/host_ops_tensor.cpp - Lowerings of the tensor family -------===//
//
// Host lowerings (codegen/host_ops.h) of the tensor family: elementwise,
// broadcast, cast, where, the injective data-movement ops and the index
// ops; the image ops are host_ops_image.cpp's. Each lowering turns a call's normalised attributes and
// static types into a call of a kernel of codegen/kernels/{elementwise,
// transform,index,image}.cpp, with everything that depends only on shapes
// and attributes precomputed here: op codes (kernels/tensor_ops.h),
// broadcast and source strides over collapsed dims, pad geometry, fill
// values as bytes of the dtype, resize taps. The ia / fa layout of each
// kernel is documented next to its lowering.
//
//===----------------------------------------------------------------------===//
#include "codegen/host_ops.h"
#include "codegen/host_ops_tensor_internal.h"

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

using ir::DType;
using namespace tensor_lowering;

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
      return KernelCall{"unary", {code}, {}, 0, {}};
    });
  table.add("leaky_relu", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"unary", {TK_U_LEAKY_RELU}, {attrs.getFloat("alpha")}, 0, {}};
  });
  table.add(
      "hard_sigmoid", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
        return KernelCall{
            "unary", {TK_U_HARD_SIGMOID}, {attrs.getFloat("alpha"), attrs.getFloat("beta")}, 0, {}};
      });
  table.add("gelu", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    bool tanhApprox = attrs.getString("approximate") == "tanh";
    return KernelCall{"unary", {tanhApprox ? TK_U_GELU_TANH : TK_U_GELU}, {}, 0, {}};
  });
  table.add("clip", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    double lo = attrs.getFloat("min"), hi = attrs.getFloat("max");
    DType dt = t.inputs[0].dtype();
    return KernelCall{
        "unary", {TK_U_CLIP, clipBound(lo, true, dt), clipBound(hi, false, dt)}, {lo, hi}, 0, {}};
  });
  table.add("isinf", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"unary",
                      {TK_U_ISINF, attrs.getBool("detect_positive") ? 1 : 0,
                       attrs.getBool("detect_negative") ? 1 : 0},
                      {},
                      0, {}};
  });
}

// binary / compare: ia = [op, rank, shape[rank], strides_a[rank],
// strides_b[rank]] over the collapsed output.
Expected<KernelCall> lowerBroadcast(const char *kernel, int64_t op, const HostOpTypes &t) {
  TS_ASSIGN_OR_RETURN(Walk w, broadcastWalk(t));
  KernelCall call{kernel, {op}, {}, 0, {}};
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
    KernelCall call{"where", {elemSize(t.outputs[0])}, {}, 0, {}};
    appendWalk(call.ia, w);
    return call;
  });
  // cast: no attributes (the kernel reads the dtypes of its tensors).
  table.add("cast", [](const ir::Attrs &, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"cast", {}, {}, 0, {}};
  });
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// strided_copy: ia = [elem_size, base, rank, shape[rank], strides[rank]].
Expected<KernelCall> stridedCopy(const ir::Type &out, int64_t base, Ints strides) {
  TS_ASSIGN_OR_RETURN(Walk w, collapse(Walk{out.shape(), {std::move(strides)}}));
  KernelCall call{"strided_copy", {elemSize(out), base}, {}, 0, {}};
  appendWalk(call.ia, w);
  return call;
}

void addTransform(LoweringTable &table) {
  // copy: ia = [nbytes]; the shape-only ops.
  for (const char *op : {"reshape", "flatten", "squeeze", "unsqueeze"})
    table.add(op, [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
      return KernelCall{"copy", {numel(t.outputs[0].shape()) * elemSize(t.outputs[0])}, {}, 0, {}};
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
        0, {}};
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
                    0, {}};
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
                    0, {}};
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
                      0, {}};
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
                              0, {}};
              Ints strides = ir::rowMajorStrides(ds);
              call.ia.insert(call.ia.end(), is.begin(), is.end());
              call.ia.insert(call.ia.end(), strides.begin(), strides.end());
              return call;
            });
  // nonzero: ia = [elem_size, rank, dims...] (a scalar as [1]).
  table.add("nonzero", [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &ds = t.inputs[0].shape();
    KernelCall call{"nonzero", {elemSize(t.inputs[0]), std::max<int64_t>(int64_t(ds.size()), 1)},
                    {}, 0, {}};
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
                      uint64_t(32 * std::max<int64_t>(n, 1)), {}};
  });
  // non_max_suppression: ia = [batches, classes, n, max_output,
  // use_score_threshold, center_point_box], fa = [iou, score threshold].
  table.add("non_max_suppression",
            [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
              const Ints &s = t.inputs[1].shape();
              return KernelCall{
                  "non_max_suppression",
                  {s[0], s[1], s[2], attrs.getInt("max_output"),
                   attrs.getBool("use_score_threshold"), attrs.getBool("center_point_box")},
                  {attrs.getFloat("iou_threshold"), attrs.getFloat("score_threshold")},
                  // the selection (i64 per box), then the selection's own
                  uint64_t(8 * s[2] + nms::scratchBytes(s[2])),
                  {}};
            });
  // range: ia = [start, delta, n] (the count from the result's shape).
  table.add("range", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    if (t.outputs[0].dtype() != ir::DType::I64 && t.outputs[0].dtype() != ir::DType::I32)
      return Error::format("range to {}: the host kernel writes i64 and i32",
                           ir::dtypeName(t.outputs[0].dtype()));
    return KernelCall{"range",
                      {attrs.getInt("start"), attrs.getInt("delta"), t.outputs[0].shape()[0]},
                      {},
                      0,
                      {}};
  });
  // iota: the range kernel from 0 by 1 (the length from the result's shape).
  table.add("iota", [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
    return KernelCall{"range", {0, 1, t.outputs[0].shape()[0]}, {}, 0, {}};
  });
  // check: ia = [elem_size] (the sizes from the tensors' run-time shapes).
  table.add("check", [](const ir::Attrs &, const HostOpTypes &t) -> Expected<KernelCall> {
    return KernelCall{"check", {int64_t(ir::dtypeSize(t.inputs[0].dtype()))}, {}, 0, {}};
  });
  // range_count: no parameters (the dtype is the inputs').
  table.add("range_count", [](const ir::Attrs &, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"range_count", {}, {}, 0, {}};
  });
  // symbol_values: ia = [n, values...].
  table.add("symbol_values", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    const Ints values = attrs.getInts("values");
    KernelCall call{"symbol_values", {int64_t(values.size())}, {}, 0, {}};
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
                    0, {}};
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
                    0, {}};
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
                              0, {}};
              Ints strides = ir::rowMajorStrides(ds);
              call.ia.insert(call.ia.end(), is.begin(), is.end());
              call.ia.insert(call.ia.end(), strides.begin(), strides.end());
              return call;
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
