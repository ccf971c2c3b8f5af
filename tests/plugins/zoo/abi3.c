/*===- zoo/abi3.c - Built against a future ABI major (3) ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_abi3");
  plugin.abi_major = 3;
  plugin.abi_minor = 0;
  *out_plugin = &plugin;
  return NULL;
}
