//===- plugins/dnnl/builder.h - Building a PrimitivePlan (internal) ------*- C++ -*-===//
//
// PlanBuilder turns one function's graph into a PrimitivePlan (plan.h) in four
// passes:
//
//   flatten   composite bodies are inlined: the runtime fuses by looking at
//             the ops themselves, so a composite is only a grouping
//             (plan.cpp);
//   lower     node by node, in order: conv2d/conv2d_transpose/dense/matmul absorb
//             what follows them when it is their only user (a bias, a
//             batch_norm with constants folded into the weights, eltwise
//             post-ops, arithmetic with a scalar constant as a linear
//             post-op, one residual add as a sum post-op, more eltwise); a
//             per-channel constant scale and shift (a batch_norm that could
//             not fold) runs as oneDNN's batch_normalization (+ relu);
//             everything else maps to one primitive, in the layout its input
//             has unless oneDNN would run its reference kernel there; a
//             concat whose inputs are contiguous pieces of its result (batch
//             1 along the channels) has its producers write them there, as
//             views of its buffer, and no step of its own (lower.cpp,
//             lower_ops.cpp, lower_concat.cpp);
//   outputs   each function output is bound to the caller's tensor: the
//             producer writes there directly when its layout is plain,
//             otherwise a reorder does (plan.cpp);
//   arena     Temp buffers get offsets by liveness (plan.cpp).
//
// Values: a "logical" is one tensor of the graph (a node result, an input,
// a constant); it may exist in several layouts, each a Value = (buffer,
// memory desc). need() returns the logical in the wanted layout, adding a
// reorder step (or, for a constant, reordering once now) when needed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops.h"
#include "plan.h"

#include "tessera/sdk/json_graph.hpp"

#include <optional>

namespace tessera::dnnl_plugin {

class PlanBuilder {
public:
  /// `graph`: fn's graph, or (a symbolic function) fn's graph at one shape.
  PlanBuilder(const sdk::JsonFunction &fn, const sdk::Graph &graph, std::string prefix,
              ConstantCopies copies);
  std::unique_ptr<PrimitivePlan> build();

  // -- graph -----------------------------------------------------------------
  struct FNode {
    const sdk::Node *node = nullptr;
    const sdk::Graph *graph = nullptr;
    std::vector<int> ins; // logicals
    int out = -1;         // logical
    std::string where;    // "function 'f': node 3 ('conv1', conv2d)"
    bool done = false;
  };
  struct Value {
    int buffer = -1;
    dnnl::memory::desc md;
  };
  struct Logical {
    sdk::TensorType type;
    std::vector<int> values; // values_[...], the first one is the producer's
    int remaining = 0;       // consumers not lowered yet
    bool output = false;     // a function output
    bool isConst = false;
    std::vector<int> consumers; // node indices
  };

private:
  // plan.cpp
  [[noreturn]] void fail(const std::string &where, const std::string &what) const;
  std::vector<int> flatten(const sdk::Graph &g, const std::vector<int> &bound,
                           const std::string &where);
  int newLogical(const sdk::TensorType &t);
  int newBuffer(Buffer::Kind kind, size_t bytes);
  int addValue(int logical, int buffer, const dnnl::memory::desc &md);
  int constLogical(const sdk::TensorType &t, const void *data);
  const Value &value(int v) const { return values_[size_t(v)]; }
  int producerValue(int logical) const;
  int need(int logical, const dnnl::memory::desc &md);
  int constBuffer(const dnnl::memory::desc &srcMd, const void *src,
                  const dnnl::memory::desc &dstMd);
  void addStep(dnnl::primitive prim, std::vector<StepArg> args, std::string what,
               const dnnl::primitive_desc_base &pd);
  void addOwnStep(OwnKernel kernel, std::vector<StepArg> args, std::string what, std::string kind,
                  std::string impl);
  void pushStep(Step step, bool threadsFixed);
  void addReorder(int srcBuffer, const dnnl::memory::desc &srcMd, int dstBuffer,
                  const dnnl::memory::desc &dstMd, const std::string &what);
  void touch(int buffer, int step);
  void bindOutputs();
  void planArena();
  void findReorderedConstants();
  const void *constData(int logical) const;

  // lower.cpp, lower_ops.cpp, lower_concat.cpp
  void lower(size_t index);
  void lowerProduct(size_t index, const OpInfo &info, bool fuse = true);
  void lowerPool(FNode &n, const OpInfo &info);
  bool lowerOwnMaxPool(FNode &n, const OpInfo &info);
  void lowerEltwise(FNode &n, const OpInfo &info);
  void lowerBinary(FNode &n, const OpInfo &info);
  bool lowerAffine(size_t index);
  std::optional<Eltwise> scalarLinear(const FNode &n, int cur) const;
  std::optional<std::vector<float>> perChannel(int constant, const Dims &shape) const;
  bool lowerDeconvAsMatmul(FNode &p, const OpInfo &info, int bias,
                           const dnnl::primitive_attr &attr,
                           const std::vector<FNode *> &absorbed, int cur);
  void lowerBatchNorm(FNode &n, const OpInfo &info);
  void lowerLayerNorm(FNode &n, const OpInfo &info);
  void lowerSoftmax(FNode &n, const OpInfo &info);
  static dnnl::memory::desc matmulView(const Dims &logical, bool transposed);
  void lowerConcat(FNode &n, const OpInfo &info);
  bool readByChannelConcat(int logical) const;
  bool concatInPlace(FNode &n, const OpInfo &info, const std::vector<dnnl::memory::desc> &mds,
                     const std::vector<int> &bufs, const dnnl::memory::desc &dst);
  void lowerResample(FNode &n, const OpInfo &info);
  void lowerView(FNode &n);
  void lowerStridedCopy(FNode &n, const OpInfo &info);
  sdk::OpDesc descOf(const FNode &n) const;
  void consumed(FNode &n);
  bool freeAfter(int buffer) const;

public:
  // Shared with lower.cpp's helpers.
  static dnnl::memory::desc plainMd(const std::vector<int64_t> &dims);
  static dnnl::primitive_attr baseAttr();

private:
  const sdk::JsonFunction &fn_;
  const sdk::Graph &graph_;
  std::string where_;
  std::unique_ptr<PrimitivePlan> plan_ = std::make_unique<PrimitivePlan>();
  std::vector<FNode> nodes_;
  std::vector<Logical> logicals_;
  std::vector<Value> values_;
  std::vector<std::vector<int>> owners_; // per buffer: the logicals with a value on it
  std::vector<int> constLogicals_;       // per module constant: its logical, or -1
  struct ConstCopy {
    const void *src; // the bytes reordered
    int buffer;      // into this Const buffer
    dnnl::memory::desc srcMd, dstMd;
  };
  std::vector<ConstCopy> constCopies_; // every constBuffer, in order
  std::vector<int> inputLogicals_, outputLogicals_;
  ConstantCopies copies_;
  dnnl::stream initStream_;
};

} // namespace tessera::dnnl_plugin
