//===- unit/ops_dynamic_slice_test.cpp - Windows at run-time starts --------===//
//
// The core op dynamic_slice (ir/ops/transform_slice.cpp): its relation and
// messages, its reference kernel against windows computed here, its host
// kernel (codegen/kernels/transform.cpp) against the reference kernel at
// starts that are first, last, negative, i32 and i64, and the run-time
// refusal of a window that does not fit (both kernels). The ONNX importer's
// use of it (Slice whose ends are its starts plus constants) is checked in
// onnx_control_flow_test.cpp's Loop and by the backend test test_loop11.
//
//===----------------------------------------------------------------------===//
#include "host_kernel_harness.h"
#include "test_util.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::test;
using ir::DType;
using ir::Type;

namespace {

using Ints = std::vector<int64_t>;

ir::Attrs window(Ints axes, Ints sizes) {
  return ir::Attrs{{"axes", ir::AttrValue(std::move(axes))},
                   {"sizes", ir::AttrValue(std::move(sizes))}};
}

/// x [4, 6] with x[i, j] = 10 i + j.
ir::Tensor grid() {
  std::vector<double> v;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j)
      v.push_back(10 * i + j);
  return ir::Tensor::fromDoubles(DType::F32, {4, 6}, v);
}

/// dynamic_slice(x, starts) {axes [0, 1], sizes [2, 3]} over parameters.
ir::Expr windowOf(const ir::Tensor &x, const ir::Tensor &starts) {
  auto call = ir::makeCall("dynamic_slice",
                           {ir::makeVar("x", x.type()), ir::makeVar("s", starts.type())},
                           window({0, 1}, {2, 3}), "w");
  REQUIRE(call.ok());
  return *call;
}

/// The window [r, r + 2) x [c, c + 3) of grid(), as the values it holds.
std::vector<double> expected(int64_t r, int64_t c) {
  std::vector<double> v;
  for (int64_t i = r; i < r + 2; ++i)
    for (int64_t j = c; j < c + 3; ++j)
      v.push_back(double(10 * i + j));
  return v;
}

} // namespace

TEST_CASE("dynamic_slice infers a window of static size", "[ops][dynamic_slice]") {
  const Type x = Type::tensor(DType::F32, {4, 6}), s2 = Type::tensor(DType::I64, {2}),
             s1 = Type::tensor(DType::I32, {1});
  CHECK(inferred("dynamic_slice", {x, s2}, window({0, 1}, {2, 3})) ==
        Type::tensor(DType::F32, {2, 3}));
  CHECK(inferred("dynamic_slice", {x, s1}, window({-1}, {1})) == Type::tensor(DType::F32, {4, 1}));
  CHECK_THAT(inferError("dynamic_slice", {x, s2}, window({0}, {2})),
             Catch::StartsWith("dynamic_slice: argument 1 (starts) must be i64[1] or i32[1], got "
                               "i64[2]"));
  CHECK_THAT(inferError("dynamic_slice", {x, s1}, window({1}, {7})),
             Catch::StartsWith("dynamic_slice: attribute 'sizes' = [7]: 7 elements do not fit "
                               "axis 1 of size 6"));
  CHECK_THAT(inferError("dynamic_slice", {x, s1}, window({0, 1}, {1})),
             Catch::StartsWith("dynamic_slice: attributes 'axes' and 'sizes' must have one value "
                               "per sliced axis, got [0, 1] and [1]"));
  CHECK_THAT(inferError("dynamic_slice", {x, Type::tensor(DType::F32, {1})}, window({0}, {1})),
             Catch::Contains("must be i64[1] or i32[1], got f32[1]"));
}

TEST_CASE("dynamic_slice kernels take the window at run-time starts", "[ops][dynamic_slice]") {
  const ir::Tensor x = grid();
  // (row, column) starts as given, and where the window starts.
  const std::vector<std::array<int64_t, 4>> cases = {
      {0, 0, 0, 0}, {2, 3, 2, 3}, {-2, -3, 2, 3}, {1, -6, 1, 0}, {-4, 2, 0, 2}};
  for (auto [r, c, wr, wc] : cases)
    for (DType dt : {DType::I64, DType::I32}) {
      INFO("starts (" << r << ", " << c << ") as " << ir::dtypeName(dt));
      const ir::Tensor starts = ir::Tensor::fromInts(dt, {2}, Ints{r, c});
      const ir::Expr call = windowOf(x, starts);
      const auto &node = *call->as<ir::CallNode>();
      auto want = node.op()->kernel(std::vector<ir::Tensor>{x, starts}, node.attrs(), node.type());
      REQUIRE(want.ok());
      CHECK((*want)[0].toDoubles() == expected(wr, wc));
      auto got = hostkernel::runNative(node, {x, starts});
      INFO((got.ok() ? "" : got.error().str()));
      REQUIRE(got.ok());
      CHECK((*got)[0].toDoubles() == expected(wr, wc));
    }
}

TEST_CASE("dynamic_slice refuses a window that does not fit", "[ops][dynamic_slice]") {
  const ir::Tensor x = grid();
  for (Ints s : {Ints{3, 0}, Ints{0, 4}, Ints{-1, 0}, Ints{-5, 0}, Ints{0, 7}}) {
    INFO("starts " << s[0] << ", " << s[1]);
    const ir::Tensor starts = ir::Tensor::fromInts(DType::I64, {2}, s);
    const ir::Expr call = windowOf(x, starts);
    const auto &node = *call->as<ir::CallNode>();
    auto want = node.op()->kernel(std::vector<ir::Tensor>{x, starts}, node.attrs(), node.type());
    REQUIRE(!want.ok());
    CHECK_THAT(want.error().str(), Catch::Contains("leaves fewer than"));
    CHECK(!hostkernel::runNative(node, {x, starts}).ok());
  }
}
