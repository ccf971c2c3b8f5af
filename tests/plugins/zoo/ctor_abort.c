/*===- zoo/ctor_abort.c - A static constructor aborts as soon as the file is loaded ===*/
#include "zoo_base.h"

#include <stdlib.h>

__attribute__((constructor)) static void zoo_explode(void) {
  abort();
}

static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_ctor_abort");
  *out_plugin = &plugin;
  return NULL;
}
