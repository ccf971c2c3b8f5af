/*===- zoo/null_compile.c - A codegen table without compile ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;
static const tessera_codegen_t codegen = {sizeof(tessera_codegen_t), 0, NULL};

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_null_compile");
  plugin.codegen = &codegen;
  *out_plugin = &plugin;
  return NULL;
}
