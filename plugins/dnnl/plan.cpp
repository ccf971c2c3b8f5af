//===- plugins/dnnl/plan.cpp - Values, layouts, outputs, arena ------------===//
//
// The bookkeeping half of PlanBuilder (builder.h): flattening composites,
// logicals and their layouts, reorders, binding outputs to the caller's
// tensors, and the liveness-planned arena. The op lowering is lower*.cpp;
// what a built plan is used with (other thread counts, its text) plan_use.cpp.
//
//===----------------------------------------------------------------------===//
#include "builder.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>

namespace tessera::dnnl_plugin {

using dnnl::memory;
using sdk::Graph;
using sdk::Node;
using sdk::NodeRef;

const dnnl::engine &cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void AlignedFree::operator()(void *p) const {
  ::operator delete(p, std::align_val_t(64));
}

AlignedBytes alignedBytes(size_t n) {
  size_t alloc = std::max<size_t>(64, (n + 63) / 64 * 64);
  auto *p = static_cast<std::byte *>(::operator new(alloc, std::align_val_t(64)));
  std::memset(p, 0, alloc);
  return AlignedBytes(p);
}

PlanBuilder::PlanBuilder(const sdk::JsonFunction &fn, const sdk::Graph &graph, std::string prefix,
                         ConstantCopies copies)
    : fn_(fn), graph_(graph), where_(std::move(prefix) + "function '" + fn.symbol + "'"), copies_(copies),
      initStream_(cpuEngine()) {}

void PlanBuilder::fail(const std::string &where, const std::string &what) const {
  throw sdk::Error(where + ": " + what);
}

memory::desc PlanBuilder::plainMd(const std::vector<int64_t> &shape) {
  memory::dims dims = dnnlDims(shape);
  memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return memory::desc(dims, memory::data_type::f32, strides);
}

dnnl::primitive_attr PlanBuilder::baseAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

//===----------------------------------------------------------------------===//
// The whole build
//===----------------------------------------------------------------------===//

std::unique_ptr<PrimitivePlan> PlanBuilder::build() {
  plan_->threads = omp_get_max_threads();
  const Graph &g = graph_;
  constLogicals_.assign(fn_.constants.size(), -1);
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Node &n = g.nodes[size_t(g.inputs[k])];
    if (n.outputs.size() != 1 || !(n.outputs[0].dtype == DLDataType{kDLFloat, 32, 1}))
      fail(where_, "input " + std::to_string(k) + " ('" + n.name + "'): only f32 tensors");
    int l = newLogical(n.outputs[0]);
    int b = newBuffer(Buffer::Kind::Input, 0);
    plan_->buffers[size_t(b)].index = int(k);
    addValue(l, b, plainMd(n.outputs[0].shape));
    inputLogicals_.push_back(l);
  }
  outputLogicals_ = flatten(g, inputLogicals_, where_);
  for (int l : outputLogicals_)
    logicals_[size_t(l)].output = true;
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (int l : nodes_[i].ins) {
      logicals_[size_t(l)].remaining++;
      logicals_[size_t(l)].consumers.push_back(int(i));
    }
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (!nodes_[i].done)
      lower(i);
  bindOutputs();
  planArena();
  findReorderedConstants();
  return std::move(plan_);
}

void PlanBuilder::findReorderedConstants() {
  for (size_t c = 0; c < fn_.constants.size(); ++c) {
    const void *data = fn_.constants[c].data();
    if (!data || fn_.constants[c].bytes() == 0)
      continue;
    // A step (or a final copy) that reads the constant's own bytes, under
    // any view, keeps them.
    bool readAsIs = false;
    for (const Buffer &b : plan_->buffers)
      readAsIs |= b.kind == Buffer::Kind::Const && b.data == data && b.first >= 0;
    if (readAsIs)
      continue;
    for (const ConstCopy &copy : constCopies_)
      if (copy.src == data && copy.dstMd.data_type() == copy.srcMd.data_type()) {
        plan_->reordered.push_back(ReorderedConstant{c, plan_->buffers[size_t(copy.buffer)].data,
                                                     copy.dstMd, copy.srcMd,
                                                     copy.dstMd.data.format_kind == dnnl_blocked});
        break;
      }
  }
}

//===----------------------------------------------------------------------===//
// Flattening
//===----------------------------------------------------------------------===//

std::vector<int> PlanBuilder::flatten(const Graph &g, const std::vector<int> &bound,
                                      const std::string &where) {
  if (g.inputs.size() != bound.size())
    fail(where, "the graph has " + std::to_string(g.inputs.size()) + " inputs, " +
                    std::to_string(bound.size()) + " are bound");
  std::vector<std::vector<int>> logical(g.nodes.size());
  auto of = [&](const NodeRef &r) { return logical[size_t(r.node)].at(size_t(r.index)); };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    std::string at = where + ": node " + std::to_string(i) + " ('" + n.name + "'" +
                     (n.op.empty() ? "" : ", " + n.op) + ")";
    if (n.outputs.size() != 1)
      fail(at,
           "has " + std::to_string(n.outputs.size()) + " results; this plugin runs ops with one");
    if (!(n.outputs[0].dtype == DLDataType{kDLFloat, 32, 1}))
      fail(at, "only f32, got " + sdk::dtypeName(n.outputs[0].dtype));
    switch (n.kind) {
    case Node::Kind::Input: {
      auto pos = std::find(g.inputs.begin(), g.inputs.end(), int64_t(i));
      if (pos == g.inputs.end())
        fail(at, "an input node not listed in \"inputs\"");
      int l = bound[size_t(pos - g.inputs.begin())];
      if (!(logicals_[size_t(l)].type == n.outputs[0]))
        fail(at, "has type " + n.outputs[0].str() + ", but is bound to " +
                     logicals_[size_t(l)].type.str());
      logical[i] = {l};
      break;
    }
    case Node::Kind::Const: {
      int &l = constLogicals_[size_t(n.constant)];
      if (l < 0)
        l = constLogical(n.outputs[0], fn_.constants[size_t(n.constant)].data());
      logical[i] = {l};
      break;
    }
    case Node::Kind::Op: {
      FNode f;
      f.node = &n;
      f.graph = &g;
      for (const NodeRef &r : n.inputs)
        f.ins.push_back(of(r));
      f.out = newLogical(n.outputs[0]);
      f.where = at;
      logical[i] = {f.out};
      nodes_.push_back(std::move(f));
      break;
    }
    case Node::Kind::Composite: {
      if (!n.body)
        fail(at, "a composite node needs a body");
      std::vector<int> ins;
      for (const NodeRef &r : n.inputs)
        ins.push_back(of(r));
      std::vector<int> outs = flatten(*n.body, ins, at + " body");
      if (outs.size() != 1 || !(logicals_[size_t(outs[0])].type == n.outputs[0]))
        fail(at, "the body's results do not match the node's");
      logical[i] = outs;
      break;
    }
    }
  }
  std::vector<int> outs;
  for (const NodeRef &r : g.outputs)
    outs.push_back(of(r));
  return outs;
}

//===----------------------------------------------------------------------===//
// Logicals, buffers, values
//===----------------------------------------------------------------------===//

int PlanBuilder::newLogical(const sdk::TensorType &t) {
  int64_t n = 1;
  for (int64_t d : t.shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 40))
      fail(where_, "the tensor type " + t.str() + " is too large");
  logicals_.push_back(Logical{t, {}, 0, false, false, {}});
  return int(logicals_.size() - 1);
}

int PlanBuilder::newBuffer(Buffer::Kind kind, size_t bytes) {
  Buffer b;
  b.kind = kind;
  b.bytes = bytes;
  plan_->buffers.push_back(b);
  owners_.emplace_back();
  return int(plan_->buffers.size() - 1);
}

int PlanBuilder::addValue(int logical, int buffer, const memory::desc &md) {
  Buffer &b = plan_->buffers[size_t(buffer)];
  b.bytes = std::max(b.bytes, md.get_size());
  values_.push_back(Value{buffer, md});
  logicals_[size_t(logical)].values.push_back(int(values_.size() - 1));
  auto &own = owners_[size_t(buffer)];
  if (std::find(own.begin(), own.end(), logical) == own.end())
    own.push_back(logical);
  return int(values_.size() - 1);
}

int PlanBuilder::constLogical(const sdk::TensorType &t, const void *data) {
  int l = newLogical(t);
  logicals_[size_t(l)].isConst = true;
  int b = newBuffer(Buffer::Kind::Const, 0);
  plan_->buffers[size_t(b)].data = data;
  addValue(l, b, plainMd(t.shape));
  return l;
}

const void *PlanBuilder::constData(int logical) const {
  const Logical &l = logicals_[size_t(logical)];
  if (!l.isConst)
    return nullptr;
  return plan_->buffers[size_t(value(l.values[0]).buffer)].data;
}

int PlanBuilder::producerValue(int logical) const {
  const Logical &l = logicals_[size_t(logical)];
  if (l.values.empty())
    fail(where_, "internal: a value is used before it is computed");
  return l.values[0];
}

/// A constant reordered now into bytes the plan owns; a module constant
/// already reordered the same way (a weight two products share) is not
/// copied again. (Folded weights live in temporaries whose addresses may
/// come back: only the module's own constants are looked up.)
int PlanBuilder::constBuffer(const memory::desc &srcMd, const void *src,
                             const memory::desc &dstMd) {
  const bool moduleConstant =
      std::any_of(fn_.constants.begin(), fn_.constants.end(),
                  [&](const sdk::JsonConstant &k) { return k.data() && k.data() == src; });
  if (moduleConstant)
    for (const ConstCopy &copy : constCopies_)
      if (copy.src == src && copy.srcMd == srcMd && copy.dstMd == dstMd)
        return copy.buffer;
  int b = newBuffer(Buffer::Kind::Const, dstMd.get_size());
  if (copies_ == ConstantCopies::CheckOnly) {
    // Throws as the reorder below would when oneDNN has none.
    dnnl::reorder::primitive_desc(cpuEngine(), srcMd, cpuEngine(), dstMd);
  } else {
    AlignedBytes bytes = alignedBytes(dstMd.get_size());
    memory from(srcMd, cpuEngine(), const_cast<void *>(src));
    memory to(dstMd, cpuEngine(), bytes.get());
    dnnl::reorder(from, to).execute(initStream_, from, to);
    initStream_.wait();
    plan_->buffers[size_t(b)].data = bytes.get();
    plan_->owned.push_back(std::move(bytes));
  }
  constCopies_.push_back(ConstCopy{src, b, srcMd, dstMd});
  return b;
}

int PlanBuilder::need(int logical, const memory::desc &md) {
  Logical &l = logicals_[size_t(logical)];
  for (int v : l.values)
    if (value(v).md == md)
      return v;
  // Prefer a plain source: reorders from plain are the common, fast kind.
  int src = producerValue(logical);
  memory::desc plain = plainMd(l.type.shape);
  for (int v : l.values)
    if (value(v).md == plain)
      src = v;
  Value from = value(src);
  if (l.isConst)
    return addValue(logical, constBuffer(from.md, plan_->buffers[size_t(from.buffer)].data, md),
                    md);
  int b = newBuffer(Buffer::Kind::Temp, md.get_size());
  addReorder(from.buffer, from.md, b, md, "reorder of " + l.type.str());
  return addValue(logical, b, md);
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

void PlanBuilder::touch(int buffer, int step) {
  Buffer &b = plan_->buffers[size_t(buffer)];
  if (b.first < 0)
    b.first = step;
  b.first = std::min(b.first, step);
  b.last = std::max(b.last, step);
}

void PlanBuilder::addStep(dnnl::primitive prim, std::vector<StepArg> args, std::string what,
                          const dnnl::primitive_desc_base &pd) {
  memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() > 0) {
    args.push_back(StepArg{DNNL_ARG_SCRATCHPAD, -1, scratch});
    plan_->scratchpadBytes = std::max(plan_->scratchpadBytes, scratch.get_size());
  }
  const char *kind = dnnl_prim_kind2str(static_cast<dnnl_primitive_kind_t>(prim.get_kind()));
  const bool fixed = threadsFixedAtCreation(prim.get_kind());
  Step step;
  step.prim = std::move(prim);
  step.args = std::move(args);
  step.what = std::move(what);
  step.impl = pd.impl_info_str();
  step.kind = kind ? kind : "primitive";
  pushStep(std::move(step), fixed);
}

void PlanBuilder::addOwnStep(OwnKernel kernel, std::vector<StepArg> args, std::string what,
                             std::string kind, std::string impl) {
  Step step;
  step.args = std::move(args);
  step.what = std::move(what);
  step.impl = std::move(impl);
  step.kind = std::move(kind);
  step.own = std::move(kernel);
  pushStep(std::move(step), /*threadsFixed=*/true); // its own choice of threads
}

void PlanBuilder::pushStep(Step step, bool threadsFixed) {
  const int index = int(plan_->steps.size());
  size_t largest = 0;
  for (const StepArg &a : step.args)
    if (a.buffer >= 0) {
      touch(a.buffer, index);
      largest = std::max(largest, a.md.get_size());
    }
  step.serial = largest < kSerialBytes && !threadsFixed;
  // Profiles name a step by its primitive kind and the nodes in `what`
  // ("... node 3 ('conv1', conv2d)"), each once.
  const std::string &what = step.what;
  std::vector<std::string> named;
  for (size_t at = what.find("('"); at != std::string::npos; at = what.find("('", at)) {
    const size_t end = what.find('\'', at + 2);
    if (end == std::string::npos)
      break;
    std::string node = what.substr(at + 2, end - at - 2);
    if (std::find(named.begin(), named.end(), node) == named.end())
      named.push_back(std::move(node));
    at = end;
  }
  for (const std::string &n : named)
    step.nodes += (step.nodes.empty() ? "" : ", ") + n;
  plan_->steps.push_back(std::move(step));
}

bool threadsFixedAtCreation(dnnl::primitive::kind kind) {
  using Kind = dnnl::primitive::kind;
  // Elementwise and binary kernels split their work over the current
  // threads at each execution; the GEMM-based kinds, jit pooling and jit
  // reorders were seen to run on the threads they were made for (issue 41),
  // and the rest are assumed to.
  return kind != Kind::eltwise && kind != Kind::binary;
}

bool isReference(std::string_view impl) {
  // "ref:any", but also the reference kernels of a kind ("bnorm_ref:any",
  // what batch normalization over GroupNorm's groups gets): a name part,
  // between '_' and ':', that is "ref".
  const std::string_view name = impl.substr(0, impl.find(':'));
  for (size_t at = 0; at <= name.size();) {
    const size_t end = std::min(name.find('_', at), name.size());
    if (name.substr(at, end - at) == "ref")
      return true;
    at = end + 1;
  }
  return false;
}

bool isReference(const dnnl::primitive_desc_base &pd) {
  return isReference(pd.impl_info_str());
}

void PlanBuilder::addReorder(int srcBuffer, const memory::desc &srcMd, int dstBuffer,
                             const memory::desc &dstMd, const std::string &what) {
  dnnl::reorder::primitive_desc pd(cpuEngine(), srcMd, cpuEngine(), dstMd, baseAttr());
  addStep(dnnl::reorder(pd), {{DNNL_ARG_FROM, srcBuffer, srcMd}, {DNNL_ARG_TO, dstBuffer, dstMd}},
          what, pd);
}

//===----------------------------------------------------------------------===//
// Outputs and the arena
//===----------------------------------------------------------------------===//

void PlanBuilder::bindOutputs() {
  for (size_t k = 0; k < outputLogicals_.size(); ++k) {
    int l = outputLogicals_[k];
    const Logical &lg = logicals_[size_t(l)];
    memory::desc plain = plainMd(lg.type.shape);
    int plainValue = -1;
    for (int v : lg.values)
      if (value(v).md == plain)
        plainValue = v;
    if (plainValue >= 0) {
      Buffer &b = plan_->buffers[size_t(value(plainValue).buffer)];
      // Computed here, plain, not yet anyone's output: write it in place.
      // (The same bytes under another logical are dead by then, or equal.)
      // Not a view: its bytes are part of another tensor's.
      if (b.kind == Buffer::Kind::Temp && b.parent < 0 && b.bytes == plain.get_size()) {
        b.kind = Buffer::Kind::Output;
        b.index = int(k);
        continue;
      }
      plan_->finalCopies.push_back(FinalCopy{int(k), value(plainValue).buffer, plain.get_size()});
      continue;
    }
    // Blocked: one reorder into the caller's tensor.
    int b = newBuffer(Buffer::Kind::Output, plain.get_size());
    plan_->buffers[size_t(b)].index = int(k);
    Value from = value(producerValue(l));
    addReorder(from.buffer, from.md, b, plain, "reorder of output " + std::to_string(k));
    addValue(l, b, plain);
  }
  // Final copies read their source after the last step.
  for (const FinalCopy &c : plan_->finalCopies)
    touch(c.buffer, int(plan_->steps.size()));
}

/// First fit by decreasing size: each Temp buffer takes the lowest offset
/// that no buffer with an overlapping lifetime occupies.
void PlanBuilder::planArena() {
  // A view's steps keep its root's bytes alive.
  for (const Buffer &v : plan_->buffers)
    if (v.parent >= 0 && v.first >= 0) {
      Buffer &root = plan_->buffers[size_t(v.parent)];
      root.first = root.first < 0 ? v.first : std::min(root.first, v.first);
      root.last = std::max(root.last, v.last);
    }
  std::vector<int> temps;
  for (size_t i = 0; i < plan_->buffers.size(); ++i)
    if (plan_->buffers[i].kind == Buffer::Kind::Temp && plan_->buffers[i].parent < 0 &&
        plan_->buffers[i].first >= 0)
      temps.push_back(int(i));
  std::sort(temps.begin(), temps.end(), [&](int a, int b) {
    return plan_->buffers[size_t(a)].bytes > plan_->buffers[size_t(b)].bytes;
  });
  std::vector<int> placed;
  size_t total = 0;
  for (int t : temps) {
    Buffer &b = plan_->buffers[size_t(t)];
    size_t size = (b.bytes + 63) / 64 * 64;
    std::vector<std::pair<size_t, size_t>> busy; // [start, end) of overlapping buffers
    for (int p : placed) {
      const Buffer &o = plan_->buffers[size_t(p)];
      if (o.first <= b.last && b.first <= o.last)
        busy.emplace_back(o.offset, o.offset + (o.bytes + 63) / 64 * 64);
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (auto [s, e] : busy) {
      if (offset + size <= s)
        break;
      offset = std::max(offset, e);
    }
    b.offset = offset;
    total = std::max(total, offset + size);
    placed.push_back(t);
  }
  plan_->arenaBytes = total;
}

std::unique_ptr<PrimitivePlan> buildPlan(const sdk::JsonFunction &fn, const std::string &prefix,
                                         ConstantCopies copies, const sdk::Graph *graph) {
  return PlanBuilder(fn, graph ? *graph : fn.graph, prefix, copies).build();
}

} // namespace tessera::dnnl_plugin
