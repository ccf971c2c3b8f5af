/*===- zoo/missing_dep.c - Linked against libzoo_dep.so.1, which is not on its library path ===*/
#include "zoo_base.h"

int zoo_dep_version(void);

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_missing_dep");
  plugin.abi_minor = (uint32_t)zoo_dep_version();
  *out_plugin = &plugin;
  return NULL;
}
