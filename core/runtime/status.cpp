//===- runtime/status.cpp - Status objects of the C API ------------------===//
#include "tessera/c/runtime.h"

#include <new>
#include <string>

struct tessera_status {
  tessera_status_code_t code;
  std::string message;
};

extern "C" {

tessera_status_t *tessera_status_create(tessera_status_code_t code, const char *message) {
  if (code == TESSERA_STATUS_OK)
    return nullptr;
  return new (std::nothrow) tessera_status{code, message ? message : ""};
}

tessera_status_code_t tessera_status_code(const tessera_status_t *status) {
  return status ? status->code : TESSERA_STATUS_OK;
}

const char *tessera_status_message(const tessera_status_t *status) {
  return status ? status->message.c_str() : "";
}

void tessera_status_free(tessera_status_t *status) { delete status; }

} // extern "C"
