/*===- zoo/no_entry.c - Exports a misspelt entry point instead of tessera_plugin_query ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_qeury(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_no_entry");
  *out_plugin = &plugin;
  return NULL;
}
