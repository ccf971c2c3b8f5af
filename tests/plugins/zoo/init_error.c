/*===- zoo/init_error.c - The query fails (what a plugin does when its setup fails) ===*/
#include "zoo_base.h"

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  (void)out_plugin;
  return zoo_status(TESSERA_STATUS_FAILED_PRECONDITION,
                    "zoo_init_error: no device found (checked /dev/zoo0)");
}
