//===- tests/unit/onnx_model_builder.h - Building ONNX models in tests -*- C++ -*-===//
//
// Small helpers for tests that write ONNX models with the protobuf classes
// (value types, nodes, attributes, initializers), shared by the importer,
// sequence and control-flow tests.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cctype>
#include <string>
#include <vector>

namespace tessera::test {

/// A tensor type of `elem`; dims "3" are static, "N" symbolic, "?" unknown;
/// no shape at all when `withShape` is false.
inline void setTensorType(::onnx::TypeProto *t, int32_t elem, const std::vector<std::string> &dims,
                          bool withShape = true) {
  auto *tt = t->mutable_tensor_type();
  tt->set_elem_type(elem);
  if (!withShape)
    return;
  auto *shape = tt->mutable_shape();
  for (const auto &d : dims) {
    auto *dim = shape->add_dim();
    if (d == "?")
      continue;
    if (std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

inline ::onnx::NodeProto *addNode(::onnx::GraphProto &g, const std::string &op,
                                  std::vector<std::string> ins, std::vector<std::string> outs,
                                  const std::string &name = "") {
  auto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto &i : ins)
    n->add_input(i);
  for (auto &o : outs)
    n->add_output(o);
  return n;
}

inline void addInitializer(::onnx::GraphProto &g, const std::string &name, const ir::Tensor &t) {
  auto *p = g.add_initializer();
  frontend::onnx::tensorToProto(t, *p);
  p->set_name(name);
}

inline void addIntAttr(::onnx::NodeProto *n, const std::string &name, int64_t v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void addIntsAttr(::onnx::NodeProto *n, const std::string &name, std::vector<int64_t> v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (auto x : v)
    a->add_ints(x);
}

/// A GRAPH attribute; returns the (empty) body to fill.
inline ::onnx::GraphProto *addGraphAttr(::onnx::NodeProto *n, const std::string &name) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

/// An empty model of the default domain at `opset`.
inline ::onnx::ModelProto newModel(int64_t opset, const std::string &graphName = "test_graph") {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  auto *o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name(graphName);
  return m;
}

} // namespace tessera::test
