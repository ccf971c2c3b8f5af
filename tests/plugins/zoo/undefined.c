/*===- zoo/undefined.c - Calls a function that no library defines (linked without --no-undefined)
 * ===*/
#include "zoo_base.h"

int zoo_nowhere_defined(void);

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_undefined");
  plugin.abi_minor = (uint32_t)zoo_nowhere_defined();
  *out_plugin = &plugin;
  return NULL;
}
