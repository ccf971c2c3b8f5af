/*===- zoo/dup.c - Two files with the same plugin name (built twice: ZOO_DUP_FILE a and b) ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_dup");
  plugin.description = "duplicate " ZOO_DUP_FILE;
  *out_plugin = &plugin;
  return NULL;
}
