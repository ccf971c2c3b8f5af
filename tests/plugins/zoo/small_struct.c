/*===- zoo/small_struct.c - A descriptor whose struct_size stops after abi_minor ===*/
#include "zoo_base.h"

#include <stddef.h>

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_small_struct");
  plugin.struct_size = offsetof(tessera_plugin_t, name);
  *out_plugin = &plugin;
  return NULL;
}
