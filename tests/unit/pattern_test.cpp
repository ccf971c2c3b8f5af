//===- tests/unit/pattern_test.cpp - The composite pattern language -------===//
//
// Parsing (canonical printing, round trips, every error message) and
// structural matching on IR built with the core builders: optional ops
// present and absent, alternatives, predicates, 'const' against '*', and
// the match's bookkeeping (post-order ops, interior nodes, deduplicated
// leaves).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "bridge/pattern.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::bridge;

namespace {

Pattern parseOk(std::string_view text, std::string_view name = "p") {
  auto p = parsePattern(name, text);
  if (!p.ok())
    FAIL(p.error().str());
  return std::move(p).value();
}

std::string parseError(std::string_view text, std::string_view name = "p") {
  auto p = parsePattern(name, text);
  if (p.ok())
    FAIL("parsed: " << p->str());
  return p.error().str();
}

Expr input(Shape shape, std::string name = "x") {
  return makeVar(std::move(name), Type::tensor(DType::F32, std::move(shape)));
}
Expr weight(Shape shape) {
  return makeConstant(Tensor(DType::F32, std::move(shape)));
}
Expr call(std::string_view op, std::vector<Expr> args, Attrs attrs = {}) {
  return expectOk(makeCall(op, std::move(args), std::move(attrs)));
}

/// conv2d(x, w) [+ per-channel bias] [-> relu]
struct ConvChain {
  Expr x = input({1, 3, 8, 8});
  Expr w = weight({4, 3, 3, 3});
  Expr b = weight({4, 1, 1});
  Expr conv = call("conv2d", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Expr add = call("add", {conv, b});
  Expr relu = call("relu", {add});
};

} // namespace

TEST_CASE("pattern: canonical printing and round trip", "[pattern]") {
  const char *texts[] = {
      "relu(*)",
      "relu?(add(conv2d[groups=1](*, const), const))",
      "relu|sigmoid|tanh?(bias_add|add?(dense(*, const), const))",
      "relu(*)|sigmoid(*)",
      "add(relu(*)|sigmoid(*), const)",
      "conv2d[groups!=1, strides=[2, 2]](*, const)",
      "leaky_relu[alpha=0.5](*)",
      "gelu[approximate=\"tanh\"](*)",
      "clip[min=0.0, max=6.0](*)",
      "avg_pool2d[count_include_pad=true](*)",
      "concat(*, *, const)",
      "cast[dtype=\"f16\"](*)",
      "clip[max=inf](*)",
  };
  for (const char *text : texts) {
    INFO(text);
    Pattern p = parseOk(text);
    CHECK(p.str() == text);
    CHECK(parseOk(p.str()).str() == p.str());
  }
  // Spacing, identifiers for strings and ints for floats are canonicalised.
  CHECK(parseOk("  relu ( add ( * ,const ) ) ").str() == "relu(add(*, const))");
  CHECK(parseOk("gelu[approximate=tanh](*)").str() == "gelu[approximate=\"tanh\"](*)");
  CHECK(parseOk("clip[min=0](*)").str() == "clip[min=0](*)");
  CHECK(parseOk("cast[dtype=f16](*)").str() == "cast[dtype=\"f16\"](*)");
}

TEST_CASE("pattern: tree structure", "[pattern]") {
  Pattern p = parseOk("relu|tanh?(add(conv2d[groups=1](*, const), const))", "conv_bias_act");
  CHECK(p.name == "conv_bias_act");
  REQUIRE(p.root.kind == PatternNode::Kind::Op);
  CHECK(p.root.ops.size() == 2);
  CHECK(p.root.ops[0]->name == "relu");
  CHECK(p.root.ops[1]->name == "tanh");
  CHECK(p.root.optional);
  CHECK(p.root.col == 1);
  const PatternNode &add = p.root.args.at(0);
  CHECK(add.col == 12);
  CHECK_FALSE(add.optional);
  const PatternNode &conv = add.args.at(0);
  REQUIRE(conv.predicates.size() == 1);
  CHECK(conv.predicates[0].attr == "groups");
  CHECK_FALSE(conv.predicates[0].negated);
  CHECK(std::get<int64_t>(conv.predicates[0].value) == 1);
  CHECK(conv.args.at(0).kind == PatternNode::Kind::Any);
  CHECK(conv.args.at(1).kind == PatternNode::Kind::Const);
  CHECK(add.args.at(1).kind == PatternNode::Kind::Const);

  Pattern alt = parseOk("relu(*)|sigmoid(*)");
  REQUIRE(alt.root.kind == PatternNode::Kind::Alt);
  CHECK(alt.root.args.size() == 2);
}

TEST_CASE("pattern: parse errors", "[pattern]") {
  CHECK(parseError("relu(conv3d(*, const))", "conv_relu") ==
        "pattern 'conv_relu': col 6: unknown op 'conv3d'");
  CHECK(parseError("relu(*") == "pattern 'p': col 7: expected ')' after arguments, found end of "
                                "pattern");
  CHECK(parseError("relu(* *)") == "pattern 'p': col 8: expected ')' after arguments, found '*'");
  CHECK(parseError("") == "pattern 'p': col 1: expected '*', 'const' or an op name, found end "
                          "of pattern");
  CHECK(parseError("relu()") ==
        "pattern 'p': col 6: expected '*', 'const' or an op name, found ')'");
  CHECK(parseError("*") == "pattern 'p': col 1: the pattern must have an op at its root");
  CHECK(parseError("const") == "pattern 'p': col 1: the pattern must have an op at its root");
  CHECK(parseError("relu") ==
        "pattern 'p': col 5: expected '(' and the arguments of 'relu', found end of pattern");
  CHECK(parseError("relu(*) x") == "pattern 'p': col 9: unexpected 'x' after the pattern");
  CHECK(parseError("relu(*, *)") ==
        "pattern 'p': col 1: op 'relu' takes 1 argument, the pattern gives 2");
  CHECK(parseError("add(*)") ==
        "pattern 'p': col 1: op 'add' takes 2 arguments, the pattern gives 1");
  CHECK(parseError("layer_norm(*)") ==
        "pattern 'p': col 1: op 'layer_norm' takes 2 to 3 arguments, the pattern gives 1");
  CHECK(parseError("relu|add(*)") ==
        "pattern 'p': col 6: op 'add' takes 2 arguments, the pattern gives 1");
  CHECK(parseError("relu|relu(*)") == "pattern 'p': col 6: op 'relu' is listed twice");
  CHECK(parseError("relu|(*)") == "pattern 'p': col 6: expected an op name after '|', found '('");
  CHECK(parseError("relu|const(*)") ==
        "pattern 'p': col 6: expected an op name after '|', found 'const'");
  CHECK(parseError("add(*|const, *)") ==
        "pattern 'p': col 6: '|' is only allowed between op terms");
  CHECK(parseError("add(relu(*)|const, *)") ==
        "pattern 'p': col 12: '|' is only allowed between op terms");
  CHECK(parseError("relu(#)") == "pattern 'p': col 6: unexpected character '#'");
  CHECK(parseError("relu(\x01)") == "pattern 'p': col 6: unexpected character '\\x01'");

  // Predicates.
  CHECK(parseError("conv2d[stride=1](*, const)") ==
        "pattern 'p': col 8: op 'conv2d' has no attribute 'stride'");
  CHECK(parseError("conv2d[groups=\"one\"](*, const)") ==
        "pattern 'p': col 15: attribute 'groups' of op 'conv2d' is int, the value is string");
  CHECK(parseError("conv2d[groups=1.5](*, const)") ==
        "pattern 'p': col 15: attribute 'groups' of op 'conv2d' is int, the value is float");
  CHECK(parseError("conv2d[pads=[0.5]](*, const)") ==
        "pattern 'p': col 13: attribute 'pads' of op 'conv2d' is int list, the value is float "
        "list");
  CHECK(parseError("avg_pool2d[ceil_mode=1](*)") ==
        "pattern 'p': col 22: attribute 'ceil_mode' of op 'avg_pool2d' is bool, the value is "
        "int");
  CHECK(parseError("cast[dtype=f17](*)") ==
        "pattern 'p': col 12: 'f17' is not a dtype (attribute 'dtype' of op 'cast')");
  CHECK(parseError("relu|leaky_relu[alpha=0.1](*)") ==
        "pattern 'p': col 17: op 'relu' has no attribute 'alpha'");
  CHECK(parseError("conv2d[groups](*, const)") ==
        "pattern 'p': col 14: expected '=' or '!=' after attribute 'groups', found ']'");
  CHECK(parseError("conv2d[=1](*, const)") ==
        "pattern 'p': col 8: expected an attribute name, found '='");
  CHECK(parseError("conv2d[groups=](*, const)") ==
        "pattern 'p': col 15: expected a value, found ']'");
  CHECK(parseError("conv2d[groups=1 (*, const)") ==
        "pattern 'p': col 17: expected ']' after attribute predicates, found '('");
  CHECK(parseError("conv2d[pads=[1, x]](*, const)") ==
        "pattern 'p': col 17: expected a number in the list, found 'x'");
  CHECK(parseError("conv2d[pads=[1 2]](*, const)") ==
        "pattern 'p': col 16: expected ',' or ']' in the list, found '2'");
  CHECK(parseError("gelu[approximate=\"tanh](*)") == "pattern 'p': col 18: unterminated string");
  CHECK(parseError("conv2d[groups=99999999999999999999](*, const)") ==
        "pattern 'p': col 15: integer 99999999999999999999 is out of range");

  // Deep nesting is an error, not a stack overflow.
  std::string deep;
  for (int i = 0; i < 100; ++i)
    deep += "relu(";
  deep += "*";
  for (int i = 0; i < 100; ++i)
    deep += ")";
  CHECK(parseError(deep) == "pattern 'p': col 321: the pattern is nested deeper than 64 levels");
}

TEST_CASE("pattern: matching a chain, optional ops present and absent", "[pattern]") {
  ConvChain g;
  Pattern p = parseOk("relu?(add(conv2d(*, const), const))");

  auto m = matchPattern(p, g.relu);
  REQUIRE(m);
  CHECK(m->root == g.relu);
  REQUIRE(m->ops.size() == 3);
  CHECK(m->ops[0] == g.conv);
  CHECK(m->ops[1] == g.add);
  CHECK(m->ops[2] == g.relu);
  CHECK(m->interior == std::vector<Expr>{g.conv, g.add});
  CHECK(m->leaves == std::vector<Expr>{g.x, g.w, g.b});
  CHECK(m->inputs == std::vector<Expr>{g.x});
  CHECK(m->constants == std::vector<Expr>{g.w, g.b});

  // The relu absent: the match is rooted at the add.
  auto m2 = matchPattern(p, g.add);
  REQUIRE(m2);
  CHECK(m2->ops == std::vector<Expr>{g.conv, g.add});
  CHECK(m2->root == g.add);

  // Not rooted at the conv.
  CHECK_FALSE(matchPattern(p, g.conv));
  CHECK_FALSE(matchPattern(p, g.x));

  // An optional middle op.
  Pattern mid = parseOk("relu(add?(conv2d(*, const), const))");
  Expr reluConv = call("relu", {g.conv});
  auto m3 = matchPattern(mid, reluConv);
  REQUIRE(m3);
  CHECK(m3->ops == std::vector<Expr>{g.conv, reluConv});
  CHECK(m3->leaves == std::vector<Expr>{g.x, g.w});
  REQUIRE(matchPattern(mid, g.relu));
  CHECK(matchPattern(mid, g.relu)->ops.size() == 3);

  // An optional root absent with nothing below is not a match.
  CHECK_FALSE(matchPattern(parseOk("relu?(*)"), g.x));
  CHECK(matchPattern(parseOk("relu?(*)"), g.relu)->ops == std::vector<Expr>{g.relu});
}

TEST_CASE("pattern: alternatives", "[pattern]") {
  Expr x = input({2, 8});
  Expr w = weight({4, 8});
  Expr b = weight({4});
  Expr dense = call("dense", {x, w});
  Expr bias = call("bias_add", {dense, b});
  Expr add = call("add", {dense, b});
  Expr sig = call("sigmoid", {bias});
  Expr tanh = call("tanh", {add});
  Expr exp = call("exp", {add});

  Pattern p = parseOk("relu|sigmoid|tanh?(bias_add|add?(dense(*, const), const))");
  CHECK(matchPattern(p, sig)->ops == std::vector<Expr>{dense, bias, sig});
  CHECK(matchPattern(p, tanh)->ops == std::vector<Expr>{dense, add, tanh});
  CHECK(matchPattern(p, dense)->ops == std::vector<Expr>{dense});
  // exp is not one of the activations: the pattern still matches below it,
  // but not rooted at the exp.
  CHECK_FALSE(matchPattern(p, exp));

  // Alternation of whole terms, tried in order.
  Pattern terms = parseOk("sigmoid(bias_add(*, *))|tanh(add(*, const))");
  CHECK(matchPattern(terms, sig)->leaves == std::vector<Expr>{dense, b});
  CHECK(matchPattern(terms, tanh)->leaves == std::vector<Expr>{dense, b});
  CHECK_FALSE(matchPattern(terms, exp));
  // Alternatives inside an argument.
  Pattern inner = parseOk("exp(add(dense(*, const), const)|bias_add(*, *))");
  CHECK(matchPattern(inner, exp)->ops == std::vector<Expr>{dense, add, exp});
}

TEST_CASE("pattern: rootOps lists every op a match can be rooted at", "[pattern]") {
  auto names = [](const Pattern &p) {
    std::vector<std::string> out;
    for (const Op *op : rootOps(p))
      out.push_back(op->name);
    return out;
  };
  using V = std::vector<std::string>;
  // Optional roots: every op down the chain of absent optionals.
  CHECK(names(parseOk("relu|sigmoid|tanh?(bias_add|add?(dense(*, const), const))")) ==
        V{"relu", "sigmoid", "tanh", "bias_add", "add", "dense"});
  CHECK(names(parseOk("relu(add?(conv2d(*, const), const))")) == V{"relu"});
  CHECK(names(parseOk("sigmoid(bias_add(*, *))|tanh(add(*, const))")) == V{"sigmoid", "tanh"});
  CHECK(names(parseOk("relu?(*)")) == V{"relu"});

  // What the partitioner relies on: no match is ever rooted elsewhere.
  Expr x = input({2, 8});
  Expr w = weight({4, 8});
  Expr b = weight({4});
  Expr dense = call("dense", {x, w});
  std::vector<Expr> calls = {dense,
                             call("bias_add", {dense, b}),
                             call("add", {dense, b}),
                             call("relu", {dense}),
                             call("tanh", {dense}),
                             call("exp", {dense})};
  calls.push_back(call("sigmoid", {calls[1]}));
  calls.push_back(call("tanh", {calls[2]}));
  for (std::string_view text :
       {"relu|sigmoid|tanh?(bias_add|add?(dense(*, const), const))",
        "sigmoid(bias_add(*, *))|tanh(add(*, const))", "relu?(*)", "exp?(tanh?(dense(*, *)))"}) {
    Pattern p = parseOk(text);
    std::vector<const Op *> roots = rootOps(p);
    for (const Expr &c : calls) {
      const Op *op = c->as<CallNode>()->op();
      if (std::find(roots.begin(), roots.end(), op) == roots.end()) {
        INFO(text << " at " << op->name);
        CHECK_FALSE(matchPattern(p, c));
      }
    }
  }
}

TEST_CASE("pattern: attribute predicates", "[pattern]") {
  Expr x = input({1, 4, 8, 8});
  Expr w1 = weight({4, 4, 3, 3});
  Expr wd = weight({4, 1, 3, 3});
  Expr dense = call("conv2d", {x, w1});
  Expr depthwise = call("conv2d", {x, wd}, {{"groups", int64_t(4)}});
  Expr strided = call("conv2d", {x, w1}, {{"strides", std::vector<int64_t>{2, 2}}});

  Pattern g1 = parseOk("conv2d[groups=1](*, const)");
  CHECK(matchPattern(g1, dense));
  CHECK(matchPattern(g1, strided));
  CHECK_FALSE(matchPattern(g1, depthwise));
  Pattern gn = parseOk("conv2d[groups!=1](*, const)");
  CHECK_FALSE(matchPattern(gn, dense));
  CHECK(matchPattern(gn, depthwise));
  // Defaults count: strides are [1, 1] unless given.
  Pattern s1 = parseOk("conv2d[strides=[1, 1], groups=1](*, const)");
  CHECK(matchPattern(s1, dense));
  CHECK_FALSE(matchPattern(s1, strided));
  CHECK(matchPattern(parseOk("conv2d[strides!=[1, 1]](*, const)"), strided));

  // Floats (an int value matches the float attribute), strings, bools.
  Expr clip6 = call("clip", {x}, {{"min", 0.0}, {"max", 6.0}});
  CHECK(matchPattern(parseOk("clip[min=0, max=6.0](*)"), clip6));
  CHECK_FALSE(matchPattern(parseOk("clip[max=1.0](*)"), clip6));
  CHECK(matchPattern(parseOk("clip[max!=1.0](*)"), clip6));
  Expr gelu = call("gelu", {x}, {{"approximate", std::string("tanh")}});
  CHECK(matchPattern(parseOk("gelu[approximate=tanh](*)"), gelu));
  CHECK_FALSE(matchPattern(parseOk("gelu[approximate=\"none\"](*)"), gelu));
  Expr pool =
      call("avg_pool2d", {x}, {{"pool_size", std::vector<int64_t>{2, 2}}, {"ceil_mode", true}});
  CHECK(matchPattern(parseOk("avg_pool2d[ceil_mode=true, count_include_pad=false](*)"), pool));
  CHECK_FALSE(matchPattern(parseOk("avg_pool2d[ceil_mode=false](*)"), pool));
  Expr cast = call("cast", {x}, {{"dtype", DType::F16}});
  CHECK(matchPattern(parseOk("cast[dtype=f16](*)"), cast));
  CHECK_FALSE(matchPattern(parseOk("cast[dtype=i32](*)"), cast));

  // A predicate on an optional op applies only when it is present.
  Expr relu = call("relu", {depthwise});
  Pattern opt = parseOk("leaky_relu?[alpha=0.5](conv2d(*, const))");
  CHECK(matchPattern(opt, depthwise));
  Expr leaky = call("leaky_relu", {depthwise}, {{"alpha", 0.1}});
  CHECK_FALSE(matchPattern(opt, leaky));
  CHECK(matchPattern(opt, call("leaky_relu", {depthwise}, {{"alpha", 0.5}})));
  CHECK_FALSE(matchPattern(opt, relu));
}

TEST_CASE("pattern: const against *, shared leaves and ops", "[pattern]") {
  Expr x = input({2, 3});
  Expr c = weight({2, 3});
  Expr viaConst = call("add", {x, c});
  Expr twoInputs = call("add", {x, input({2, 3}, "y")});

  Pattern pc = parseOk("add(*, const)");
  CHECK(matchPattern(pc, viaConst));
  CHECK_FALSE(matchPattern(pc, twoInputs));
  // '*' takes constants too; then the constant is an input of the composite.
  Pattern ps = parseOk("add(*, *)");
  auto m = matchPattern(ps, viaConst);
  REQUIRE(m);
  CHECK(m->inputs == std::vector<Expr>{x, c});
  CHECK(m->constants.empty());

  // The same value twice is one leaf; a shared op is listed once.
  Expr sq = call("multiply", {x, x});
  auto m2 = matchPattern(parseOk("multiply(*, *)"), sq);
  REQUIRE(m2);
  CHECK(m2->leaves == std::vector<Expr>{x});
  Expr r = call("relu", {x});
  Expr both = call("add", {r, r});
  auto m3 = matchPattern(parseOk("add(relu(*), relu(*))"), both);
  REQUIRE(m3);
  CHECK(m3->ops == std::vector<Expr>{r, both});
  CHECK(m3->interior == std::vector<Expr>{r});
  CHECK(m3->leaves == std::vector<Expr>{x});

  // Matched by both 'const' and '*': an input.
  Expr cc = call("add", {c, c});
  auto m4 = matchPattern(parseOk("add(const, *)"), cc);
  REQUIRE(m4);
  CHECK(m4->inputs == std::vector<Expr>{c});
  CHECK(m4->constants.empty());
}

TEST_CASE("pattern: non-matches", "[pattern]") {
  ConvChain g;
  // Wrong op, wrong argument shape of the pattern, a leaf that is not a
  // constant, calls of functions rather than ops.
  CHECK_FALSE(matchPattern(parseOk("sigmoid(*)"), g.relu));
  CHECK_FALSE(matchPattern(parseOk("relu(conv2d(*, const))"), g.relu));
  CHECK_FALSE(matchPattern(parseOk("add(conv2d(const, const), const)"), g.add));
  CHECK_FALSE(matchPattern(parseOk("add(const, conv2d(*, const))"), g.add));
  Expr cat2 = call("concat", {g.x, g.x});
  CHECK(matchPattern(parseOk("concat(*, *)"), cat2));
  CHECK_FALSE(matchPattern(parseOk("concat(*, *, *)"), cat2));

  Var p = makeVar("a", g.relu->type());
  Function fn = makeFunction({p}, call("relu", {p}));
  Expr local = expectOk(makeLocalCall(fn, {g.relu}));
  CHECK_FALSE(matchPattern(parseOk("relu(*)"), local));
  CHECK_FALSE(matchPattern(parseOk("relu(*)"), nullptr));
}
