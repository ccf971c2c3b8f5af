/*===- zoo/zoo_base.h - Shared pieces of the zoo's plugins ------*- C -*-===
 *
 * The zoo (tests/plugins/zoo) holds one deliberately broken plugin per way a
 * plugin file can fail to load; tests/unit/plugin_loader_test.cpp checks the
 * loader's message for each. They are plain C99 against tessera/c/plugin.h
 * (built with -std=c99 -pedantic -Werror, which also keeps that header
 * C-clean). Most start from the minimal valid plugin declared here and break
 * one thing.
 *
 *===--------------------------------------------------------------------===*/
#ifndef ZOO_BASE_H
#define ZOO_BASE_H

#include "tessera/c/plugin.h"

/* Everything is hidden (-fvisibility=hidden) except what is marked. */
#define ZOO_EXPORT __attribute__((visibility("default")))

/* A new status holding a copy of `message`; freed by its release. */
tessera_plugin_status_t *zoo_status(tessera_status_code_t code, const char *message);

/* The tables of a minimal valid plugin: it declares "relu" but declines it,
 * compiles nothing and loads nothing. */
extern const tessera_checker_t zoo_checker;
extern const tessera_codegen_t zoo_codegen;
extern const tessera_module_factory_t zoo_factory;
extern const tessera_module_factory_t *const zoo_factories[1];

/* Fills *plugin as a valid ABI 1.0 descriptor named `name` over the tables
 * above. */
void zoo_describe(tessera_plugin_t *plugin, const char *name);

#endif /* ZOO_BASE_H */
