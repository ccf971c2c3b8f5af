/*===- zoo/no_factory.c - No module factory at all ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_no_factory");
  plugin.module_factories = NULL;
  plugin.num_module_factories = 0;
  *out_plugin = &plugin;
  return NULL;
}
