//===- ir/printer.cpp - Text IR printer -----------------------------------===//
//
// Prints modules, functions and expressions in the text format described in
// docs/text-format.md. Every scope (a global function or a nested `fn`) is
// printed from ir::postOrder of its body, so nothing recurses on graph depth;
// only nested `fn` blocks and types recurse.
//
// Value names: a node's name() is kept when it is unique in the global
// function; duplicates get `_1`, `_2`, ... (never a name used elsewhere in the
// function); unnamed nodes get 0, 1, 2, ... skipping every name in use. Names
// that are not identifiers are quoted: %"/conv1/Conv:0".
//
//===----------------------------------------------------------------------===//
#include "ir/printer.h"

#include "ir/visit.h"

#include <fmt/format.h>

#include <cstring>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace tessera::ir {
namespace {

using Buf = std::string;

bool isIdentStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) {
  return isIdentStart(c) || isDigit(c) || c == '.' || c == '$' || c == '-';
}

/// A name that prints without quotes: [A-Za-z_][A-Za-z0-9_.$-]* or all digits.
bool isPlainName(std::string_view s) {
  if (s.empty())
    return false;
  if (isDigit(s[0])) {
    for (char c : s)
      if (!isDigit(c))
        return false;
    return true;
  }
  if (!isIdentStart(s[0]))
    return false;
  for (char c : s)
    if (!isIdentChar(c))
      return false;
  return true;
}

/// `sigil` followed by the name, quoted when it is not a plain name.
void appendName(Buf &out, char sigil, std::string_view name) {
  out += sigil;
  if (isPlainName(name))
    out += name;
  else
    appendQuoted(out, name);
}

void appendInt(Buf &out, int64_t v) { fmt::format_to(std::back_inserter(out), "{}", v); }

/// " {a=1, b=[2, 3]}" or nothing.
void appendAttrs(Buf &out, const Attrs &attrs) {
  if (attrs.empty())
    return;
  out += " {";
  bool first = true;
  for (const auto &[name, value] : attrs) {
    if (!first)
      out += ", ";
    first = false;
    if (isPlainName(name) && !isDigit(name[0]))
      out += name;
    else
      appendQuoted(out, name);
    out += '=';
    appendAttrValue(out, value);
  }
  out += '}';
}

void appendConstantData(Buf &out, const Tensor &t) {
  if (t.numel() > kInlineConstantLimit) {
    static const char *hex = "0123456789abcdef";
    const uint8_t *p = t.bytes();
    size_t n = t.nbytes();
    out.reserve(out.size() + 2 + 2 * n);
    out += "0x";
    for (size_t i = 0; i < n; ++i) {
      out += hex[p[i] >> 4];
      out += hex[p[i] & 15];
    }
    return;
  }
  out += '[';
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i)
      out += ", ";
    switch (t.dtype()) {
    case DType::F64: appendFloat(out, t.data<double>()[i]); break;
    case DType::F32: appendFloat(out, t.data<float>()[i]); break;
    case DType::F16: appendFloat(out, halfToFloat(t.data<uint16_t>()[i])); break;
    case DType::BF16: appendFloat(out, bfloat16ToFloat(t.data<uint16_t>()[i])); break;
    case DType::Bool: out += t.data<uint8_t>()[i] ? "true" : "false"; break;
    case DType::U64: fmt::format_to(std::back_inserter(out), "{}", t.getUInt(i)); break;
    default: appendInt(out, t.getInt(i)); break;
    }
  }
  out += ']';
}

//===----------------------------------------------------------------------===//
// Naming and printing of one global function (or of a bare expression).
//===----------------------------------------------------------------------===//

class FunctionPrinter {
public:
  /// Prints `def @global(...) ... { ... }`.
  void printDef(Buf &out, const std::string &global, const Function &f) {
    int s = collect(f->params(), f->body(), -1);
    assignNames();
    out += "def ";
    appendName(out, '@', global);
    appendSignature(out, s, f.get());
    out += " {\n";
    printScopeBody(out, s, 1);
    out += "}\n";
  }

  /// Prints the lines computing `e` and `return`.
  void printBare(Buf &out, const Expr &e) {
    int s = collect({}, e, -1);
    assignNames();
    printScopeBody(out, s, 0);
  }

private:
  struct Scope {
    int parent = -1;
    std::vector<int> params;                       // slots of the params
    std::vector<const ExprNode *> order;            // post order, excluding Vars
    std::unordered_map<const ExprNode *, int> slot; // node -> slot
    const ExprNode *body = nullptr;
  };
  struct Slot {
    const ExprNode *node;
    std::string ref; // "%name" as printed
    int innerScope = -1; // for Function nodes: the scope of their body
  };

  std::vector<Scope> scopes_;
  std::vector<Slot> slots_;

  int newSlot(Scope &sc, const ExprNode *n) {
    int id = int(slots_.size());
    slots_.push_back({n, {}, -1});
    sc.slot.emplace(n, id);
    return id;
  }

  /// Gathers the nodes of one scope in print order; recurses only into nested
  /// functions.
  int collect(const std::vector<Var> &params, const Expr &body, int parent) {
    int s = int(scopes_.size());
    scopes_.emplace_back();
    scopes_[s].parent = parent;
    scopes_[s].body = body.get();
    for (const Var &p : params) {
      if (scopes_[s].slot.count(p.get()))
        continue; // the same Var twice: not printable faithfully; name it once
      int id = newSlot(scopes_[s], p.get());
      scopes_[s].params.push_back(id);
    }
    std::vector<const ExprNode *> nodes = postOrder(body, /*intoFunctions=*/false);
    scopes_[s].order.reserve(nodes.size());
    for (const ExprNode *n : nodes) {
      if (scopes_[s].slot.count(n))
        continue;
      if (n->kind() == ExprKind::Var) {
        // A free variable: use the enclosing scope's name when there is one
        // (the parser then reports it as defined outside the function).
        bool found = false;
        for (int p = parent; p >= 0 && !found; p = scopes_[p].parent) {
          auto it = scopes_[p].slot.find(n);
          if (it != scopes_[p].slot.end()) {
            scopes_[s].slot.emplace(n, it->second);
            found = true;
          }
        }
        if (!found)
          newSlot(scopes_[s], n);
        continue;
      }
      int id = newSlot(scopes_[s], n);
      scopes_[s].order.push_back(n);
      if (const auto *fn = n->as<FunctionNode>()) {
        int inner = collect(fn->params(), fn->body(), s);
        slots_[id].innerScope = inner;
      }
    }
    return s;
  }

  void assignNames() {
    std::unordered_set<std::string_view> explicitNames;
    for (const Slot &sl : slots_)
      if (!sl.node->name().empty())
        explicitNames.insert(sl.node->name());
    std::unordered_set<std::string> assigned;
    assigned.reserve(slots_.size());
    std::unordered_map<std::string, int> nextSuffix;
    auto setRef = [](Slot &sl, const std::string &name) {
      sl.ref.clear();
      appendName(sl.ref, '%', name);
    };
    for (Slot &sl : slots_) {
      const std::string &name = sl.node->name();
      if (name.empty())
        continue;
      if (assigned.insert(name).second) {
        setRef(sl, name);
        continue;
      }
      int &k = nextSuffix[name];
      std::string cand;
      do {
        cand = name + "_" + std::to_string(++k);
      } while (explicitNames.count(cand) || assigned.count(cand));
      assigned.insert(cand);
      setRef(sl, cand);
    }
    int64_t counter = 0;
    for (Slot &sl : slots_) {
      if (!sl.node->name().empty())
        continue;
      std::string cand;
      do {
        cand = std::to_string(counter++);
      } while (explicitNames.count(cand) || assigned.count(cand));
      assigned.insert(cand);
      setRef(sl, cand);
    }
  }

  const std::string &ref(int scope, const ExprNode *n) const {
    const Scope &sc = scopes_[scope];
    return slots_[sc.slot.at(n)].ref;
  }

  /// "(%a: T, ...) -> R attributes {...}"
  void appendSignature(Buf &out, int s, const FunctionNode *fn) {
    out += '(';
    for (size_t i = 0; i < fn->params().size(); ++i) {
      if (i)
        out += ", ";
      const Var &p = fn->params()[i];
      out += ref(s, p.get());
      out += ": ";
      p->type().appendTo(out);
    }
    out += ") -> ";
    fn->resultType().appendTo(out);
    if (!fn->attrs().empty()) {
      out += " attributes";
      appendAttrs(out, fn->attrs());
    }
  }

  void appendArgs(Buf &out, int s, std::span<const Expr> args) {
    out += '(';
    for (size_t i = 0; i < args.size(); ++i) {
      if (i)
        out += ", ";
      out += ref(s, args[i].get());
    }
    out += ')';
  }

  static void indent(Buf &out, int level) { out.append(size_t(level) * 2, ' '); }

  void printScopeBody(Buf &out, int s, int level) {
    // Collection is finished, so scopes_ no longer grows and `sc` stays valid
    // while nested scopes print.
    const Scope &sc = scopes_[s];
    for (const ExprNode *n : sc.order) {
      const Slot &slot = slots_[sc.slot.at(n)];
      indent(out, level);
      out += slot.ref;
      out += " = ";
      bool typed = true;
      switch (n->kind()) {
      case ExprKind::Var: break; // not in order
      case ExprKind::Constant: {
        const auto *c = n->as<ConstantNode>();
        out += "constant ";
        c->type().appendTo(out);
        out += ' ';
        appendConstantData(out, c->data());
        typed = false;
        break;
      }
      case ExprKind::Call: {
        const auto *c = n->as<CallNode>();
        switch (c->calleeKind()) {
        case CallNode::CalleeKind::Op:
          out += c->op() ? std::string_view(c->op()->name) : std::string_view("<null-op>");
          appendArgs(out, s, c->args());
          appendAttrs(out, c->attrs());
          break;
        case CallNode::CalleeKind::Global:
          appendName(out, '@', c->global());
          appendArgs(out, s, c->args());
          break;
        case CallNode::CalleeKind::Local:
          out += ref(s, c->localFnExpr().get());
          appendArgs(out, s, c->args());
          break;
        }
        break;
      }
      case ExprKind::Tuple:
        out += "tuple";
        appendArgs(out, s, n->operands());
        break;
      case ExprKind::TupleGetItem: {
        const auto *g = n->as<TupleGetItemNode>();
        out += ref(s, g->tuple().get());
        out += '.';
        appendInt(out, g->index());
        break;
      }
      case ExprKind::Function: {
        const auto *fn = n->as<FunctionNode>();
        out += "fn";
        appendSignature(out, slot.innerScope, fn);
        out += " {\n";
        printScopeBody(out, slot.innerScope, level + 1);
        indent(out, level);
        out += '}';
        typed = false;
        break;
      }
      }
      if (typed) {
        out += " : ";
        n->type().appendTo(out);
      }
      out += '\n';
    }
    indent(out, level);
    out += "return ";
    out += ref(s, sc.body);
    out += '\n';
  }
};

} // namespace

void printModule(const Module &m, std::ostream &os) { os << printModule(m); }

std::string printModule(const Module &m) {
  Buf out;
  out += "module ";
  appendName(out, '@', m.name());
  out += '\n';
  for (const auto &[name, fn] : m.functions()) {
    out += '\n';
    if (!fn) {
      out += "# ";
      appendName(out, '@', name);
      out += ": null function\n";
      continue;
    }
    FunctionPrinter p;
    p.printDef(out, name, fn);
  }
  return out;
}

std::string printFunction(const std::string &global, const Function &f) {
  Buf out;
  if (!f)
    return "# null function\n";
  FunctionPrinter p;
  p.printDef(out, global, f);
  return out;
}

std::string printExpr(const Expr &e) {
  Buf out;
  if (!e)
    return "# null expression\n";
  FunctionPrinter p;
  p.printBare(out, e);
  return out;
}

} // namespace tessera::ir
