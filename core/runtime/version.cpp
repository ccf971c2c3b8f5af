//===- runtime/version.cpp - Runtime version -----------------------------===//
#include "tessera/c/runtime.h"

extern "C" const char *tessera_runtime_version(void) { return TESSERA_VERSION_STRING; }
