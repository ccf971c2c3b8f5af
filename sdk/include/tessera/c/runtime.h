/*===- tessera/c/runtime.h - Tessera runtime C API -------------------*- C -*-===
 *
 * The C API of libtessera_runtime, the only library a deployed application
 * links: load a compiled artifact (a .tsr file made by `tessera compile`),
 * create sessions on it, bind inputs as DLTensors, run, read outputs.
 * tessera/runtime.hpp is a header-only C++ wrapper over this API.
 *
 * This header is standalone C99: it includes <stddef.h>, <stdint.h>,
 * <dlpack/dlpack.h> and tessera/c/status.h, nothing else.
 *
 * HANDLES
 *   tessera_model_t    a loaded, verified artifact; immutable; shared by any
 *                      number of sessions.
 *   tessera_session_t  the state of one run: activations, outputs, bound
 *                      inputs. A session keeps its model alive: the model
 *                      may be released before its sessions.
 *   The runtime keeps track of the handles it gave out: a handle released
 *   already (or never made by it) is an INVALID_ARGUMENT error ("session is
 *   not a live handle ..."), and releasing it again does nothing. Calls that
 *   return no status return 0, NULL or "" for it. Undefined, and not
 *   detectable: a released handle whose address a new handle now has (it
 *   acts on the new one), and a release while another thread uses it.
 *
 * STATUS OBJECTS
 *   A function that can fail returns a tessera_status_t*: NULL means
 *   success. A non-NULL status is owned by the caller, who must release it
 *   with tessera_status_free(). Messages name what was wrong ("input 'x':
 *   expected f32[1, 3, 224, 224], got f32[1, 3, 224, 225]").
 *   `out_*` parameters are written on success only.
 *
 * THREADS
 *   Model functions may be called from any number of threads at once.
 *   tessera_session_run_with may be called on one session from any number of
 *   threads at once (as ONNX Runtime's Run): it takes the inputs, returns the
 *   outputs in a tessera_run_result_t, and each call runs in state of its
 *   own (activations and outputs, from the session's pool: made when every
 *   state is busy, kept for later calls; each holds the session's
 *   activation memory once more). The stateful calls (set_input, run,
 *   get_output, set_output and their variants, set_profiling, get_profile)
 *   are for one thread at a time: while one thread is inside one of them,
 *   another thread's stateful call on the same session returns
 *   FAILED_PRECONDITION instead of corrupting it (a thread that interleaves
 *   them with another's between calls is not detected: keep a session's
 *   stateful calls to one thread, or guard them). Sessions of the same model
 *   run concurrently.
 *
 * PROFILING
 *   A session can record where each run's time goes: one record per step it
 *   runs (host steps named by their ops and nodes, plugin steps by their
 *   region), one per run, and what plugins report from inside their
 *   functions (oneDNN's primitives with their implementations). Off by
 *   default, and then free. `tessera run --profile` prints them as a table
 *   and `--profile-json` writes them as a Chrome trace; tessera/runtime.hpp
 *   does both for an app (rt::Profile).
 *
 * TENSORS
 *   Every DLTensor passed in is a CPU tensor (kDLCPU) with exactly the
 *   input's dtype and shape, dense row-major (strides NULL or compact), its
 *   data + byte_offset aligned to the element size. The DLTensor struct is
 *   read during the call only; the memory it points to is used in place
 *   (zero-copy), see each function.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSERA_C_RUNTIME_H
#define TESSERA_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tessera/c/dtype.h"
#include "tessera/c/status.h"

#if defined(TESSERA_RUNTIME_BUILDING)
#define TESSERA_RUNTIME_API __attribute__((visibility("default")))
#else
#define TESSERA_RUNTIME_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tessera_status tessera_status_t;
typedef struct tessera_model tessera_model_t;
typedef struct tessera_session tessera_session_t;

/*===-- Version and status objects ----------------------------------------===*/

/* The runtime's version, "MAJOR.MINOR.PATCH". Static storage; never NULL. */
TESSERA_RUNTIME_API const char *tessera_runtime_version(void);

/* A new status with a copy of `message` (which may be NULL). Returns NULL
 * for TESSERA_STATUS_OK. Owned by the caller. */
TESSERA_RUNTIME_API tessera_status_t *tessera_status_create(tessera_status_code_t code,
                                                            const char *message);
/* TESSERA_STATUS_OK for NULL. */
TESSERA_RUNTIME_API tessera_status_code_t tessera_status_code(const tessera_status_t *status);
/* The message, valid until the status is freed; "" for NULL. */
TESSERA_RUNTIME_API const char *tessera_status_message(const tessera_status_t *status);
/* Releases a status; NULL is allowed. */
TESSERA_RUNTIME_API void tessera_status_free(tessera_status_t *status);

/*===-- Plugins ------------------------------------------------------------===*/

/* Sets where plugins are looked for, in place of TESSERA_PLUGIN_PATH: `path`
 * is colon-separated folders (scanned for *.so) and files; the shipped
 * plugin folder (<libdir>/tessera/plugins) is still searched after them.
 * For an app that bundles its plugins. Plugins are discovered once per
 * process, at the first load that needs one: call this before. Codes:
 * INVALID_ARGUMENT (NULL), FAILED_PRECONDITION (plugins were discovered
 * already). */
TESSERA_RUNTIME_API tessera_status_t *tessera_set_plugin_path(const char *path);

/*===-- Models -------------------------------------------------------------===*/

/* Reads and loads the artifact at `path`. Everything in the file is checked
 * (digests, plan, metadata, a loaded plugin for every plugin module) before
 * any code in it is loaded. Plugins are found on TESSERA_PLUGIN_PATH (or the
 * path tessera_set_plugin_path set), then in <libdir>/tessera/plugins next
 * to libtessera_runtime. On success
 * *out_model is owned by the caller (tessera_model_release).
 * Codes: NOT_FOUND (no such file), FAILED_PRECONDITION (a plugin the model
 * needs is not loaded, or is of a version whose rule does not admit the one
 * that compiled the model, or its host code needs CPU features this CPU lacks:
 * "host code (compiled for X) needs avx512f; this CPU (...) lacks it;
 * recompile with --mcpu=x86-64-v3 or ..."), DATA_LOSS (anything else wrong
 * with the file). */
TESSERA_RUNTIME_API tessera_status_t *tessera_model_load(const char *path,
                                                         tessera_model_t **out_model);
/* The same from `size` bytes at `data` (copied; the caller keeps them). */
TESSERA_RUNTIME_API tessera_status_t *tessera_model_load_bytes(const void *data, size_t size,
                                                               tessera_model_t **out_model);
/* Releases the caller's reference; sessions keep theirs. NULL is allowed. */
TESSERA_RUNTIME_API void tessera_model_release(tessera_model_t *model);

/* The metadata JSON of the artifact at `path` (what tessera_model_metadata_json
 * gives after a load: "plugins" lists the plugins the model needs, with
 * their versions; "target" and "regions" the CPU features its native code
 * needs), read and verified without loading any code or plugin: what an app
 * asks before tessera_model_load. *out_size receives the bytes the JSON
 * needs with its terminating NUL; with a NULL `buffer` that is all. With a
 * `buffer` of `buffer_size` bytes, the JSON and a NUL are written there;
 * INVALID_ARGUMENT when it is too small. Otherwise the codes of
 * tessera_model_load (NOT_FOUND, INVALID_ARGUMENT, DATA_LOSS). */
TESSERA_RUNTIME_API tessera_status_t *tessera_artifact_metadata(const char *path, char *buffer,
                                                                size_t buffer_size,
                                                                size_t *out_size);

TESSERA_RUNTIME_API size_t tessera_model_num_inputs(const tessera_model_t *model);
TESSERA_RUNTIME_API size_t tessera_model_num_outputs(const tessera_model_t *model);
/* The name of input / output `index`, valid while the model lives; NULL when
 * `index` is out of range. */
TESSERA_RUNTIME_API const char *tessera_model_input_name(const tessera_model_t *model,
                                                         size_t index);
TESSERA_RUNTIME_API const char *tessera_model_output_name(const tessera_model_t *model,
                                                          size_t index);
/* The dtype and shape of input / output `index`: *out_shape points to
 * *out_ndim dimensions, valid while the model lives. Any out pointer may be
 * NULL. INVALID_ARGUMENT when `index` is out of range. A negative dim d is
 * the model's symbol -1 - d (tessera_model_symbol): its value is the bound
 * input's, within the symbol's bounds; an output's actual shape after a run
 * is in tessera_session_get_output's tensor. */
TESSERA_RUNTIME_API tessera_status_t *tessera_model_input_info(const tessera_model_t *model,
                                                               size_t index, DLDataType *out_dtype,
                                                               int32_t *out_ndim,
                                                               const int64_t **out_shape);
TESSERA_RUNTIME_API tessera_status_t *tessera_model_output_info(const tessera_model_t *model,
                                                                size_t index, DLDataType *out_dtype,
                                                                int32_t *out_ndim,
                                                                const int64_t **out_shape);
/* Whether input / output `index` is a sequence (1) or a tensor (0; also for
 * an index out of range): a list of tensors whose length and element shapes
 * the data decides (an ONNX sequence of run-time length: a scripted model
 * returning a Python list). Its _info gives the elements' dtype and, as
 * *out_ndim, their rank (-1: any), with no dims; it is bound with
 * tessera_session_set_input_sequence and read with
 * tessera_session_get_output_sequence. */
TESSERA_RUNTIME_API int tessera_model_input_is_sequence(const tessera_model_t *model, size_t index);
TESSERA_RUNTIME_API int tessera_model_output_is_sequence(const tessera_model_t *model,
                                                         size_t index);
/* The model's symbolic dims (0 for a model compiled for fixed shapes), and
 * symbol `index`'s name (valid while the model lives) and inclusive bounds
 * (*out_hi < 0: no upper bound). Any out pointer may be NULL.
 * INVALID_ARGUMENT when `index` is out of range. */
TESSERA_RUNTIME_API size_t tessera_model_num_symbols(const tessera_model_t *model);
TESSERA_RUNTIME_API tessera_status_t *tessera_model_symbol(const tessera_model_t *model,
                                                           size_t index, const char **out_name,
                                                           int64_t *out_lo, int64_t *out_hi);
/* The artifact's metadata (JSON: inputs, outputs, target, plugins, regions,
 * sizes), valid while the model lives. */
TESSERA_RUNTIME_API const char *tessera_model_metadata_json(const tessera_model_t *model);
/* The CPU the host code this process loaded was built for: one of the
 * artifact's levels (x86-64-v3 or x86-64-v4 by default, the best this CPU
 * runs; the environment variable TESSERA_HOST_CPU forces one). "" when the
 * artifact has no host code or records no CPU, or for a handle that is not
 * live. Valid while the model lives. */
TESSERA_RUNTIME_API const char *tessera_model_host_cpu(const tessera_model_t *model);

/*===-- Sessions -----------------------------------------------------------===*/

typedef struct tessera_session_options {
  size_t struct_size;  /* sizeof(tessera_session_options_t) */
  int32_t num_threads; /* threads for host kernels; 0: every core */
} tessera_session_options_t;

/* Creates a session on `model` (NULL options: the defaults). Allocates the
 * session's activations and outputs. On success *out_session is owned by
 * the caller (tessera_session_release). */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_create(const tessera_model_t *model, const tessera_session_options_t *options,
                       tessera_session_t **out_session);
/* NULL is allowed. */
TESSERA_RUNTIME_API void tessera_session_release(tessera_session_t *session);

/* Binds input `index` (or the input named `name`) to the caller's tensor,
 * checked as described under TENSORS (INVALID_ARGUMENT otherwise; NOT_FOUND
 * for an unknown name). Zero-copy: tessera_session_run reads tensor->data
 * in place, so it must stay valid and unchanged until a run returns. The
 * binding stays until the input is bound again.
 * These cannot know how many bytes tensor->data has: a buffer shorter than
 * the tensor's shape says is read past its end. The _checked forms below
 * take the buffer's size and refuse a short one; prefer them. */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_set_input(tessera_session_t *session, size_t index, const DLTensor *tensor);
TESSERA_RUNTIME_API tessera_status_t *tessera_session_set_input_by_name(tessera_session_t *session,
                                                                        const char *name,
                                                                        const DLTensor *tensor);
/* The same, with the size in bytes of the buffer tensor->data points into:
 * INVALID_ARGUMENT when byte_offset + the tensor's bytes exceed it ("input
 * 'x': the buffer has 16 bytes; the tensor needs 24 ..."). */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_set_input_checked(tessera_session_t *session, size_t index,
                                  const DLTensor *tensor, size_t buffer_bytes);
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_set_input_by_name_checked(tessera_session_t *session, const char *name,
                                          const DLTensor *tensor, size_t buffer_bytes);
/* Binds sequence input `index` to the `count` tensors at `elements` (each
 * checked as a tensor input is, against the sequence's dtype and element
 * rank; INVALID_ARGUMENT otherwise, or when the input is a tensor). Copied:
 * the tensors may change or go away once this returns. */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_set_input_sequence(tessera_session_t *session, size_t index,
                                   const DLTensor *elements, size_t count);
/* Optional: binds output `index` (or the output named `name`: NOT_FOUND for
 * an unknown one) to the caller's memory (same checks), which runs then
 * write in place; NULL `tensor` goes back to session storage. */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_set_output(tessera_session_t *session, size_t index, const DLTensor *tensor);
TESSERA_RUNTIME_API tessera_status_t *tessera_session_set_output_by_name(tessera_session_t *session,
                                                                         const char *name,
                                                                         const DLTensor *tensor);
/* set_output with the buffer's size in bytes, as set_input_checked. */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_set_output_checked(tessera_session_t *session, size_t index,
                                   const DLTensor *tensor, size_t buffer_bytes);
/* Runs the model. FAILED_PRECONDITION when an input is not bound; INTERNAL
 * when a step fails (the message names the step). */
TESSERA_RUNTIME_API tessera_status_t *tessera_session_run(tessera_session_t *session);
/* *out_tensor views output `index` (owned by the session; its data is
 * valid until the next run, a set_output of that output, or the session's
 * release). */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_get_output(tessera_session_t *session, size_t index, const DLTensor **out_tensor);
/* After a run, sequence output `index`: *out_count elements, viewed by the
 * *out_count DLTensors at *out_elements (owned by the session; valid until
 * the next run or the session's release). INVALID_ARGUMENT when the output
 * is a tensor (tessera_session_get_output, which refuses a sequence). */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_get_output_sequence(tessera_session_t *session, size_t index,
                                    const DLTensor **out_elements, size_t *out_count);
/* The same for the output named `name` (NOT_FOUND for an unknown one). */
TESSERA_RUNTIME_API tessera_status_t *tessera_session_get_output_by_name(
    tessera_session_t *session, const char *name, const DLTensor **out_tensor);

/*===-- Running from many threads -------------------------------------------===*/

/* The outputs of one tessera_session_run_with: views into the state the call
 * ran in, valid until tessera_run_result_release (which gives the state back
 * to the session's pool). A result may outlive its session. */
typedef struct tessera_run_result tessera_run_result_t;

/* Runs the model on `inputs` (`num_inputs` DLTensors, one per model input in
 * order, each as tessera_session_set_input checks it; read in place until
 * the call returns) and gives its outputs in *out_result. Safe to call from
 * many threads at once on one session (see THREADS). INVALID_ARGUMENT: the
 * wrong number of inputs, a bad input, a sequence input (bind those with
 * tessera_session_set_input_sequence and tessera_session_run); INTERNAL when
 * a step fails (the message names it). */
TESSERA_RUNTIME_API tessera_status_t *tessera_session_run_with(tessera_session_t *session,
                                                               const DLTensor *inputs,
                                                               size_t num_inputs,
                                                               tessera_run_result_t **out_result);
/* *out_tensor views output `index` of the result (valid until its release).
 * INVALID_ARGUMENT: an index out of range, a sequence output (use
 * tessera_run_result_get_output_sequence). */
TESSERA_RUNTIME_API tessera_status_t *
tessera_run_result_get_output(const tessera_run_result_t *result, size_t index,
                              const DLTensor **out_tensor);
/* The same for the output named `name` (NOT_FOUND for an unknown one). */
TESSERA_RUNTIME_API tessera_status_t *
tessera_run_result_get_output_by_name(const tessera_run_result_t *result, const char *name,
                                      const DLTensor **out_tensor);
/* Sequence output `index`: *out_count elements viewed by the DLTensors at
 * *out_elements (valid until the result's release). */
TESSERA_RUNTIME_API tessera_status_t *
tessera_run_result_get_output_sequence(const tessera_run_result_t *result, size_t index,
                                       const DLTensor **out_elements, size_t *out_count);
/* Gives the result's state back to its session's pool (NULL: nothing). */
TESSERA_RUNTIME_API void tessera_run_result_release(tessera_run_result_t *result);

/*===-- Profiling ----------------------------------------------------------===*/

/* One record of a profiled session. Strings are never NULL ("" for none)
 * and live as long as the records. */
typedef struct tessera_profile_record {
  size_t struct_size;
  const char *name;     /* a step's label ("conv2d 'conv1'", "dnnl region
                           'tessera_dnnl_0'"), a primitive or kernel
                           ("convolution"), or "run" */
  const char *category; /* "run", "host", "plugin", "copy", "shape", "sequence"
                           (a step), or "kernel" (reported by a plugin from
                           inside a plugin step) */
  const char *nodes;    /* the graph nodes a kernel or host step computes
                           ("conv1, relu1") */
  const char *impl;     /* a kernel's implementation ("jit:avx2"); a plugin
                           step's plugin; a host step's function */
  int64_t start_ns;     /* since profiling was switched on */
  int64_t duration_ns;
  uint64_t thread;      /* the OS thread it ran on (its track in a trace) */
  int32_t step;         /* the plan step (tessera inspect --steps); -1: a run */
  int32_t parent;       /* the index of the record it ran inside (a kernel's
                           step, a step's run); -1: none */
  uint32_t run;         /* which profiled run, from 0 */
} tessera_profile_record_t;

/* Switches profiling on (`enabled` non-zero: the records so far are dropped
 * and times count from now) or off (the records stay until it is switched
 * on again). */
TESSERA_RUNTIME_API tessera_status_t *tessera_session_set_profiling(tessera_session_t *session,
                                                                    int enabled);
/* The records of the runs since profiling was switched on: each run's
 * record, then its steps', each step's followed by its kernels':
 * *out_records points to *out_count of them, owned by the
 * session and valid until its next run, set_profiling or release. */
TESSERA_RUNTIME_API tessera_status_t *
tessera_session_get_profile(tessera_session_t *session,
                            const tessera_profile_record_t **out_records, size_t *out_count);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_C_RUNTIME_H */
