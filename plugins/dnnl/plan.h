//===- plugins/dnnl/plan.h - A function as oneDNN primitives ----*- C++ -*-===//
//
// A PrimitivePlan is what init() makes of one function, once: a list of oneDNN
// primitives (Steps) over Buffers, ready to execute.
//
//   Buffer  where bytes live at run time: the caller's input k, the caller's
//           output k, a constant (the module's, or one reordered/folded at
//           init into memory the plan owns), or a slice of the per-call
//           arena (Temp; offsets planned by liveness, so buffers whose
//           lifetimes do not overlap share bytes).
//   Step    one primitive and its arguments, each = (DNNL_ARG_*, buffer,
//           memory desc). Several descs may view one buffer (a reshape is a
//           new desc over the same bytes; a conv's sum post-op writes into
//           the buffer of its residual).
//
// Activations stay in the layouts oneDNN picks (format "any": nChw16c and
// the like) from one primitive to the next; reorders appear only where a
// consumer wants another layout and at the function's boundary (inputs are
// plain NCHW; outputs are written plain, straight into the caller's tensor
// when the producer's layout is already plain).
//
// Nothing in a PrimitivePlan changes after init: run() reads it from many threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/json_runtime.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::dnnl_plugin {

/// The CPU engine every primitive of the plugin is built for.
const dnnl::engine &cpuEngine();

struct Buffer {
  enum class Kind { Input, Output, Const, Temp };
  Kind kind = Kind::Temp;
  int index = -1;             // Input/Output: the argument index
  const void *data = nullptr; // Const
  size_t bytes = 0;           // the largest desc viewing it
  size_t offset = 0;          // Temp: in the arena
  int first = -1, last = -1;  // Temp: the steps that touch it
  // A view: these bytes are `within` bytes into buffer `parent` (never a
  // view itself), whose kind and place they take. A concat's inputs are
  // views of its result when their producers can write there (lower_concat.cpp).
  int parent = -1;
  size_t within = 0;
};

/// Where a buffer's bytes are: its root (itself, or the buffer it views)
/// and the byte offset into it.
inline std::pair<int, size_t> rootOf(const std::vector<Buffer> &buffers, int buffer) {
  const Buffer &b = buffers[size_t(buffer)];
  return b.parent < 0 ? std::pair{buffer, size_t(0)} : std::pair{b.parent, b.within};
}

struct StepArg {
  int arg = 0;     // DNNL_ARG_*
  int buffer = -1; // -1: the context's scratchpad
  dnnl::memory::desc md;
};

/// A step the plugin runs with a kernel of its own (max_pool.h) where
/// oneDNN's is slow: called with the step's arguments, on the calling
/// thread's OpenMP threads.
using OwnKernel = std::function<void(const std::unordered_map<int, dnnl::memory> &args)>;

struct Step {
  dnnl::primitive prim; // empty for an own kernel
  std::vector<StepArg> args;
  std::string what; // "node 3 ('conv1', conv2d)" or "reorder ..."
  std::string impl; // oneDNN's implementation ("jit:avx512_core", "ref:any")
  std::string kind;  // the primitive's kind ("convolution", "reorder"), for profiles
  std::string nodes; // the graph nodes `what` names ("conv1"), for profiles
  // Too little work to wake other threads for (kSerialBytes): run on the
  // calling thread alone. Only kinds that split their work over the
  // current thread count at execution (!threadsFixedAtCreation).
  bool serial = false;
  OwnKernel own; // run instead of prim when set
};

/// A step whose tensors are all smaller than this (8K floats) runs
/// serially: waking a second OpenMP thread costs a few microseconds, more
/// than an LSTM gate's 512 values take on one (the zoo's 2-layer LSTM at 2
/// threads: 11.8 -> 9.3 ms; the CNNs' times did not move).
inline constexpr size_t kSerialBytes = size_t(1) << 15;

/// Whether oneDNN may fix a primitive of this kind's thread count when it is
/// created (the GEMM-based ones, jit pooling, jit reorders: all but the
/// elementwise and binary kinds) rather than at each execution; then running
/// it alone needs a primitive made for one thread, so it is not `serial`.
bool threadsFixedAtCreation(dnnl::primitive::kind kind);

/// Whether oneDNN picked one of its reference implementations ("ref:any"):
/// scalar loops meant as a fallback, 10-100x slower than its jit kernels.
bool isReference(std::string_view impl);
bool isReference(const dnnl::primitive_desc_base &pd);

/// An output whose value is not computed into the caller's tensor by a
/// step: copied (plain bytes) after the last step.
struct FinalCopy {
  int output = 0;
  int buffer = 0;
  size_t bytes = 0;
};

struct AlignedFree {
  void operator()(void *p) const;
};
using AlignedBytes = std::unique_ptr<std::byte, AlignedFree>;
/// 64-byte-aligned, zeroed bytes (rounded up to a multiple of 64).
AlignedBytes alignedBytes(size_t n);

/// A module constant that no step reads as it is, only through a copy the
/// plan reordered at init (into the layout a primitive wants): the module
/// need not keep its bytes, and can get them back from the copy by the
/// reverse reorder. (DnnlModule::init checks that it does before it lets
/// them go.)
struct ReorderedConstant {
  size_t constant = 0;        // index in the function's constants
  const void *data = nullptr; // the copy (in PrimitivePlan::owned)
  dnnl::memory::desc md;      // its layout
  dnnl::memory::desc view;    // the constant's bytes as the copy was made from them
  // Whether a reorder gives the bytes back: not from Winograd's transformed
  // weights (format_kind wino), whose constant the module keeps.
  bool reversible = true;
};

struct PrimitivePlan {
  int threads = 1; // the OpenMP threads its primitives were created for
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  std::vector<FinalCopy> finalCopies;
  size_t arenaBytes = 0;
  size_t scratchpadBytes = 0;
  std::vector<AlignedBytes> owned; // reordered and folded constants
  std::vector<ReorderedConstant> reordered;
  // Concats whose inputs were written into the result by their producers
  // ("node 7 ('cat', concat): 2 of 2 inputs in place"), for the plan text.
  std::vector<std::string> inPlace;
};

/// The plan's primitives for the calling thread's OpenMP thread count
/// (omp_get_max_threads()): oneDNN's GEMM-based primitives fix the number
/// of threads they run on when they are created, so a session on one
/// thread would otherwise run a module built under two on two. A primitive
/// oneDNN cannot make again alike (another implementation, other layouts,
/// a bigger scratchpad) stays as it was.
std::vector<dnnl::primitive> primitivesForThisThreadCount(const PrimitivePlan &plan);

/// Writes a reordered constant's own bytes to `out` (view's size).
void restoreConstant(const ReorderedConstant &c, std::byte *out);

/// The plan as text, for the module's "plan" source: its steps, memory, and
/// what became of each constant (`released`: by constant index; `prefix`:
/// the module's, which the step names start with).
std::string describePlan(const PrimitivePlan &plan, const sdk::JsonFunction &fn,
                         const std::vector<bool> &released, std::string_view prefix);

/// What buildPlan does with the constants a primitive wants in another
/// layout: reorder them (a plan to run), or only check that oneDNN can (a
/// plan that shows the function can run, made without copying a weight:
/// its Const buffers have no data, and it must not be executed).
enum class ConstantCopies { Make, CheckOnly };

/// Builds the plan of one function; throws sdk::Error naming the node that
/// cannot be built (`prefix` starts every message). `graph`: the function's
/// graph at one shape (a symbolic function's), else fn.graph.
std::unique_ptr<PrimitivePlan> buildPlan(const sdk::JsonFunction &fn, const std::string &prefix,
                                         ConstantCopies copies = ConstantCopies::Make,
                                         const sdk::Graph *graph = nullptr);

} // namespace tessera::dnnl_plugin
