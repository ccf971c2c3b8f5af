/*===- zoo/zoo_base.c - The minimal valid plugin the zoo starts from ------===*/
#include "zoo_base.h"

#include <stdlib.h>
#include <string.h>

typedef struct zoo_owned_status {
  tessera_plugin_status_t status; /* first, so that the two pointers agree */
  char *message;
} zoo_owned_status_t;

static void zoo_release(tessera_plugin_status_t *status) {
  zoo_owned_status_t *owned = (zoo_owned_status_t *)status;
  free(owned->message);
  free(owned);
}

tessera_plugin_status_t *zoo_status(tessera_status_code_t code, const char *message) {
  size_t size = strlen(message) + 1;
  zoo_owned_status_t *owned = (zoo_owned_status_t *)malloc(sizeof *owned);
  if (!owned)
    return NULL;
  owned->message = (char *)malloc(size);
  if (!owned->message) {
    free(owned);
    return NULL;
  }
  memcpy(owned->message, message, size);
  owned->status.struct_size = sizeof(tessera_plugin_status_t);
  owned->status.code = code;
  owned->status.message = owned->message;
  owned->status.release = zoo_release;
  return &owned->status;
}

static bool zoo_check_op(void *state, const tessera_op_desc_t *op, char *reason,
                         size_t reason_size) {
  (void)state;
  (void)op;
  if (reason && reason_size > 0) {
    strncpy(reason, "zoo: this plugin takes nothing", reason_size - 1);
    reason[reason_size - 1] = '\0';
  }
  return false;
}

static tessera_plugin_status_t *zoo_compile(void *state, const tessera_graph_t *graph,
                                            tessera_module_t **out_module) {
  (void)state;
  (void)graph;
  (void)out_module;
  return zoo_status(TESSERA_STATUS_UNIMPLEMENTED, "zoo: this plugin compiles nothing");
}

static tessera_plugin_status_t *zoo_load(void *state, const void *data, size_t size,
                                         tessera_module_t **out_module) {
  (void)state;
  (void)data;
  (void)size;
  (void)out_module;
  return zoo_status(TESSERA_STATUS_UNIMPLEMENTED, "zoo: this plugin loads nothing");
}

static const char *const zoo_ops[] = {"relu", NULL};

const tessera_checker_t zoo_checker = {
    sizeof(tessera_checker_t), zoo_ops, NULL, 0, zoo_check_op, NULL, NULL, NULL, 0, NULL};
const tessera_codegen_t zoo_codegen = {sizeof(tessera_codegen_t), 0, zoo_compile};
const tessera_module_factory_t zoo_factory = {sizeof(tessera_module_factory_t), "zoo", zoo_load};
const tessera_module_factory_t *const zoo_factories[1] = {&zoo_factory};

void zoo_describe(tessera_plugin_t *plugin, const char *name) {
  memset(plugin, 0, sizeof *plugin);
  plugin->struct_size = sizeof *plugin;
  plugin->abi_major = TESSERA_PLUGIN_ABI_MAJOR;
  plugin->abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  plugin->name = name;
  plugin->version = "0.0.1";
  plugin->description = "a zoo plugin";
  plugin->checker = &zoo_checker;
  plugin->codegen = &zoo_codegen;
  plugin->module_factories = zoo_factories;
  plugin->num_module_factories = 1;
}
