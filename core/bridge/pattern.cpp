//===- bridge/pattern.cpp - Printing and matching patterns ----------------===//
//
// The canonical text of a pattern and a backtracking structural matcher.
// The lexer and parser are in pattern_parser.cpp.
//
//===----------------------------------------------------------------------===//
#include "bridge/pattern.h"

#include "ir/op.h"

#include <algorithm>
#include <cmath>

namespace tessera::bridge {

namespace {

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

struct MatchState {
  std::vector<ir::Expr> ops;
  std::vector<std::pair<ir::Expr, bool>> leaves; // (expr, matched by 'const')
};

bool matchNode(const PatternNode &p, const ir::Expr &e, MatchState &st);

bool matchOpPresent(const PatternNode &p, const ir::Expr &e, MatchState &st) {
  const auto *call = e->as<ir::CallNode>();
  if (!call || !p.acceptsCall(*call))
    return false;
  auto args = call->args();
  for (size_t i = 0; i < p.args.size(); ++i)
    if (!matchNode(p.args[i], args[i], st))
      return false;
  st.ops.push_back(e);
  return true;
}

/// Tries `p` on `e`; on failure leaves `st` as it was.
bool matchNode(const PatternNode &p, const ir::Expr &e, MatchState &st) {
  size_t nOps = st.ops.size(), nLeaves = st.leaves.size();
  auto rollback = [&] {
    st.ops.resize(nOps);
    st.leaves.resize(nLeaves);
  };
  switch (p.kind) {
  case PatternNode::Kind::Any: st.leaves.emplace_back(e, false); return true;
  case PatternNode::Kind::Const:
    if (!e->as<ir::ConstantNode>())
      return false;
    st.leaves.emplace_back(e, true);
    return true;
  case PatternNode::Kind::Alt:
    for (const PatternNode &alt : p.args) {
      if (matchNode(alt, e, st))
        return true;
      rollback();
    }
    return false;
  case PatternNode::Kind::Op:
    if (matchOpPresent(p, e, st))
      return true;
    rollback();
    if (p.optional && matchNode(p.args[0], e, st))
      return true;
    rollback();
    return false;
  }
  return false;
}

bool sameValue(const ir::AttrValue &actual, const ir::AttrValue &want) {
  return std::visit(
      [&](const auto &a) -> bool {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return std::holds_alternative<int64_t>(want) && std::get<int64_t>(want) == a;
        } else if constexpr (std::is_same_v<T, double>) {
          if (const auto *i = std::get_if<int64_t>(&want))
            return double(*i) == a;
          const auto *d = std::get_if<double>(&want);
          return d && (*d == a || (std::isnan(*d) && std::isnan(a)));
        } else if constexpr (std::is_same_v<T, ir::DType>) {
          const auto *s = std::get_if<std::string>(&want);
          return s && ir::parseDType(*s) == a;
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          std::vector<double> w;
          if (const auto *i = std::get_if<std::vector<int64_t>>(&want))
            w.assign(i->begin(), i->end());
          else if (const auto *d = std::get_if<std::vector<double>>(&want))
            w = *d;
          else
            return false;
          return w == a;
        } else {
          return std::holds_alternative<T>(want) && std::get<T>(want) == a;
        }
      },
      actual);
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

bool AttrPredicate::holds(const ir::AttrValue &actual) const {
  return sameValue(actual, value) != negated;
}

bool PatternNode::acceptsCall(const ir::CallNode &call) const {
  if (kind != Kind::Op || call.calleeKind() != ir::CallNode::CalleeKind::Op)
    return false;
  if (std::find(ops.begin(), ops.end(), call.op()) == ops.end())
    return false;
  if (call.args().size() != args.size())
    return false;
  for (const AttrPredicate &pred : predicates) {
    const ir::AttrValue *v = call.attrs().find(pred.attr);
    if (!v || !pred.holds(*v))
      return false;
  }
  return true;
}

std::string PatternNode::str() const {
  std::string out;
  switch (kind) {
  case Kind::Any: return "*";
  case Kind::Const: return "const";
  case Kind::Alt:
    for (size_t i = 0; i < args.size(); ++i)
      out += (i ? "|" : "") + args[i].str();
    return out;
  case Kind::Op: break;
  }
  for (size_t i = 0; i < ops.size(); ++i)
    out += (i ? "|" : "") + ops[i]->name;
  if (optional)
    out += '?';
  if (!predicates.empty()) {
    out += '[';
    for (size_t i = 0; i < predicates.size(); ++i) {
      if (i)
        out += ", ";
      out += predicates[i].attr;
      out += predicates[i].negated ? "!=" : "=";
      ir::appendAttrValue(out, predicates[i].value);
    }
    out += ']';
  }
  out += '(';
  for (size_t i = 0; i < args.size(); ++i)
    out += (i ? ", " : "") + args[i].str();
  return out + ")";
}

std::string Pattern::str() const {
  return root.str();
}

std::optional<PatternMatch> matchPattern(const Pattern &pattern, const ir::Expr &root) {
  MatchState st;
  if (!root || !matchNode(pattern.root, root, st) || st.ops.empty())
    return std::nullopt;
  // Matches are a few nodes: scans beat hash sets here.
  auto contains = [](const std::vector<ir::Expr> &v, const ir::Expr &e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  };
  PatternMatch m;
  m.root = root;
  for (const ir::Expr &op : st.ops)
    if (!contains(m.ops, op))
      m.ops.push_back(op);
  m.interior.assign(m.ops.begin(), m.ops.end() - 1);
  // A leaf matched by '*' anywhere is an input, even if 'const' matched it too.
  auto starred = [&](const ir::Expr &e) {
    return std::any_of(st.leaves.begin(), st.leaves.end(),
                       [&](const auto &leaf) { return !leaf.second && leaf.first == e; });
  };
  for (const auto &[e, isConst] : st.leaves) {
    if (contains(m.leaves, e))
      continue;
    m.leaves.push_back(e);
    (starred(e) ? m.inputs : m.constants).push_back(e);
  }
  return m;
}

namespace {
void collectRootOps(const PatternNode &p, std::vector<const ir::Op *> &out) {
  if (p.kind == PatternNode::Kind::Alt) {
    for (const PatternNode &alt : p.args)
      collectRootOps(alt, out);
  } else if (p.kind == PatternNode::Kind::Op) {
    for (const ir::Op *op : p.ops)
      if (std::find(out.begin(), out.end(), op) == out.end())
        out.push_back(op);
    if (p.optional && !p.args.empty())
      collectRootOps(p.args[0], out); // absent: its first argument is at the root
  }
}
} // namespace

std::vector<const ir::Op *> rootOps(const Pattern &pattern) {
  std::vector<const ir::Op *> out;
  collectRootOps(pattern.root, out);
  return out;
}

} // namespace tessera::bridge
