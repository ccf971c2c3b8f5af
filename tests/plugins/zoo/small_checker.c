/*===- zoo/small_checker.c - A checker table whose struct_size is too small ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;
static tessera_checker_t checker;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_small_checker");
  checker = zoo_checker;
  checker.struct_size = sizeof(size_t);
  plugin.checker = &checker;
  *out_plugin = &plugin;
  return NULL;
}
