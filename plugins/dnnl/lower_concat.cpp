//===- plugins/dnnl/lower_concat.cpp - Concat, in place where it can be ----===//
//
// A concat's inputs as oneDNN's concat copies them (in one layout it runs
// with its fast kernel), or, where each input is a contiguous piece of the
// result, written there by their producers: views of the result's buffer
// (plan.h), no step of the concat's own.
//
//===----------------------------------------------------------------------===//
#include "builder.h"
#include "layouts.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace tessera::dnnl_plugin {

void PlanBuilder::lowerConcat(FNode &n, const OpInfo &info) {
  consumed(n);
  std::vector<memory::desc> mds;
  std::vector<int> bufs;
  for (int l : n.ins) {
    Value v = value(producerValue(l));
    mds.push_back(v.md);
    bufs.push_back(v.buffer);
  }
  auto make = [&]() -> std::optional<dnnl::concat::primitive_desc> {
    try {
      dnnl::concat::primitive_desc pd(int(info.axis), mds, cpuEngine(), baseAttr());
      if (!isReference(pd))
        return pd;
    } catch (const dnnl::error &) {
    }
    return std::nullopt;
  };
  // The inputs as they are; else all in one input's layout (oneDNN 2.6
  // copies only inputs of one layout in its fast kernel: mixed ones, as a
  // DenseNet's growing concat of a region's plain input and blocked
  // convolution results, go to its reference kernel); else all plain,
  // which oneDNN always takes.
  std::optional<dnnl::concat::primitive_desc> pd = make();
  auto relayout = [&](const std::function<memory::desc(size_t)> &mdOf) {
    for (size_t i = 0; i < n.ins.size(); ++i) {
      mds[i] = mdOf(i);
      bufs[i] = value(need(n.ins[i], mds[i])).buffer;
    }
  };
  auto dimsOf = [&](size_t i) {
    const Dims &d = logicals_[size_t(n.ins[i])].type.shape;
    return memory::dims(d.begin(), d.end());
  };
  // Each input's layout in turn, blocked ones first (the convolutions that
  // read the result want them).
  std::vector<memory::desc> targets;
  for (size_t i = 0; i < n.ins.size(); ++i)
    if (!(mds[i] == plainMd(logicals_[size_t(n.ins[i])].type.shape)) &&
        std::none_of(targets.begin(), targets.end(), [&](const memory::desc &t) {
          return sameLayout(t, dimsOf(i)) == std::optional<memory::desc>(mds[i]);
        }))
      targets.push_back(mds[i]);
  for (size_t t = 0; t < targets.size() && !pd; ++t) {
    std::vector<memory::desc> same;
    for (size_t i = 0; i < n.ins.size(); ++i)
      if (auto md = sameLayout(targets[t], dimsOf(i)))
        same.push_back(*md);
    if (same.size() != n.ins.size())
      continue;
    std::swap(mds, same); // tried before any step is added
    if ((pd = make()))
      relayout([&](size_t i) { return mds[i]; });
    else
      std::swap(mds, same);
  }
  if (!pd) {
    relayout([&](size_t i) { return plainMd(logicals_[size_t(n.ins[i])].type.shape); });
    pd = dnnl::concat::primitive_desc(int(info.axis), mds, cpuEngine(), baseAttr());
  }
  if (concatInPlace(n, info, mds, bufs, pd->dst_desc()))
    return;
  std::vector<StepArg> args;
  for (size_t i = 0; i < mds.size(); ++i)
    args.push_back({DNNL_ARG_MULTIPLE_SRC + int(i), bufs[i], mds[i]});
  int dst = newBuffer(Buffer::Kind::Temp, pd->dst_desc().get_size());
  args.push_back({DNNL_ARG_DST, dst, pd->dst_desc()});
  addStep(dnnl::concat(*pd), std::move(args), n.where, *pd);
  addValue(n.out, dst, pd->dst_desc());
}

/// Whether a concat along the channels of a batch-1 tensor reads `logical`:
/// its producer then writes best in a layout concatInPlace can place.
bool PlanBuilder::readByChannelConcat(int logical) const {
  const Logical &l = logicals_[size_t(logical)];
  if (l.type.shape.size() < 3 || l.type.shape[0] != 1)
    return false;
  for (int c : l.consumers) {
    const FNode &n = nodes_[size_t(c)];
    if (n.done || n.node->op != "concat")
      continue;
    try {
      if (analyzeOp(descOf(n)).axis == 1)
        return true;
    } catch (const sdk::Error &) {
    }
  }
  return false;
}

/// A concat whose producers write its inputs into its result. Possible
/// where each input is one contiguous piece of the result in the layout the
/// input has: every dim before the axis is 1 (batch 1 along the channels),
/// and the layout is plain, or blocked over the channels (nChw8c) by a
/// block that divides every input's channels (no padding inside). Input i
/// then starts (its offset on the axis) x (the elements after the axis)
/// into the result. An input alone in a Temp buffer of its size becomes a
/// view of its piece: its producer writes there and nothing is copied (a
/// U-Net's skip and upsampled halves, a YOLO neck's branches). Another one
/// (a function input, a constant, a tensor already part of another
/// concat's result) is copied to its piece by a reorder. Returns false,
/// adding nothing, where the layout does not allow it or no input can be a
/// view (then the concat primitive copies them all as fast).
bool PlanBuilder::concatInPlace(FNode &n, const OpInfo &info, const std::vector<memory::desc> &mds,
                                const std::vector<int> &bufs, const memory::desc &dst) {
  const Dims &ys = n.node->outputs[0].shape;
  const size_t axis = size_t(info.axis);
  if (axis >= ys.size())
    return false;
  for (size_t d = 0; d < axis; ++d)
    if (ys[d] != 1)
      return false;
  const bool plain = dst == plainMd(ys);
  int64_t block = 1;
  if (!plain) {
    const dnnl_blocking_desc_t &blk = dst.data.format_desc.blocking;
    if (axis != 1 || dst.data.format_kind != dnnl_blocked || blk.inner_nblks != 1 ||
        blk.inner_idxs[0] != 1 || sameLayout(dst, dnnlDims(ys)) != std::optional(dst))
      return false;
    block = blk.inner_blks[0];
  }
  int64_t inner = 1;
  for (size_t d = axis + 1; d < ys.size(); ++d)
    inner *= ys[d];
  std::vector<size_t> within; // bytes into the result
  int64_t along = 0;
  for (size_t i = 0; i < mds.size(); ++i) {
    const Dims &xs = logicals_[size_t(n.ins[i])].type.shape;
    if (xs[axis] % block != 0)
      return false;
    if (plain ? !(mds[i] == plainMd(xs)) : sameLayout(dst, dnnlDims(xs)) != std::optional(mds[i]))
      return false;
    within.push_back(size_t(along * inner) * sizeof(float));
    along += xs[axis];
  }
  // Inputs that can be views: Temp, not views already and with no views
  // of their own, of exactly the input's size, each read once here.
  std::vector<bool> view(mds.size(), false);
  for (size_t i = 0; i < mds.size(); ++i) {
    const Buffer &b = plan_->buffers[size_t(bufs[i])];
    bool alone = b.kind == Buffer::Kind::Temp && b.parent < 0 && b.bytes == mds[i].get_size() &&
                 std::count(bufs.begin(), bufs.end(), bufs[i]) == 1;
    for (const Buffer &o : plan_->buffers)
      alone = alone && o.parent != bufs[i];
    view[i] = alone;
  }
  const size_t views = size_t(std::count(view.begin(), view.end(), true));
  if (views == 0)
    return false;
  const int result = newBuffer(Buffer::Kind::Temp, dst.get_size());
  for (size_t i = 0; i < mds.size(); ++i) {
    int piece = bufs[i];
    if (!view[i]) {
      piece = newBuffer(Buffer::Kind::Temp, mds[i].get_size());
      addReorder(bufs[i], mds[i], piece, mds[i],
                 "copy of input " + std::to_string(i) + " of " + n.where);
    }
    // (freeAfter counts the logicals on the piece as the result's.)
    plan_->buffers[size_t(piece)].parent = result;
    plan_->buffers[size_t(piece)].within = within[i];
  }
  plan_->inPlace.push_back(n.where + ": " + std::to_string(views) + " of " +
                           std::to_string(mds.size()) + " inputs written in place");
  addValue(n.out, result, dst);
  return true;
}

} // namespace tessera::dnnl_plugin
