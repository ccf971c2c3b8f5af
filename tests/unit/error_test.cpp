//===- tests/unit/error_test.cpp - Errors as values ------------------------===//
//
// Error's context lines and its "located" mark: a located error says where
// it is (an ONNX node), so a caller does not name the place a second time.
// The ONNX importer relies on the mark rather than on the message's text.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "frontend/onnx/converter.h"

using namespace tessera;

TEST_CASE("errors carry context outermost first and a located mark", "[error]") {
  Error e("bad attribute");
  CHECK_FALSE(e.located());
  e.addContext("while folding add");
  CHECK_FALSE(e.located());
  e.addLocation("node 'n1' (Add)");
  CHECK(e.located());
  CHECK(e.str() == "node 'n1' (Add): while folding add: bad attribute");
  Status s = Status(Error("x")).withLocation("node 'n2' (Mul)");
  CHECK(s.error().located());
  CHECK(s.error().str() == "node 'n2' (Mul): x");
}

TEST_CASE("a converter's error names its node once and is located", "[error][onnx]") {
  frontend::onnx::NodeContext ctx("Relu", "r1", 17, {}, 1, {});
  Error e = ctx.error("input {} is missing", 0);
  CHECK(e.located());
  CHECK(e.str() == "node 'r1' (Relu): input 0 is missing");
}
