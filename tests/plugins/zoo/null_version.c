/*===- zoo/null_version.c - No version string ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_null_version");
  plugin.version = NULL;
  *out_plugin = &plugin;
  return NULL;
}
