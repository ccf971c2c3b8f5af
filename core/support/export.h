//===- support/export.h - Symbols libtessera_runtime exports ---*- C++ -*-===//
//
// libtessera_runtime is built with hidden visibility; the C++ classes the
// compiler and the tools use from it are marked with TESSERA_RT_EXPORT.
//
//===----------------------------------------------------------------------===//
#pragma once

#define TESSERA_RT_EXPORT __attribute__((visibility("default")))
