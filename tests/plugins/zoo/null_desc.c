/*===- zoo/null_desc.c - The query succeeds but hands back no descriptor ===*/
#include "zoo_base.h"

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  *out_plugin = NULL;
  return NULL;
}
