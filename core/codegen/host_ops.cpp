//===- codegen/host_ops.cpp - The host op lowering table ------------------===//
#include "codegen/host_ops.h"

#include "ir/op.h"

namespace tessera::codegen {

void LoweringTable::add(std::string op, Lowering lowering) {
  table_[std::move(op)] = std::move(lowering);
}

const Lowering *LoweringTable::find(std::string_view op) const {
  auto it = table_.find(op);
  return it == table_.end() ? nullptr : &it->second;
}

std::vector<std::string> LoweringTable::ops() const {
  std::vector<std::string> out;
  out.reserve(table_.size());
  for (const auto &entry : table_)
    out.push_back(entry.first);
  return out;
}

const LoweringTable &hostLowerings() {
  static const LoweringTable table = [] {
    LoweringTable t;
    addNnLowerings(t);
    addTensorLowerings(t);
    addRecurrentLowerings(t);
    return t;
  }();
  return table;
}

namespace {

std::string describeCall(const ir::CallNode &call) {
  std::string op = call.op() ? call.op()->name : std::string("?");
  return call.name().empty() ? fmt::format("'{}'", op) : fmt::format("'{}' (node '{}')", op, call.name());
}

} // namespace

Expected<HostOpTypes> hostOpTypes(const ir::CallNode &call) {
  HostOpTypes types;
  for (const ir::Expr &arg : call.args()) {
    if (!arg->type().isTensor())
      return Error::format("op {}: an argument of type {} is not a tensor", describeCall(call),
                           arg->type().str());
    types.inputs.push_back(arg->type());
    const auto *c = arg->as<ir::ConstantNode>();
    types.constants.push_back(c ? c->data() : ir::Tensor());
  }
  const ir::Type &result = call.type();
  if (result.isTensor()) {
    types.outputs.push_back(result);
  } else if (result.isTuple()) {
    for (const ir::Type &field : result.fields()) {
      if (!field.isTensor())
        return Error::format("op {}: a nested tuple result {} has no host kernel",
                             describeCall(call), result.str());
      types.outputs.push_back(field);
    }
  } else {
    return Error::format("op {}: result type {} has no host kernel", describeCall(call),
                         result.str());
  }
  return types;
}

Expected<KernelCall> lowerHostOp(const ir::CallNode &call) {
  if (!call.op())
    return Error::format("not a call of a core op: '{}'", call.name());
  const Lowering *lowering = hostLowerings().find(call.op()->name);
  if (!lowering)
    return Error::format("no host kernel for op {}", describeCall(call));
  auto types = hostOpTypes(call);
  if (!types)
    return std::move(types).error();
  auto lowered = (*lowering)(call.attrs(), *types);
  if (!lowered)
    return std::move(lowered).error().addContext("op " + describeCall(call));
  return lowered;
}

} // namespace tessera::codegen
