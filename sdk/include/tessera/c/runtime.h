/*===- tessera/c/runtime.h - Tessera runtime C API -------------------*- C -*-===
 *
 * The C API of libtessera_runtime, the only library a deployed application
 * links. It grows with the executor and artifact loader; today it holds the
 * version query and status objects.
 *
 * Status objects: a function that can fail returns a tessera_status_t*; NULL
 * means success. A non-NULL status is owned by the caller, who must release
 * it with tessera_status_free().
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSERA_C_RUNTIME_H
#define TESSERA_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_C_RUNTIME_H */
