/*===- zoo/clash_plugin.c - Bundles a static library another plugin bundles too ===
 *
 * Built twice (zoo_clash_a with clash library version 1, zoo_clash_b with
 * version 2): both define clash_version(). Each plugin must call its own
 * copy, which tessera_add_plugin's hidden symbols and -Bsymbolic ensure.
 *
 *===----------------------------------------------------------------------===*/
#include "zoo_base.h"

#include <stdio.h>

int clash_version(void);

static tessera_plugin_t plugin;
static char description[64];

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, CLASH_PLUGIN_NAME);
  snprintf(description, sizeof description, "bundles clash library version %d", clash_version());
  plugin.description = description;
  *out_plugin = &plugin;
  return NULL;
}
