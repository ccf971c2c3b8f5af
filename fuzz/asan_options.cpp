//===- fuzz/asan_options.cpp - Sanitizer defaults of the fuzz binaries ----===//
//
// The fuzz preset links the shared sanitizer runtime (-shared-libsan), so
// that the plugins the partition target loads use the same one. The linker
// then lists libstdc++ before it, which the runtime's link-order check
// refuses although nothing is intercepted early; the check is turned off.
//
//===----------------------------------------------------------------------===//
extern "C" const char *__asan_default_options() { return "verify_asan_link_order=0"; }
