//===- bench/dnnl_native/net.cpp - A hand-written oneDNN inference net ----===//
//
// Net: primitives built once, in execution order, with their memories bound;
// see net.h for the choices (format_tag::any, post-ops, user scratchpad,
// activation buffers reused).
//
//===----------------------------------------------------------------------===//
#include "net.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace bench {

namespace {

constexpr size_t kAlign = 64;

void *alignedAlloc(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void *p = std::aligned_alloc(kAlign, rounded);
  if (!p)
    throw std::runtime_error("out of memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

/// ONNX activations as oneDNN eltwise post-ops. HardSigmoid(alpha 1/6,
/// beta 1/2) has no eltwise of its own in oneDNN 2.6: linear, then clip to
/// [0, 1].
void appendActs(post_ops &po, const std::vector<Act> &acts) {
  for (Act a : acts) {
    switch (a) {
    case Act::None: break;
    case Act::Relu: po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f); break;
    case Act::HardSwish: po.append_eltwise(1.f, algorithm::eltwise_hardswish, 0.f, 0.f); break;
    case Act::HardSigmoid:
      po.append_eltwise(1.f, algorithm::eltwise_linear, 1.f / 6, 0.5f);
      po.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 1.f);
      break;
    }
  }
}

primitive_attr makeAttr(const post_ops &po = post_ops()) {
  primitive_attr attr;
  attr.set_post_ops(po);
  attr.set_scratchpad_mode(scratchpad_mode::user);
  return attr;
}

} // namespace

void Net::FreeDeleter::operator()(void *p) const { std::free(p); }

Net::Net() : eng_(engine::kind::cpu, 0), strm_(eng_) {}

Tensor Net::input(const memory::dims &dims, float *data) {
  return Tensor{memory({dims, dt::f32, tag::nchw}, eng_, data), -1};
}

Tensor Net::alloc(const memory::desc &desc) {
  size_t bytes = desc.get_size();
  int best = -1;
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].free && buffers_[i].bytes >= bytes &&
        (best < 0 || buffers_[i].bytes < buffers_[best].bytes))
      best = int(i);
  if (best < 0) {
    void *p = alignedAlloc(bytes);
    owned_.emplace_back(p);
    buffers_.push_back(Buffer{p, bytes, false});
    best = int(buffers_.size() - 1);
  }
  buffers_[best].free = false;
  return Tensor{memory(desc, eng_, buffers_[best].data), best};
}

void Net::release(Tensor &t) {
  if (t.buffer >= 0)
    buffers_[t.buffer].free = true;
  t.buffer = -1;
}

void Net::add(const primitive &prim, const primitive_desc_base &pd,
              std::unordered_map<int, memory> args) {
  steps_.push_back(Step{prim, std::move(args), pd.scratchpad_desc(), pd.impl_info_str()});
}

Tensor Net::toLayout(const Tensor &x, const memory::desc &desc, bool *copied) {
  *copied = x.mem.get_desc() != desc;
  if (!*copied)
    return x;
  Tensor y = alloc(desc);
  reorder::primitive_desc pd(eng_, x.mem.get_desc(), eng_, desc, makeAttr());
  add(reorder(pd), pd, {{DNNL_ARG_FROM, x.mem}, {DNNL_ARG_TO, y.mem}});
  return y;
}

memory Net::constWeights(const std::vector<float> &data, const memory::desc &user,
                         const memory::desc &desc) {
  if (user.get_size() != data.size() * sizeof(float))
    throw std::runtime_error("internal: weights of the wrong size");
  memory um(user, eng_);
  std::memcpy(um.get_data_handle(), data.data(), user.get_size());
  if (desc == user) {
    constants_.push_back(um);
    return um;
  }
  memory m(desc, eng_);
  reorder(um, m).execute(strm_, um, m);
  strm_.wait();
  constants_.push_back(m);
  return m;
}

Tensor Net::conv(const Tensor &x, const ConvSpec &s, const std::vector<float> &weights,
                 const std::vector<float> &bias, const std::vector<Act> &acts,
                 Tensor *residual, const std::vector<Act> &after) {
  memory::dims d = x.dims();
  int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  int64_t oh = (h + 2 * s.pad - s.kernel) / s.stride + 1;
  int64_t ow = (w + 2 * s.pad - s.kernel) / s.stride + 1;
  memory::dims wdims = s.groups == 1 ? memory::dims{s.out, c, s.kernel, s.kernel}
                                     : memory::dims{s.groups, s.out / s.groups, c / s.groups,
                                                    s.kernel, s.kernel};
  memory::desc srcAny({n, c, h, w}, dt::f32, tag::any);
  memory::desc wAny(wdims, dt::f32, tag::any);
  memory::desc bDesc({s.out}, dt::f32, tag::x);
  memory::desc dstAny({n, s.out, oh, ow}, dt::f32, tag::any);
  convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct,
                               srcAny, wAny, bDesc, dstAny, {s.stride, s.stride},
                               {s.pad, s.pad}, {s.pad, s.pad});
  post_ops po;
  appendActs(po, acts);
  if (residual)
    po.append_sum(1.f);
  appendActs(po, after);
  convolution_forward::primitive_desc pd(cd, makeAttr(po), eng_);

  memory wMem = constWeights(
      weights, memory::desc(wdims, dt::f32, s.groups == 1 ? tag::oihw : tag::goihw),
      pd.weights_desc());
  memory bMem = constWeights(bias, bDesc, bDesc);
  bool srcCopied = false;
  Tensor src = toLayout(x, pd.src_desc(), &srcCopied);

  // The sum post-op accumulates into the destination: the residual's
  // memory (reordered first if it is in another layout) becomes the output.
  Tensor dst;
  if (residual) {
    bool copied = false;
    dst = toLayout(*residual, pd.dst_desc(), &copied);
    if (copied)
      release(*residual);
    *residual = Tensor{};
  } else {
    dst = alloc(pd.dst_desc());
  }
  add(convolution_forward(pd), pd,
      {{DNNL_ARG_SRC, src.mem},
       {DNNL_ARG_WEIGHTS, wMem},
       {DNNL_ARG_BIAS, bMem},
       {DNNL_ARG_DST, dst.mem}});
  if (srcCopied)
    release(src);
  return dst;
}

Tensor Net::maxPool(const Tensor &x, int64_t kernel, int64_t stride, int64_t pad) {
  memory::dims d = x.dims();
  int64_t oh = (d[2] + 2 * pad - kernel) / stride + 1;
  int64_t ow = (d[3] + 2 * pad - kernel) / stride + 1;
  memory::desc dstAny({d[0], d[1], oh, ow}, dt::f32, tag::any);
  pooling_forward::desc pdesc(prop_kind::forward_inference, algorithm::pooling_max,
                              x.mem.get_desc(), dstAny, {stride, stride}, {kernel, kernel},
                              {pad, pad}, {pad, pad});
  pooling_forward::primitive_desc pd(pdesc, makeAttr(), eng_);
  Tensor dst = alloc(pd.dst_desc());
  add(pooling_forward(pd), pd, {{DNNL_ARG_SRC, x.mem}, {DNNL_ARG_DST, dst.mem}});
  return dst;
}

Tensor Net::globalAvgPool(const Tensor &x) {
  memory::dims d = x.dims();
  memory::desc dstAny({d[0], d[1], 1, 1}, dt::f32, tag::any);
  pooling_forward::desc pdesc(prop_kind::forward_inference,
                              algorithm::pooling_avg_exclude_padding, x.mem.get_desc(), dstAny,
                              {1, 1}, {d[2], d[3]}, {0, 0}, {0, 0});
  pooling_forward::primitive_desc pd(pdesc, makeAttr(), eng_);
  Tensor dst = alloc(pd.dst_desc());
  add(pooling_forward(pd), pd, {{DNNL_ARG_SRC, x.mem}, {DNNL_ARG_DST, dst.mem}});
  return dst;
}

void Net::mulChannels(Tensor &x, const Tensor &gate) {
  binary::desc bd(algorithm::binary_mul, x.mem.get_desc(), gate.mem.get_desc(),
                  x.mem.get_desc());
  binary::primitive_desc pd(bd, makeAttr(), eng_);
  add(binary(pd), pd,
      {{DNNL_ARG_SRC_0, x.mem}, {DNNL_ARG_SRC_1, gate.mem}, {DNNL_ARG_DST, x.mem}});
}

Tensor Net::dense(const Tensor &x, int64_t out, const std::vector<float> &weights,
                  const std::vector<float> &bias, const std::vector<Act> &acts, bool plainOut) {
  memory::dims d = x.dims();
  memory::dims wdims = d;
  wdims[0] = out;
  tag userW = d.size() == 4 ? tag::oihw : tag::oi;
  memory::desc srcAny(d, dt::f32, tag::any);
  memory::desc wAny(wdims, dt::f32, tag::any);
  memory::desc bDesc({out}, dt::f32, tag::x);
  memory::desc dst({d[0], out}, dt::f32, plainOut ? tag::nc : tag::any);
  inner_product_forward::desc ipd(prop_kind::forward_inference, srcAny, wAny, bDesc, dst);
  post_ops po;
  appendActs(po, acts);
  inner_product_forward::primitive_desc pd(ipd, makeAttr(po), eng_);
  memory wMem = constWeights(weights, memory::desc(wdims, dt::f32, userW), pd.weights_desc());
  memory bMem = constWeights(bias, bDesc, bDesc);
  bool srcCopied = false;
  Tensor src = toLayout(x, pd.src_desc(), &srcCopied);
  Tensor y = alloc(pd.dst_desc());
  add(inner_product_forward(pd), pd,
      {{DNNL_ARG_SRC, src.mem},
       {DNNL_ARG_WEIGHTS, wMem},
       {DNNL_ARG_BIAS, bMem},
       {DNNL_ARG_DST, y.mem}});
  if (srcCopied)
    release(src);
  return y;
}

void Net::finalize() {
  size_t bytes = 0;
  for (const Step &s : steps_)
    bytes = std::max(bytes, s.scratchpad.get_size());
  if (bytes == 0)
    return;
  scratch_ = alignedAlloc(bytes);
  owned_.emplace_back(scratch_);
  for (Step &s : steps_)
    if (s.scratchpad.get_size() != 0)
      s.args[DNNL_ARG_SCRATCHPAD] = memory(s.scratchpad, eng_, scratch_);
}

void Net::run() {
  for (Step &s : steps_)
    s.prim.execute(strm_, s.args);
  strm_.wait();
}

std::string Net::describe() const {
  std::string out;
  size_t activations = 0;
  for (const Buffer &b : buffers_)
    activations += b.bytes;
  for (const Step &s : steps_)
    out += s.impl + "\n";
  out += std::to_string(steps_.size()) + " primitives, " + std::to_string(buffers_.size()) +
         " activation buffers (" + std::to_string(activations >> 10) + " KiB)\n";
  return out;
}

} // namespace bench
