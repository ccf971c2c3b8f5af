/*===- zoo/hang.c - The query never returns (kept in zoo/slow: only the timeout test loads it) ===*/
#include "zoo_base.h"

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  volatile int spin = 1;
  (void)host;
  while (spin) {
  }
  zoo_describe(&plugin, "zoo_hang");
  *out_plugin = &plugin;
  return NULL;
}
