//===- plugins/dnnl/plan_use.cpp - A built plan's primitives, constants, text -===//
//
// What a PrimitivePlan (plan.h) is used with once built: its primitives made
// again for another OpenMP thread count, a reordered constant's own bytes
// given back, and the plan as text (the module's "plan" source).
//
//===----------------------------------------------------------------------===//
#include "plan.h"

#include <algorithm>

#include <omp.h>

namespace tessera::dnnl_plugin {

using dnnl::memory;

namespace {

/// `step`'s primitive created again under the calling thread's OpenMP
/// thread count: the same implementation over the same memory descs, with
/// a scratchpad that fits in `scratchpadBytes`; else the step's own
/// primitive (still correct, on the threads it was made for). Not only the
/// GEMM-based kinds fix their thread count at creation: oneDNN's jit
/// pooling does too (a U-Net's max pools ran on two threads in a
/// one-thread session, waking a second OpenMP thread that then spun through
/// every run: issue 41).
dnnl::primitive recreated(const Step &step, size_t scratchpadBytes) {
  // Every kind, in case its implementation fixes its threads: the jit
  // reorders do too. Concats and sums split their work over the current
  // threads at each execution.
  using Kind = dnnl::primitive::kind;
  if (!step.prim) // an own kernel: on the caller's threads already
    return step.prim;
  const Kind kind = step.prim.get_kind();
  if (kind == Kind::concat || kind == Kind::sum)
    return step.prim;
  try {
    const_dnnl_primitive_desc_t old = step.prim.get_primitive_desc();
    if (kind == Kind::reorder) { // made from its two memory descs, not an op desc
      const dnnl::primitive_desc_base base(const_cast<dnnl_primitive_desc_t>(old), true);
      const_dnnl_primitive_attr_t oldAttr = nullptr;
      dnnl_primitive_attr_t attrCopy = nullptr;
      if (dnnl_primitive_desc_get_attr(old, &oldAttr) != dnnl_success ||
          dnnl_primitive_attr_clone(&attrCopy, oldAttr) != dnnl_success)
        return step.prim;
      dnnl::primitive_attr attr(attrCopy);
      dnnl::reorder::primitive_desc pd(cpuEngine(), base.src_desc(), cpuEngine(),
                                       base.dst_desc(), attr, /*allow_empty=*/true);
      if (!pd || pd.impl_info_str() != step.impl ||
          pd.scratchpad_desc().get_size() > scratchpadBytes)
        return step.prim;
      return dnnl::reorder(pd);
    }
    const_dnnl_op_desc_t op = nullptr;
    const_dnnl_primitive_attr_t oldAttr = nullptr;
    dnnl_primitive_attr_t attrCopy = nullptr;
    if (dnnl_primitive_desc_query(old, dnnl_query_op_d, 0, &op) != dnnl_success ||
        dnnl_primitive_desc_get_attr(old, &oldAttr) != dnnl_success ||
        dnnl_primitive_attr_clone(&attrCopy, oldAttr) != dnnl_success)
      return step.prim;
    dnnl::primitive_attr attr(attrCopy);
    dnnl::primitive_desc pd(op, &attr, cpuEngine(), nullptr);
    while (pd.impl_info_str() != step.impl)
      if (!pd.next_impl())
        return step.prim;
    for (const StepArg &a : step.args)
      if (a.buffer >= 0 && pd.query_md(dnnl::query::exec_arg_md, a.arg) != a.md)
        return step.prim;
    if (pd.scratchpad_desc().get_size() > scratchpadBytes)
      return step.prim;
    return dnnl::primitive(pd);
  } catch (const dnnl::error &) {
    return step.prim;
  }
}

} // namespace

std::vector<dnnl::primitive> primitivesForThisThreadCount(const PrimitivePlan &plan) {
  std::vector<dnnl::primitive> prims;
  for (const Step &step : plan.steps)
    prims.push_back(plan.threads == omp_get_max_threads()
                        ? step.prim
                        : recreated(step, plan.scratchpadBytes));
  return prims;
}

void restoreConstant(const ReorderedConstant &c, std::byte *out) {
  dnnl::stream stream(cpuEngine());
  memory from(c.md, cpuEngine(), const_cast<void *>(c.data));
  memory to(c.view, cpuEngine(), out);
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
}

std::string describePlan(const PrimitivePlan &plan, const sdk::JsonFunction &fn,
                         const std::vector<bool> &released, std::string_view prefix) {
  // Steps are named for error messages, which start with the module and
  // the function: said once here, in the heading.
  const std::string where = std::string(prefix) + "function '" + fn.symbol + "': ";
  auto shortName = [&](std::string what) {
    for (size_t at; (at = what.find(where)) != std::string::npos;)
      what.erase(at, where.size());
    return what;
  };
  std::string s = "function '" + fn.symbol + "': " + std::to_string(plan.steps.size()) +
                  " steps, arena " + std::to_string(plan.arenaBytes) + " bytes, scratchpad " +
                  std::to_string(plan.scratchpadBytes) + " bytes\n";
  // Each step's primitive kind (a matmul may run as an inner_product), but
  // a reorder's, which its description names.
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    s += "  step " + std::to_string(i) + ": " + shortName(step.what) +
         (step.kind == "reorder" ? "" : " " + step.kind) + " [" + step.impl + "]" +
         (step.serial ? " on one thread" : "") + "\n";
  }
  for (const std::string &c : plan.inPlace)
    s += "  " + shortName(c) + "\n";
  size_t plain = 0, copies = 0;
  for (const sdk::JsonConstant &k : fn.constants)
    plain += k.data() ? k.bytes() : 0;
  for (const Buffer &b : plan.buffers)
    if (b.kind == Buffer::Kind::Const &&
        std::any_of(plan.owned.begin(), plan.owned.end(),
                    [&](const AlignedBytes &o) { return o.get() == b.data; }))
      copies += b.bytes;
  s += "  constants: " + std::to_string(plain) + " bytes held as given, " +
       std::to_string(copies) + " bytes reordered or folded at init\n";
  for (size_t c = 0; c < fn.constants.size(); ++c) {
    const sdk::JsonConstant &k = fn.constants[c];
    auto r = std::find_if(plan.reordered.begin(), plan.reordered.end(),
                          [&](const ReorderedConstant &r) { return r.constant == c; });
    s += "  constant " + std::to_string(c) + " ('" + k.name() + "', " + k.type().str() + "): ";
    if (c < released.size() && released[c])
      s += "reordered at init; plain bytes released (restored to save)\n";
    else if (r != plan.reordered.end() && !r->reversible)
      s += "transformed for Winograd at init; plain bytes held (no reverse transform)\n";
    else if (r != plan.reordered.end())
      s += "reordered at init; plain bytes kept\n";
    else
      s += "plain bytes held\n";
  }
  return s;
}

} // namespace tessera::dnnl_plugin
