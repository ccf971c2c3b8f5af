/*===- runtime/host_abi.h - Host code <-> runtime calling convention -----===*
 *
 * The contract between the host code generator (core/codegen) and the
 * executor (core/runtime). Plain C: the generated shared object and the
 * kernel library (core/codegen/kernels) include it too.
 *
 * Every host step of an executor plan is one exported function of the
 * artifact's host shared object:
 *
 *   int32_t SYMBOL(void *const *buffers, const tessera_host_ctx_t *ctx);
 *
 * `buffers` holds the data pointers of the step's arguments: inputs first,
 * then outputs, in the plan step's order. Shapes and dtypes are compiled in
 * (static shapes); every step of a plan with symbols gets one more pointer
 * after them, `const int64_t *` to the values of the plan's symbols for
 * this run, from which a step over symbolic shapes (or with parameters
 * computed from symbols) computes its sizes; others ignore it. Tensors are dense
 * row-major, every buffer is at least
 * 64-byte aligned unless it is a caller's tensor. The return value is 0 on
 * success, or a TESSERA_HOST_ERR_* code.
 *
 * Threads: a kernel that wants to split its outer loop calls
 * ctx->parallel_for(ctx, n, body, closure); the runtime runs
 * body(closure, begin, end) over disjoint ranges covering [0, n), on its
 * pool, and returns when all are done. ctx is never null; a runtime with one
 * thread calls body(closure, 0, n) directly.
 *
 * The shared object also exports
 *   const uint32_t tessera_host_abi_version;   (== TESSERA_HOST_ABI_VERSION)
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSERA_RUNTIME_HOST_ABI_H
#define TESSERA_RUNTIME_HOST_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSERA_HOST_ABI_VERSION 1u

enum {
  TESSERA_HOST_OK = 0,
  TESSERA_HOST_ERR_INVALID = 1,   /* an index or value out of range at run time */
  TESSERA_HOST_ERR_INTERNAL = 2,
};

typedef struct tessera_host_ctx tessera_host_ctx_t;

typedef void (*tessera_host_body_t)(void *closure, int64_t begin, int64_t end);

struct tessera_host_ctx {
  void (*parallel_for)(const tessera_host_ctx_t *ctx, int64_t n, tessera_host_body_t body,
                       void *closure);
  void *runtime; /* the runtime's, opaque to kernels */
  int32_t num_threads;
};

typedef int32_t (*tessera_host_fn_t)(void *const *buffers, const tessera_host_ctx_t *ctx);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_HOST_ABI_H */
