/*===- zoo/null_load.c - A module factory without load ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;
static const tessera_module_factory_t factory = {sizeof(tessera_module_factory_t), "zoo", NULL};
static const tessera_module_factory_t *const factories[1] = {&factory};

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_null_load");
  plugin.module_factories = factories;
  *out_plugin = &plugin;
  return NULL;
}
