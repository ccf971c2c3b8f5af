//===- bridge/pattern.h - The composite pattern language --------*- C++ -*-===//
//
// Plugins declare the op groups they want to see fused as text patterns
// (tessera_pattern_t); the core parses them here and matches them on the IR.
//
//   pattern := alt
//   alt     := term ('|' term)*          alternation between op terms only
//   term    := '*'                       any value (becomes a composite input)
//            | 'const'                   a constant (ir::ConstantNode)
//            | op ('|' op)* ['?'] ['[' pred (',' pred)* ']']
//                 '(' pattern (',' pattern)* ')'
//   pred    := attr '=' value | attr '!=' value
//   value   := int | float | true | false | identifier | "string" | '[' numbers ']'
//
// `op?(...)` makes the op optional: the term matches that op call, or (op
// absent) whatever its first argument's pattern matches. `a|b(...)` takes
// either op with the same argument patterns. Example:
//   relu|sigmoid?(bias_add|add?(dense(*, const), const))
//
// Parsing checks everything against the core op registry: op names, argument
// counts, and that each predicate names an attribute of every listed op with
// a value of a compatible kind. Errors read
//   pattern 'conv_relu': col 12: unknown op 'conv3d'
// with 1-based byte columns.
//
// Matching is structural on the IR DAG and local: it does not look at other
// users of the matched nodes (the partitioner decides whether interior nodes
// with outside uses prevent outlining; PatternMatch lists them).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "support/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::bridge {

/// `attr = value` or `attr != value`. The value is kept as written: int64,
/// double, string (identifiers and dtype names too), bool, int or float list.
struct AttrPredicate {
  std::string attr;
  bool negated = false; // '!='
  ir::AttrValue value;
  uint32_t col = 0;

  /// Does a call's (normalised) attribute value satisfy the predicate?
  bool holds(const ir::AttrValue &actual) const;
};

struct PatternNode {
  enum class Kind : uint8_t {
    Any,   // '*'
    Const, // 'const'
    Op,    // op('|' op)*['?'][preds](args)
    Alt,   // term '|' term ...: `args` holds the alternatives (Op terms)
  };
  Kind kind = Kind::Any;
  std::vector<const ir::Op *> ops; // Op: the accepted ops, as written
  bool optional = false;           // Op: '?'
  std::vector<AttrPredicate> predicates;
  std::vector<PatternNode> args; // Op: argument patterns; Alt: alternatives
  uint32_t col = 0;              // where the term starts in the text

  /// Is `call` a call of one of `ops` with the right argument count whose
  /// attributes satisfy the predicates (arguments not looked at)?
  bool acceptsCall(const ir::CallNode &call) const;
  /// The canonical text of this sub-pattern.
  std::string str() const;
};

struct Pattern {
  std::string name;
  PatternNode root;

  /// The canonical text: parsePattern(name, p.str()) gives the same pattern
  /// and the same text again.
  std::string str() const;
};

/// Parses `text`; errors are "pattern 'NAME': col N: message".
Expected<Pattern> parsePattern(std::string_view name, std::string_view text);

/// One match of a pattern on the IR.
struct PatternMatch {
  /// The expression the match was tried on.
  ir::Expr root;
  /// The matched op calls in post-order (operands before users), each once;
  /// `root` is last.
  std::vector<ir::Expr> ops;
  /// `ops` without the root: nodes that disappear into a composite, so the
  /// partitioner must check that nothing outside the match uses them.
  std::vector<ir::Expr> interior;
  /// The expressions matched by '*' and 'const', in pattern order, each once.
  std::vector<ir::Expr> leaves;
  /// The leaves matched by '*' at least once: the composite's parameters.
  std::vector<ir::Expr> inputs;
  /// The leaves matched only by 'const': constants that go into the body.
  std::vector<ir::Expr> constants;
};

/// Matches `pattern` rooted at `root`. Alternatives are tried in written
/// order and an optional op is tried present before absent; the first
/// complete match wins. A match must contain at least one op call (so an
/// optional root op that is absent still needs an op below it), and its root
/// op must be `root` itself.
std::optional<PatternMatch> matchPattern(const Pattern &pattern, const ir::Expr &root);

/// The ops a match of `pattern` can be rooted at: matchPattern finds nothing
/// at a call of any other op, so a search can skip those calls unread.
std::vector<const ir::Op *> rootOps(const Pattern &pattern);

} // namespace tessera::bridge
