/*===- tessera/c/status.h - Status codes shared by Tessera's C APIs --*- C -*-===
 *
 * The codes carried by the runtime API's status objects (tessera/c/runtime.h)
 * and by plugin statuses (tessera/c/plugin.h). Values are stable: new codes
 * are appended, none is ever renumbered.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSERA_C_STATUS_H
#define TESSERA_C_STATUS_H

typedef enum tessera_status_code {
  TESSERA_STATUS_OK = 0,
  TESSERA_STATUS_INVALID_ARGUMENT = 1,
  TESSERA_STATUS_NOT_FOUND = 2,
  TESSERA_STATUS_FAILED_PRECONDITION = 3,
  TESSERA_STATUS_DATA_LOSS = 4,
  TESSERA_STATUS_UNIMPLEMENTED = 5,
  TESSERA_STATUS_INTERNAL = 6,
  TESSERA_STATUS_OUT_OF_MEMORY = 7,
} tessera_status_code_t;

#endif /* TESSERA_C_STATUS_H */
