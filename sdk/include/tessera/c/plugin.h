/*===- tessera/c/plugin.h - The Tessera plugin ABI ------------------*- C -*-===
 *
 * The contract between the Tessera core and a vendor plugin: a shared object
 * that exports one symbol, tessera_plugin_query, and through it hands the
 * core a descriptor with four tables:
 *
 *   checker         which core ops and op patterns the plugin takes
 *   codegen         a partitioned subgraph (JSON + constants) -> runtime module
 *   module factory  (type_key, bytes) -> runtime module, at artifact load
 *   runtime module  get_function / save / get_source / destroy
 *
 * This header is standalone: it includes <stdbool.h>, <stddef.h>, <stdint.h>,
 * <dlpack/dlpack.h> and tessera/c/status.h (an enum), nothing else. No C++
 * type, exception or allocator crosses the boundary. docs/abi.md is the
 * vendor's guide; the C++ helpers in tessera/sdk/ implement all of this.
 *
 * VERSIONING
 *   TESSERA_PLUGIN_ABI_MAJOR changes when an existing struct field or function
 *   signature changes meaning, type or position, or a table entry is removed.
 *   The core refuses a plugin of another major.
 *   TESSERA_PLUGIN_ABI_MINOR changes when something is appended: a field at
 *   the end of a struct, an entry at the end of a table, a status code, an
 *   attribute kind. Both sides then read only what the other side's
 *   struct_size covers, so a plugin built against 1.0 runs on a 1.3 core and
 *   the other way round.
 *
 * HISTORY
 *   1.0  the first version.
 *   1.1  tessera_checker_t::keep_region (a plugin's own prune rule).
 *   1.2  tessera_graph_t::target_cpu (the CPU the artifact is compiled for)
 *        and tessera_module_t::get_target_cpu (the CPU a module's native
 *        code was compiled for, which the artifact records and loading
 *        checks).
 *   1.3  tessera_plugin_t::compatible_versions (which versions' modules the
 *        plugin's factories load; checked when an artifact is loaded).
 *   1.4  symbolic dims: tessera_symbol_t, tessera_tensor_type_t::symbols,
 *        tessera_op_desc_t::symbols, tessera_checker_t::flags
 *        (TESSERA_CHECKER_SYMBOLIC_DIMS), tessera_function_t::call_symbolic
 *        and the graph JSON's "symbols". A plugin that does not set the flag
 *        (every plugin built before 1.4) is offered static ops only.
 *   1.5  tessera_checker_t::estimate_region (a plugin's cost hint for
 *        placement by measurement).
 *   1.6  profiling: tessera_function_t::call_with_context, which hands the
 *        function a tessera_call_context_t whose profiler takes the events
 *        the plugin reports (tessera_profile_event_t: a primitive or
 *        kernel, its nodes, its implementation, its start and end);
 *        check_op and check_pattern may write a note when they accept (what
 *        will run the op: "jit:avx2"), which the partition report shows.
 *
 * STRUCTS
 *   Every struct that crosses the boundary starts with `size_t struct_size`,
 *   set by whoever fills the struct to sizeof() of the struct as that side
 *   knows it. Fields past struct_size are absent (treated as zero/NULL).
 *   Arrays of structs are passed as arrays of pointers, so that each element
 *   carries its own size.
 *
 * OWNERSHIP (unless an entry says otherwise)
 *   - `const` pointer arguments are borrowed for the duration of the call;
 *     copy what must outlive it.
 *   - Strings are NUL-terminated UTF-8.
 *   - A function that can fail returns tessera_plugin_status_t*: NULL means
 *     success; a non-NULL status is owned by the caller, who releases it
 *     with status->release(status).
 *   - `out_*` parameters are written by the callee on success only.
 *
 * THREADS
 *   The checker and codegen are called from one thread at a time. A runtime
 *   module's functions may be called concurrently from several threads, each
 *   call with its own tensors; get_function, save and get_source are not
 *   called concurrently with destroy.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSERA_C_PLUGIN_H
#define TESSERA_C_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tessera/c/dtype.h"
#include "tessera/c/status.h"

#define TESSERA_PLUGIN_ABI_MAJOR 1
#define TESSERA_PLUGIN_ABI_MINOR 6

/* The one symbol a plugin exports (tessera_plugin_query_fn). */
#define TESSERA_PLUGIN_ENTRY_SYMBOL "tessera_plugin_query"

#ifdef __cplusplus
extern "C" {
#endif

/*===-- Status ------------------------------------------------------------===*/

/* An error. Created by whichever side reports it and released by the side
 * that receives it, through `release` (so each side uses its own
 * allocator). */
typedef struct tessera_plugin_status {
  size_t struct_size;
  tessera_status_code_t code; /* never TESSERA_STATUS_OK */
  const char *message;        /* owned by the status; never NULL */
  void (*release)(struct tessera_plugin_status *self);
} tessera_plugin_status_t;

/* A sink for bytes (save, get_source): the callee calls `write` any number of
 * times; the bytes are copied before it returns. Returns false when the sink
 * failed (out of memory, disk full), after which the callee should stop and
 * return an error. */
typedef bool (*tessera_write_fn)(void *sink, const void *data, size_t size);

/*===-- Types and attributes (what a checker sees) -----------------------===*/

/* A tensor type. Tessera's dtypes as DLPack sees them: f16/f32/f64 are
 * kDLFloat, bf16 is kDLBfloat 16, i8..i64 kDLInt, u8..u64 kDLUInt, bool is
 * kDLBool 8 (code 6); lanes is 1. Every shape the core passes keeps to
 * TESSERA_MAX_ELEMENTS: no dim is larger, nor is the product of the non-zero
 * dims (symbolic dims at their upper bounds), so sizes computed from it
 * cannot overflow.
 *
 * Since ABI 1.4 a dim may be symbolic (only for a plugin whose checker sets
 * TESSERA_CHECKER_SYMBOLIC_DIMS): its shape entry is -1 and `symbols` names
 * the symbol, an index into the symbol list of the op description (checkers)
 * or of the graph (codegen). Two dims with the same symbol are equal at run
 * time; their value is known only when the function is called
 * (tessera_function_t::call_symbolic). */
#define TESSERA_MAX_ELEMENTS (INT64_C(1) << 48)
typedef struct tessera_tensor_type {
  size_t struct_size;
  DLDataType dtype;
  int32_t ndim;
  const int64_t *shape; /* ndim entries (NULL when ndim is 0) */
  /* ABI 1.4. NULL when every dim is a constant; else ndim entries: -1 for a
   * constant dim, the symbol's index for a symbolic one. */
  const int32_t *symbols;
} tessera_tensor_type_t;

/* ABI 1.4. A symbolic dim: a named input dim ("N", "height"), a dim derived
 * from others (a convolution's output height: named "?" + four hex digits),
 * or a count the data decides (a NonZero's). Its value at run time lies in
 * lo..hi. `example` is a value at which every type of the op (or graph) is
 * consistent when all its symbols take their examples together (a conv's
 * output height is the one its input height gives): a checker that must try
 * concrete shapes (build a kernel to see whether it can) tries these. An
 * example may lie outside the bounds. */
typedef struct tessera_symbol {
  size_t struct_size;
  const char *name;
  int64_t lo;
  int64_t hi;   /* -1: no upper bound */
  bool runtime; /* decided by the data, while the model runs */
  int64_t example;
} tessera_symbol_t;

typedef enum tessera_attr_kind {
  TESSERA_ATTR_INT = 0,    /* i */
  TESSERA_ATTR_FLOAT = 1,  /* f */
  TESSERA_ATTR_STRING = 2, /* s */
  TESSERA_ATTR_BOOL = 3,   /* b */
  TESSERA_ATTR_DTYPE = 4,  /* dtype */
  TESSERA_ATTR_INTS = 5,   /* ints[count] */
  TESSERA_ATTR_FLOATS = 6, /* floats[count] */
} tessera_attr_kind_t;

/* One attribute of a core op, after the op's defaults are filled in (every
 * attribute of the op's schema is present; docs/ops.md lists them). */
typedef struct tessera_attr {
  size_t struct_size;
  const char *name;
  tessera_attr_kind_t kind;
  int64_t i;
  double f;
  bool b;
  DLDataType dtype;
  const char *s;
  const int64_t *ints;
  const double *floats;
  size_t count; /* entries of ints or floats */
  /* ABI 1.4. NULL, or for an INT or INTS attribute that holds symbolic dims
   * (a resize to [H, W], a reshape to [N, -1]) one entry per value (1 for
   * INT, count for INTS): -1 for a constant, else the index of the symbol
   * (in the op's or graph's list) that the value is; that value is then -1. */
  const int32_t *symbols;
} tessera_attr_t;

/* One call of a core op, as the checker sees it. */
typedef struct tessera_op_desc {
  size_t struct_size;
  const char *op;   /* core op name: "conv2d", "add", ... (docs/ops.md) */
  const char *name; /* the node's name for messages (the ONNX node), or "" */
  const tessera_attr_t *const *attrs;
  size_t num_attrs;
  const tessera_tensor_type_t *const *inputs;
  size_t num_inputs;
  const tessera_tensor_type_t *const *outputs;
  size_t num_outputs;
  /* ABI 1.4. The symbols the input and output types refer to (none when
   * every dim is a constant). */
  const tessera_symbol_t *const *symbols;
  size_t num_symbols;
} tessera_op_desc_t;

/*===-- Graphs (what codegen and the whole-graph hook see) ----------------===*/

/* A read-only subgraph: one partitioned function as JSON (the format is
 * "tessera.graph" version 1, docs/abi.md; tessera/sdk/json_graph.hpp reads
 * it) plus its constants as DLTensor views (CPU, compact row-major). JSON
 * nodes of kind "const" refer to constants by index. Everything is borrowed
 * for the duration of the call. */
typedef struct tessera_graph {
  size_t struct_size;
  const char *symbol; /* the function's global symbol ("" for a whole graph) */
  const char *json;
  size_t json_size;
  const char *const *constant_names; /* num_constants entries */
  const DLTensor *const *constants;  /* num_constants entries */
  size_t num_constants;
  /* ABI 1.2. The CPU the artifact's native code is for, as `tessera compile
   * --mcpu` names it: an x86-64 level ("x86-64-v3", the default), an LLVM
   * CPU name ("znver4"), or "native" (the compiling machine). NULL or "":
   * not compiling an artifact (the conformance kit); the plugin's choice. A
   * plugin that compiles native code compiles it for this CPU and says so
   * through tessera_module_t::get_target_cpu. */
  const char *target_cpu;
} tessera_graph_t;

/*===-- Checker ------------------------------------------------------------===*/

/* A named composite pattern in the pattern language (docs/abi.md), e.g.
 *   name "conv2d_bias_relu", pattern "relu(add(conv2d(*, const), const))".
 * Matches are outlined as composite functions "<plugin>.<name>". */
typedef struct tessera_pattern {
  size_t struct_size;
  const char *name;
  const char *pattern;
} tessera_pattern_t;

typedef struct tessera_checker {
  size_t struct_size;
  /* The core ops this plugin may take, NULL-terminated (may be empty). Only
   * these are offered to check_op. Valid while the plugin is loaded. */
  const char *const *ops;
  /* The composite patterns, tried in this order (earlier wins). */
  const tessera_pattern_t *const *patterns;
  size_t num_patterns;
  /* Required. Does the plugin take this op call? On false, the plugin may
   * write a one-line reason (truncated to reason_size, NUL-terminated) that
   * the partition report shows ("dilation > 1 with groups > 1"). Since ABI
   * 1.6, on true it may write a note the same way: what will run the op (a
   * library's implementation, "jit:avx2"), shown with the op in the report. */
  bool (*check_op)(void *state, const tessera_op_desc_t *op, char *reason, size_t reason_size);
  /* Optional (NULL accepts every match). A match of pattern `pattern` over
   * `ops` (in post-order, the pattern's root last): take it? A reason on
   * false, and since ABI 1.6 a note on true, as check_op. */
  bool (*check_pattern)(void *state, const char *pattern, const tessera_op_desc_t *const *ops,
                        size_t num_ops, char *reason, size_t reason_size);
  /* Optional whole-graph hook. Instead of per-op checks, the plugin
   * partitions `graph` itself: out_region has one entry per JSON node
   * (num_nodes of them, in the JSON's order); it writes a region number
   * >= 0 for each op node it takes and -1 elsewhere. The core validates the
   * result (no cycle between regions, every claimed node an op) before
   * accepting it. */
  tessera_plugin_status_t *(*partition)(void *state, const tessera_graph_t *graph,
                                        int64_t *out_region, size_t num_nodes);
  /* Since ABI 1.1. Optional (NULL: the core's default rule, which keeps a region holding at
   * least one compute-heavy op: conv2d, conv2d_transpose, dense, matmul,
   * batch_matmul). Is this formed region worth offloading? On false the
   * region's ops go back to the host, with the reason in the partition
   * report. `region` is the region as it will be compiled (constants
   * included). */
  bool (*keep_region)(void *state, const tessera_graph_t *region, char *reason,
                      size_t reason_size);
  /* Since ABI 1.4. TESSERA_CHECKER_* flags. */
  uint64_t flags;
  /* Since ABI 1.5. Optional (NULL: no estimate). A cost hint for placement
   * by measurement (`tessera compile --placement measure`): how many times
   * faster than the host's own code the plugin expects to run `region` (2:
   * twice as fast; 0.1: ten times slower); 0 or less: no estimate. The
   * plugin may write a one-line reason. An estimate of at least
   * TESSERA_ESTIMATE_CLEAR (or at most its inverse) decides the region
   * without timing it; anything in between is measured. A measurement
   * (cached, or in a placement file) always wins over an estimate. */
  double (*estimate_region)(void *state, const tessera_graph_t *region, char *reason,
                            size_t reason_size);
} tessera_checker_t;

/* How far from 1 an estimate must be to be taken without measuring. */
#define TESSERA_ESTIMATE_CLEAR 4.0

/* The plugin takes symbolic dims: its checker is offered ops whose types hold
 * them, its codegen graphs with symbols, and its functions are called through
 * call_symbolic. Without it, only static ops are offered. */
#define TESSERA_CHECKER_SYMBOLIC_DIMS 0x1u

/*===-- Runtime modules ----------------------------------------------------===*/

/* ABI 1.6. One event a plugin reports while a run is profiled: something it
 * ran inside a function call (a oneDNN primitive, a kernel, a reorder). The
 * strings are borrowed for the duration of record(): the core copies them.
 * Times are CLOCK_MONOTONIC in nanoseconds (std::chrono::steady_clock on
 * Linux), the clock the core times its own steps with. */
typedef struct tessera_profile_event {
  size_t struct_size;
  const char *name;  /* what ran: "convolution", "reorder", "dense"; never NULL */
  const char *nodes; /* the graph nodes it computes ("conv1, relu1"); NULL: none */
  const char *impl;  /* the implementation ("jit:avx2", "brg:avx512_core"); NULL */
  int64_t start_ns;
  int64_t end_ns;
} tessera_profile_event_t;

/* ABI 1.6. Where a function reports its events. record() may be called from
 * any thread of the call (it is thread-safe) and only until the call
 * returns. */
typedef struct tessera_profiler {
  size_t struct_size;
  void *state;
  void (*record)(void *state, const tessera_profile_event_t *event);
} tessera_profiler_t;

/* ABI 1.6. What the core tells a function about one call. */
typedef struct tessera_call_context {
  size_t struct_size;
  /* NULL: the run is not profiled (report nothing, and time nothing). */
  const tessera_profiler_t *profiler;
} tessera_call_context_t;

/* A callable function of a module. Call convention: `args` are the
 * function's inputs then its outputs, as DLTensors on the CPU, compact
 * row-major, with exactly the types of the compiled graph; outputs are
 * allocated by the caller and written by the callee. No copies are implied:
 * the callee reads inputs and writes outputs in place. */
typedef struct tessera_function {
  size_t struct_size;
  void *self;
  tessera_plugin_status_t *(*call)(void *self, const DLTensor *const *args, size_t num_args);
  /* ABI 1.4; required of a function compiled from a graph with symbols, which
   * the core calls through it (never through `call`). As `call`, with the
   * values of the graph's symbols, `num_symbols` of them in the order of the
   * graph's "symbols" list; the DLTensors' shapes are this call's. The values
   * change from call to call (each within its symbol's bounds). */
  tessera_plugin_status_t *(*call_symbolic)(void *self, const DLTensor *const *args,
                                            size_t num_args, const int64_t *symbols,
                                            size_t num_symbols);
  /* ABI 1.6, optional. As call_symbolic (`symbols` NULL and `num_symbols` 0
   * for a static function), with a context (never NULL). The core calls it
   * when it has something to say (a profiled run) and the function has it;
   * otherwise call or call_symbolic. */
  tessera_plugin_status_t *(*call_with_context)(void *self, const DLTensor *const *args,
                                                size_t num_args, const int64_t *symbols,
                                                size_t num_symbols,
                                                const tessera_call_context_t *context);
} tessera_function_t;

/* A runtime module, created by codegen or by a module factory and owned by
 * the core until it calls destroy. */
typedef struct tessera_module {
  size_t struct_size;
  void *self;
  /* The module factory that loads what save writes ("json", "dnnl"); static
   * storage in the plugin. */
  const char *type_key;
  /* Required. Looks up a function by its global symbol. Fills *out_function
   * (whose struct_size the caller sets) and returns NULL, or returns a
   * TESSERA_STATUS_NOT_FOUND status. The function stays valid until
   * destroy. */
  tessera_plugin_status_t *(*get_function)(void *self, const char *name,
                                           tessera_function_t *out_function);
  /* Required. Serializes the module for its factory's load. */
  tessera_plugin_status_t *(*save)(void *self, tessera_write_fn write, void *sink);
  /* Optional (NULL: no source). Writes human-readable source ("json", "c",
   * ...; NULL or "" for the module's default format). */
  tessera_plugin_status_t *(*get_source)(void *self, const char *format, tessera_write_fn write,
                                         void *sink);
  /* Required. Releases the module, this struct included. */
  void (*destroy)(void *self);
  /* ABI 1.2, optional (NULL, or returning NULL or "": the module runs no
   * CPU-specific native code, or picks its code at run time as oneDNN
   * does). The CPU its native code was compiled for, in the terms of
   * tessera_graph_t::target_cpu. The core records the ISA extensions that
   * CPU has in the artifact; loading refuses a CPU that lacks one. The
   * string lives as long as the module. */
  const char *(*get_target_cpu)(void *self);
} tessera_module_t;

/*===-- Codegen and module factories --------------------------------------===*/

/* Codegen flags. */
#define TESSERA_CODEGEN_CONSTANTS_AS_INPUTS 0x1u /* constants become graph inputs at run */

typedef struct tessera_codegen {
  size_t struct_size;
  uint64_t flags; /* TESSERA_CODEGEN_* */
  /* Required. Compiles one partitioned function; the module's get_function
   * must answer to graph->symbol. Constants are borrowed views: a module
   * that needs them copies them (and saves them). */
  tessera_plugin_status_t *(*compile)(void *state, const tessera_graph_t *graph,
                                      tessera_module_t **out_module);
} tessera_codegen_t;

typedef struct tessera_module_factory {
  size_t struct_size;
  const char *type_key; /* what tessera_module_t::type_key names */
  /* Required. Recreates a module from the bytes its save wrote. */
  tessera_plugin_status_t *(*load)(void *state, const void *data, size_t size,
                                   tessera_module_t **out_module);
} tessera_module_factory_t;

/*===-- The plugin descriptor and the entry point --------------------------===*/

typedef enum tessera_log_level {
  TESSERA_LOG_DEBUG = 0,
  TESSERA_LOG_INFO = 1,
  TESSERA_LOG_WARN = 2,
  TESSERA_LOG_ERROR = 3,
} tessera_log_level_t;

/* What the core tells the plugin at query time. Valid while the plugin is
 * loaded. */
typedef struct tessera_host {
  size_t struct_size;
  uint32_t abi_major; /* TESSERA_PLUGIN_ABI_MAJOR of the core */
  uint32_t abi_minor;
  const char *core_version; /* "0.1.0" */
  /* Writes one line to the core's log (thread-safe). */
  void (*log)(void *log_state, tessera_log_level_t level, const char *message);
  void *log_state;
} tessera_host_t;

/* The plugin's description of itself. Static storage in the plugin: the
 * descriptor and everything it points to stay valid until the plugin is
 * unloaded. The first three fields keep their place in every ABI major, so
 * that the core can read abi_major from any plugin. */
typedef struct tessera_plugin {
  size_t struct_size;
  uint32_t abi_major; /* TESSERA_PLUGIN_ABI_MAJOR the plugin was built against */
  uint32_t abi_minor;
  const char *name;        /* [a-z][a-z0-9_]*, unique among loaded plugins */
  const char *version;     /* the plugin's own version, free form ("1.2.0") */
  const char *description; /* one line */
  void *state;             /* passed to every checker/codegen/factory call */
  const tessera_checker_t *checker;        /* required */
  const tessera_codegen_t *codegen;        /* required */
  const tessera_module_factory_t *const *module_factories; /* at least one */
  size_t num_module_factories;
  /* ABI 1.3, optional. The versions of this plugin whose saved modules its
   * factories load, as comparators that must all hold: ">=1.2 <3",
   * "^1.4" (>=1.4.0 <2.0.0), "=1.0.0", "*". An artifact records the version
   * that compiled each module; loading it with a plugin of another version
   * warns (both named) when the rule admits that version and refuses
   * otherwise. NULL or "": modules of the plugin's own major version. */
  const char *compatible_versions;
} tessera_plugin_t;

/* The entry point, exported as TESSERA_PLUGIN_ENTRY_SYMBOL. Called once per
 * load, before anything else. The plugin initialises itself (an error here
 * is reported as "plugin init failed: <message>") and returns its
 * descriptor. It may refuse a host whose abi_major it does not speak. */
typedef tessera_plugin_status_t *(*tessera_plugin_query_fn)(const tessera_host_t *host,
                                                            const tessera_plugin_t **out_plugin);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_C_PLUGIN_H */
