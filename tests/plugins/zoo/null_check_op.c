/*===- zoo/null_check_op.c - A checker without check_op ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;
static tessera_checker_t checker;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_null_check_op");
  checker = zoo_checker;
  checker.check_op = NULL;
  plugin.checker = &checker;
  *out_plugin = &plugin;
  return NULL;
}
