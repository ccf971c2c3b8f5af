/*===- zoo/segv.c - The query dereferences a null pointer ===*/
#include "zoo_base.h"

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  /* Volatile both ways, so that the compiler neither sees the null (and
   * emits a trap instead) nor drops the store. */
  volatile int *volatile nowhere = NULL;
  (void)host;
  (void)out_plugin;
  *nowhere = 42;
  return NULL;
}
