/*===- zoo/bad_module.c - Loads fine, then hands back broken modules ===
 *
 * compile returns success without a module; the module factory returns a
 * module without get_function. The core must turn both into errors (and
 * destroy the second module), not crash.
 *
 *===--------------------------------------------------------------------===*/
#include "zoo_base.h"

#include <stdlib.h>

static void bad_destroy(void *self) {
  free(self);
}

static tessera_plugin_status_t *bad_compile(void *state, const tessera_graph_t *graph,
                                            tessera_module_t **out_module) {
  (void)state;
  (void)graph;
  (void)out_module; /* "success", but *out_module is left alone */
  return NULL;
}

static tessera_plugin_status_t *bad_load(void *state, const void *data, size_t size,
                                         tessera_module_t **out_module) {
  tessera_module_t *module = (tessera_module_t *)calloc(1, sizeof *module);
  (void)state;
  (void)data;
  (void)size;
  if (!module)
    return zoo_status(TESSERA_STATUS_OUT_OF_MEMORY, "zoo_bad_module: out of memory");
  module->struct_size = sizeof *module;
  module->self = module;
  module->type_key = "zoo";
  module->destroy = bad_destroy; /* but no get_function, no save */
  *out_module = module;
  return NULL;
}

static const tessera_codegen_t codegen = {sizeof(tessera_codegen_t), 0, bad_compile};
static const tessera_module_factory_t factory = {sizeof(tessera_module_factory_t), "zoo", bad_load};
static const tessera_module_factory_t *const factories[1] = {&factory};
static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_bad_module");
  plugin.codegen = &codegen;
  plugin.module_factories = factories;
  *out_plugin = &plugin;
  return NULL;
}
