/*===- zoo/hook.c - zoo_hook: a whole-graph partition hook, no ops --------===
 *
 * Declares no op (an empty list) and partitions graphs itself: op nodes at
 * even positions go to region 0, the rest stay with the core. Two symbols
 * misbehave on purpose: "bad_regions" writes region -5 (the core must
 * refuse it) and "fail" returns an error. Also sets a codegen flag.
 *
 *===----------------------------------------------------------------------===*/
#include "zoo_base.h"

#include <string.h>

static tessera_plugin_status_t *hook_partition(void *state, const tessera_graph_t *graph,
                                               int64_t *out_region, size_t num_nodes) {
  size_t i;
  (void)state;
  if (strcmp(graph->symbol, "fail") == 0)
    return zoo_status(TESSERA_STATUS_INTERNAL, "zoo_hook: cannot partition 'fail'");
  for (i = 0; i < num_nodes; ++i)
    out_region[i] = i % 2 == 0 ? 0 : -1;
  if (num_nodes > 0 && strcmp(graph->symbol, "bad_regions") == 0)
    out_region[num_nodes - 1] = -5;
  return NULL;
}

static const char *const hook_ops[] = {NULL};
static tessera_checker_t hook_checker;
static tessera_codegen_t hook_codegen;
static tessera_plugin_t plugin;

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  zoo_describe(&plugin, "zoo_hook");
  hook_checker = zoo_checker;
  hook_checker.ops = hook_ops;
  hook_checker.partition = hook_partition;
  hook_codegen = zoo_codegen;
  hook_codegen.flags = TESSERA_CODEGEN_CONSTANTS_AS_INPUTS;
  plugin.checker = &hook_checker;
  plugin.codegen = &hook_codegen;
  *out_plugin = &plugin;
  return NULL;
}
