/*===- zoo/bad_name.c - A plugin name outside [a-z][a-z0-9_]* ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "Zoo-Bad");
  *out_plugin = &plugin;
  return NULL;
}
