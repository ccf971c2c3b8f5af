//===- frontend/onnx/appended_sequences.cpp - Loop sequences as scan outputs ---===//
//
// A Loop that starts a loop-carried sequence empty (SequenceEmpty) and only
// appends one tensor to it per iteration (SequenceInsert without a
// position, the body's only use of it) is what an exporter writes for a
// scripted loop that collects its results in a list (`outs.append(y)`, then
// `torch.stack(outs)` or `torch.cat(outs)`). Its length is the number of
// iterations, which a loop run at run time learns only as it runs, and the
// IR's sequences are tuples of known length. So before conversion the
// sequence becomes a scan output of the Loop: the appended tensors stacked
// on a new axis 0, which the core `loop` op writes row by row; the
// sequence's consumers (ConcatFromSequence, SequenceAt, SequenceLength;
// converters/sequence.cpp) take that stacked tensor. Loops whose sequences
// are read or reordered in the body, or leave the graph as a model output,
// are left alone.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/importer_internal.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <set>
#include <string>

namespace tessera::frontend::onnx::importer_detail {

namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

/// Every name a node of `g` reads, in its sub-graphs too (outer values that
/// a sub-graph captures are read by name).
void namesRead(const GraphProto &g, std::multiset<std::string> &out) {
  for (const NodeProto &n : g.node()) {
    for (const std::string &in : n.input())
      out.insert(in);
    for (const auto &a : n.attribute()) {
      if (a.has_g())
        namesRead(a.g(), out);
      for (const GraphProto &sub : a.graphs())
        namesRead(sub, out);
    }
  }
  for (const auto &o : g.output())
    out.insert(o.name());
}

/// The index of the node of `g` that outputs `name`, or -1.
int producer(const GraphProto &g, const std::string &name) {
  for (int i = 0; i < g.node_size(); ++i)
    for (const std::string &o : g.node(i).output())
      if (o == name)
        return i;
  return -1;
}

/// The consumers allowed to read an appended sequence (they take it
/// stacked).
bool readsStacked(const NodeProto &n, const std::string &name) {
  const std::string &op = n.op_type();
  return (op == "ConcatFromSequence" || op == "SequenceAt" || op == "SequenceLength") &&
         n.input_size() > 0 && n.input(0) == name &&
         std::count(n.input().begin(), n.input().end(), name) == 1;
}

/// Carried value i of Loop node `loop` (in `g`) as a scan output, when it
/// is an appended sequence (see the banner); whether it was rewritten.
bool stackCarried(GraphProto &g, NodeProto &loop, int i) {
  GraphProto *body = nullptr;
  for (auto &a : *loop.mutable_attribute())
    if (a.name() == "body" && a.has_g())
      body = a.mutable_g();
  const int n = loop.input_size() - 2;
  if (!body || i >= n || body->input_size() != 2 + n || body->output_size() < 1 + n)
    return false;
  const int init = producer(g, loop.input(2 + i));
  if (init < 0 || g.node(init).op_type() != "SequenceEmpty")
    return false;
  const std::string seqIn = body->input(2 + i).name(), seqOut = body->output(1 + i).name();
  const int insert = producer(*body, seqOut);
  if (insert < 0)
    return false;
  const NodeProto &ins = body->node(insert);
  if (ins.op_type() != "SequenceInsert" || ins.input_size() != 2 || ins.input(0) != seqIn)
    return false;
  std::multiset<std::string> bodyReads;
  namesRead(*body, bodyReads);
  if (bodyReads.count(seqIn) != 1 || bodyReads.count(seqOut) != 1) // the insert; the output
    return false;
  // Outside: only the allowed consumers read the final sequence.
  const std::string result = i < loop.output_size() ? loop.output(i) : std::string();
  if (!result.empty()) {
    std::multiset<std::string> reads;
    namesRead(g, reads);
    size_t direct = 0;
    for (const NodeProto &c : g.node())
      direct += readsStacked(c, result);
    if (reads.count(result) != direct)
      return false;
  }
  // The body: the sequence input, the insert and its output go; the
  // appended tensor becomes the last scan output.
  const std::string appended = ins.input(1);
  body->mutable_node()->DeleteSubrange(insert, 1);
  body->mutable_input()->DeleteSubrange(2 + i, 1);
  body->mutable_output()->DeleteSubrange(1 + i, 1);
  body->add_output()->set_name(appended);
  // The node: the initial sequence and the carried output go; the stacked
  // scan output comes last (its name stands for the sequence).
  loop.mutable_input()->DeleteSubrange(2 + i, 1);
  if (i < loop.output_size()) {
    loop.mutable_output()->DeleteSubrange(i, 1);
    // Scan outputs follow the carried values: pad the ones the node omits.
    while (loop.output_size() < body->output_size() - 2)
      loop.add_output("");
    loop.add_output(result);
  }
  return true;
}

} // namespace

void stackAppendedSequences(GraphProto &g) {
  for (NodeProto &n : *g.mutable_node()) {
    for (auto &a : *n.mutable_attribute()) {
      if (a.has_g())
        stackAppendedSequences(*a.mutable_g());
      for (GraphProto &sub : *a.mutable_graphs())
        stackAppendedSequences(sub);
    }
    if (n.op_type() != "Loop")
      continue;
    for (int i = n.input_size() - 3; i >= 0; --i) // from the last: indices stay valid
      stackCarried(g, n, i);
  }
}

} // namespace tessera::frontend::onnx::importer_detail
