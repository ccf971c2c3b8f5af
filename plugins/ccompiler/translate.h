//===- plugins/ccompiler/translate.h - A region as one C99 file -*- C++ -*-===//
//
// translate() turns one partitioned function (the tessera.graph JSON and its
// constants) into one C99 translation unit:
//
//   - a header comment (symbol, generator, the ops), self-contained
//     declarations (no header beyond the C standard library: the DLPack
//     struct is declared locally, see the comment it writes);
//   - small constants (at most kEmbedLimitBytes) as exact static arrays; the
//     larger ones are handed over at run time (`weights`, in the order of
//     Translation::weights) so that the C file stays readable and the
//     compile fast;
//   - one static function per op (a conv2d/dense followed by its bias and
//     activation is one function: the epilogue runs in the product's loop),
//     each with a comment naming the source node, its attributes and shapes;
//   - the entry points
//       int32_t <symbol>(const tsc_dltensor *const *args,
//                        const float *const *weights, float *scratch);
//       uint64_t <symbol>_scratch_bytes(void);
//       uint64_t <symbol>_num_weights(void);
//     args are the function's inputs then outputs (validated by the caller),
//     scratch is per-call memory of <symbol>_scratch_bytes() bytes (the
//     intermediates, planned with reuse), so concurrent calls are safe.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::ccompiler {

/// Constants larger than this are handed over at run time, not embedded.
inline constexpr size_t kEmbedLimitBytes = 16 * 1024;

/// A constant the module keeps and hands to every call.
struct Weight {
  std::string name;
  sdk::TensorType type;
  std::vector<float> data;
};

struct Translation {
  std::string symbol;
  std::string source; // the C file
  std::vector<sdk::TensorType> inputs, outputs;
  std::vector<Weight> weights;
  uint64_t scratchBytes = 0;
  size_t embeddedConstants = 0;
};

/// The C translation unit of a partitioned function. Throws sdk::Error
/// naming the node for anything the plugin does not take.
Translation translate(const sdk::GraphView &graph,
                      size_t embedLimitBytes = kEmbedLimitBytes);

} // namespace tessera::ccompiler
