//===- frontend/onnx/control_flow_carry.cpp - Loop-carried values that change -===//
//
// A run-time Loop's carried value keeps one type from iteration to
// iteration; two patterns of exporters change it, and are rewritten before
// the `loop` op is made:
//   - a sequence (a tuple of import-time length) the body inserts into
//     becomes a sequence of run-time length (carrySequences);
//   - a tensor the body grows by concatenation (`res = torch.cat((res, x))`
//     in a scripted loop, torchvision's paste of Mask R-CNN's masks) becomes
//     a scan output of the slices, concatenated after the initial value
//     once the loop has run (scanGrownCarries, appendScanned).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/control_flow_internal.h"
#include "ir/symbol.h"
#include "ir/visit.h"

namespace tessera::frontend::onnx::control_detail {

using ir::DType;
using ir::Expr;

namespace {

/// The elements' dtype and rank of the sequence values `types` (tuples of
/// tensors, sequences), or nullopt when none has an element.
std::optional<std::pair<DType, int64_t>> elementsOf(std::initializer_list<ir::Type> types) {
  std::optional<std::pair<DType, int64_t>> out;
  auto add = [&](DType dtype, int64_t rank) {
    if (!out)
      out = {dtype, rank};
    else if (out->second != rank)
      out->second = -1;
  };
  for (const ir::Type &t : types) {
    if (t.isSequence())
      add(t.dtype(), t.elementRank());
    else if (t.isTuple())
      for (const ir::Type &f : t.fields())
        if (f.isTensor())
          add(f.dtype(), int64_t(f.rank()));
  }
  return out;
}

} // namespace

/// For each carried value of the body `o` (leading parameter 2 + i, loop
/// argument 3 + i) that enters as a sequence (a tuple, or a sequence of
/// run-time length) and leaves as another type: its parameter becomes a
/// sequence of run-time length of the elements both hold, and a tuple
/// argument the sequence of its fields. Whether anything changed (the body
/// must be outlined again).
Expected<bool> carrySequences(NodeContext &ctx, const OutlinedSubgraphs &o,
                              std::vector<ir::Type> &leading, std::vector<Expr> &args) {
  const ir::Type &result = o.functions[0]->body()->type();
  bool changed = false;
  for (size_t p = 2; p < leading.size() && p - 1 < result.fields().size(); ++p) {
    const ir::Type in = leading[p], out = result.fields()[p - 1];
    if (in == out || !(in.isTuple() || in.isSequence()) || !(out.isTuple() || out.isSequence()))
      continue;
    const auto elems = elementsOf({in, out});
    if (!elems)
      continue; // empty in and out: nothing says what it holds
    const ir::Type seq = ir::Type::sequence(elems->first, elems->second);
    if (seq == in)
      continue;
    Expr &arg = args[p + 1];
    if (arg->type().isTuple()) {
      std::vector<Expr> fields;
      if (const auto *t = arg->as<ir::TupleNode>()) {
        fields.assign(t->fields().begin(), t->fields().end());
      } else {
        for (size_t k = 0; k < arg->type().fields().size(); ++k) {
          TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(arg, int(k), ctx.nodeName()));
          fields.push_back(std::move(item));
        }
      }
      if (fields.empty()) {
        TS_ASSIGN_OR_RETURN(arg, ctx.call("seq_empty", {},
                                          {{"dtype", elems->first}, {"rank", elems->second}}));
      } else {
        TS_ASSIGN_OR_RETURN(arg, ctx.call("seq_construct", std::move(fields)));
      }
    }
    leading[p] = seq;
    changed = true;
  }
  return changed;
}


Expected<std::vector<GrownCarry>> scanGrownCarries(NodeContext &ctx, OutlinedSubgraphs &o,
                                                   size_t carried) {
  const ir::Function &fn = o.functions[0];
  const auto *tuple = fn->body()->as<ir::TupleNode>();
  if (!tuple || tuple->fields().size() < 1 + carried || fn->params().size() < 2 + carried)
    return std::vector<GrownCarry>{};
  const auto uses = ir::useCounts(fn->body());
  std::vector<Expr> fields(tuple->fields().begin(), tuple->fields().end()), slices;
  std::vector<GrownCarry> grown;
  for (size_t i = 0; i < carried; ++i) {
    const Expr &out = fields[1 + i];
    const ir::Var &param = fn->params()[2 + i];
    const auto *c = out->as<ir::CallNode>();
    if (out->type() == param->type() || !c || c->op()->name != "concat" ||
        c->args().size() < 2 || c->args()[0].get() != param.get())
      continue;
    auto used = uses.find(param.get());
    if (used == uses.end() || used->second != 1) // read elsewhere in the body
      continue;
    int64_t axis = c->attrs().getInt("axis");
    if (axis < 0)
      axis += int64_t(param->type().rank());
    Expr slice = c->args()[1];
    if (c->args().size() > 2) {
      TS_ASSIGN_OR_RETURN(slice, ir::makeCall("concat", {c->args().begin() + 1, c->args().end()},
                                              {{"axis", axis}}, c->name()));
    }
    // A scan slice has one type: dims that differ from the carried value's
    // (a width the data decides, clamped to the image's) are checked equal.
    std::vector<int64_t> differ;
    const ir::Type &want = param->type(), &have = slice->type();
    if (!have.isTensor() || have.rank() != want.rank())
      continue;
    for (int64_t d = 0; d < int64_t(want.rank()); ++d)
      if (d != axis && have.shape()[size_t(d)] != want.shape()[size_t(d)])
        differ.push_back(d);
    if (!differ.empty()) {
      TS_ASSIGN_OR_RETURN(slice, ctx.withDimsOf(slice, want, differ,
                                                [&](int64_t d, int64_t got, int64_t carriedDim) {
        return fmt::format("dim {} of what the loop body appends to carried value {} ({}) must "
                           "equal the carried value's ({})",
                           d, i, ir::dimStr(got), ir::dimStr(carriedDim));
      }));
    }
    fields[1 + i] = param;
    slices.push_back(std::move(slice));
    grown.push_back({i, axis});
  }
  if (grown.empty())
    return grown;
  fields.insert(fields.end(), slices.begin(), slices.end());
  o.functions[0] = ir::makeFunction(fn->params(), ir::makeTuple(std::move(fields), tuple->name()),
                                    fn->attrs(), fn->name());
  return grown;
}

Expected<Expr> appendScanned(NodeContext &ctx, const Expr &initial, const Expr &stacked,
                             int64_t axis) {
  // stacked [T, s...] -> [s_0 .. s_axis-1, T * s_axis, ...], then after `initial`.
  const ir::Shape &s = stacked->type().shape();
  const int64_t r = int64_t(s.size()) - 1;
  Expr moved = stacked;
  if (axis > 0) {
    Ints perm;
    for (int64_t d = 1; d <= axis; ++d)
      perm.push_back(d);
    perm.push_back(0);
    for (int64_t d = axis + 1; d <= r; ++d)
      perm.push_back(d);
    TS_ASSIGN_OR_RETURN(moved, ctx.call("transpose", {stacked}, {{"perm", perm}}));
  }
  Ints merged;
  const ir::Shape &ms = moved->type().shape();
  for (int64_t d = 0; d <= r; ++d) {
    if (d == axis + 1)
      continue;
    merged.push_back(d == axis ? -1 : ms[size_t(d)]);
  }
  if (ms[size_t(axis) + 1] == 1) // one row per iteration: the merged dim is T
    merged[size_t(axis)] = ms[size_t(axis)];
  TS_ASSIGN_OR_RETURN(Expr flat, reshapeTo(ctx, moved, merged));
  return ctx.call("concat", {initial, flat}, {{"axis", axis}});
}

} // namespace tessera::frontend::onnx::control_detail
