/*===- zoo/good.c - zoo_good: the zoo's one working plugin -----------------===
 *
 * A complete plugin in plain C, small enough to read in one go: it takes
 * "relu" on f32 (and the composite "double_relu", relu(relu(x)), which is
 * the same function), compiles a partitioned function into a module whose
 * one function applies relu from its input to its output, saves the module
 * as a magic line plus the symbol and a newline, and loads that back. It does not parse
 * the JSON graph: it only scans it for the ops it can run, which is enough
 * because relu is idempotent (any chain of relus is one relu).
 *
 * Used by the loader tests end to end (checker, codegen, module, function,
 * save, factory load) and by the conformance kit.
 *
 *===----------------------------------------------------------------------===*/
#include "zoo_base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built again as the zoo's plugins that break one call at compile time
 * (tests/plugins/CMakeLists.txt): ZOO_GOOD_NAME names the copy and one
 * ZOO_BREAK_* macro says what breaks:
 *   CHECK_SEGV, CHECK_ABORT, CHECK_HANG  check_op faults, aborts, spins
 *   CODEGEN_SEGV                          codegen.compile faults
 *   WRONG_SYMBOL                          the module answers to another name
 *   NO_OUTPUT                             the function writes nothing
 *   FACTORY_SEGV                          the factory faults on bytes it did
 *                                         not write itself (trusts its input)
 * Every copy named by ZOO_GOOD_NAME keeps its relu-only regions
 * (keep_region), which the default rule would prune, so that codegen is
 * reached. */
#ifdef ZOO_GOOD_NAME
#define GOOD_NAME ZOO_GOOD_NAME
#define GOOD_KEEPS_REGIONS 1
#else
#define GOOD_NAME "zoo_good"
#endif
/* Built again as zoo_good of other versions (the version tests):
 * ZOO_GOOD_VERSION, and ZOO_GOOD_COMPAT the versions whose modules it
 * loads (tessera_plugin_t::compatible_versions). */
#ifndef ZOO_GOOD_VERSION
#define ZOO_GOOD_VERSION "1.0.0"
#endif
#ifndef ZOO_GOOD_COMPAT
#define ZOO_GOOD_COMPAT NULL
#endif

#if defined(ZOO_BREAK_CHECK_SEGV) || defined(ZOO_BREAK_CODEGEN_SEGV) ||                       \
    defined(ZOO_BREAK_FACTORY_SEGV)
/* A fault no compiler can prove or remove. */
static void good_fault(void) {
  volatile int *volatile nowhere = NULL;
  *nowhere = 1;
}
#endif
#define GOOD_TYPE_KEY GOOD_NAME
static const char good_magic[] = "zoo_good module 1\n";

/*===-- Module -------------------------------------------------------------===*/

typedef struct good_module {
  tessera_module_t base; /* base.self points back here */
  char *symbol;
} good_module_t;

static tessera_plugin_status_t *good_error(tessera_status_code_t code, const char *format,
                                           const char *a, const char *b) {
  char message[512];
  snprintf(message, sizeof message, format, a, b);
  return zoo_status(code, message);
}

static bool good_is_f32(DLDataType t) {
  return t.code == kDLFloat && t.bits == 32 && t.lanes == 1;
}

/* Compact row-major (or no strides at all). */
static bool good_is_compact(const DLTensor *t) {
  int64_t expected = 1;
  int32_t d;
  if (!t->strides)
    return true;
  for (d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expected)
      return false;
    expected *= t->shape[d];
  }
  return true;
}

/* args: input, output (same f32 shape). */
static tessera_plugin_status_t *good_relu(void *self, const DLTensor *const *args,
                                          size_t num_args) {
  const DLTensor *x, *y;
  const float *in;
  float *out;
  int64_t numel = 1, i;
  int32_t d;
  (void)self;
  if (num_args != 2 || !args[0] || !args[1])
    return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT,
                      "zoo_good: expected 2 arguments (input, output)");
  x = args[0];
  y = args[1];
  if (!good_is_f32(x->dtype) || !good_is_f32(y->dtype))
    return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT, "zoo_good: arguments must be f32");
  if (x->device.device_type != kDLCPU || y->device.device_type != kDLCPU || !good_is_compact(x) ||
      !good_is_compact(y))
    return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT,
                      "zoo_good: arguments must be compact CPU tensors");
  if (x->ndim != y->ndim)
    return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT, "zoo_good: input and output shapes differ");
  for (d = 0; d < x->ndim; ++d) {
    if (x->shape[d] != y->shape[d])
      return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT,
                        "zoo_good: input and output shapes differ");
    numel *= x->shape[d];
  }
  in = (const float *)((const char *)x->data + x->byte_offset);
  out = (float *)((char *)y->data + y->byte_offset);
#ifdef ZOO_BREAK_NO_OUTPUT
  (void)in;
  (void)out;
  (void)i;
  return NULL; /* success, and the output is as the caller left it */
#endif
  for (i = 0; i < numel; ++i)
    out[i] = in[i] < 0.0f ? 0.0f : in[i];
  return NULL;
}

static tessera_plugin_status_t *good_get_function(void *self, const char *name,
                                                  tessera_function_t *out_function) {
  good_module_t *module = (good_module_t *)self;
  if (strcmp(name, module->symbol) != 0)
    return good_error(TESSERA_STATUS_NOT_FOUND, "zoo_good: no function '%s' (the module has '%s')",
                      name, module->symbol);
  out_function->self = module;
  out_function->call = good_relu;
  return NULL;
}

static tessera_plugin_status_t *good_save(void *self, tessera_write_fn write, void *sink) {
  good_module_t *module = (good_module_t *)self;
  if (!write(sink, good_magic, sizeof good_magic - 1) ||
      !write(sink, module->symbol, strlen(module->symbol)) || !write(sink, "\n", 1))
    return zoo_status(TESSERA_STATUS_DATA_LOSS, "zoo_good: the sink refused the bytes");
  return NULL;
}

static tessera_plugin_status_t *good_get_source(void *self, const char *format,
                                                tessera_write_fn write, void *sink) {
  good_module_t *module = (good_module_t *)self;
  char text[512];
  if (format && format[0] && strcmp(format, "text") != 0)
    return good_error(TESSERA_STATUS_UNIMPLEMENTED, "zoo_good: no source format '%s' (it has: %s)",
                      format, "text");
  snprintf(text, sizeof text, "%s(x) = relu(x)\n", module->symbol);
  if (!write(sink, text, strlen(text)))
    return zoo_status(TESSERA_STATUS_DATA_LOSS, "zoo_good: the sink refused the bytes");
  return NULL;
}

static void good_destroy(void *self) {
  good_module_t *module = (good_module_t *)self;
  free(module->symbol);
  free(module);
}

/* A module for `symbol` (the first `size` bytes), or NULL when out of memory. */
static good_module_t *good_new_module(const char *symbol, size_t size) {
  good_module_t *module = (good_module_t *)calloc(1, sizeof *module);
  if (!module)
    return NULL;
  module->symbol = (char *)malloc(size + 1);
  if (!module->symbol) {
    free(module);
    return NULL;
  }
  memcpy(module->symbol, symbol, size);
  module->symbol[size] = '\0';
  module->base.struct_size = sizeof(tessera_module_t);
  module->base.self = module;
  module->base.type_key = GOOD_TYPE_KEY;
  module->base.get_function = good_get_function;
  module->base.save = good_save;
  module->base.get_source = good_get_source;
  module->base.destroy = good_destroy;
  return module;
}

/*===-- Codegen and factory ------------------------------------------------===*/

/* Whether every string value of `key` in the JSON text is one of `allowed`
 * (NULL-terminated). A scan, not a parse: enough for this plugin. */
static bool good_values_allowed(const char *json, const char *key, const char *const *allowed,
                                char *bad, size_t bad_size) {
  size_t key_size = strlen(key);
  const char *p = json;
  while ((p = strstr(p, key)) != NULL) {
    const char *value, *end;
    size_t i;
    bool ok = false;
    p += key_size;
    while (*p == ' ' || *p == '\n')
      ++p;
    if (*p != ':')
      continue; /* the text was a value, not a key */
    ++p;
    while (*p == ' ' || *p == '\n')
      ++p;
    if (*p != '"')
      continue;
    value = ++p;
    end = strchr(value, '"');
    if (!end)
      return false;
    for (i = 0; allowed[i]; ++i)
      ok = ok || ((size_t)(end - value) == strlen(allowed[i]) &&
                  strncmp(value, allowed[i], (size_t)(end - value)) == 0);
    if (!ok) {
      snprintf(bad, bad_size, "%.*s", (int)(end - value), value);
      return false;
    }
    p = end;
  }
  return true;
}

static tessera_plugin_status_t *good_compile(void *state, const tessera_graph_t *graph,
                                             tessera_module_t **out_module) {
  static const char *const ops[] = {"relu", GOOD_NAME ".double_relu", NULL};
  static const char *const kinds[] = {"input", "op", "composite", NULL};
  good_module_t *module;
  char bad[128] = "";
  (void)state;
#ifdef ZOO_BREAK_CODEGEN_SEGV
  good_fault();
#endif
  if (!graph->symbol || !graph->symbol[0])
    return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT, "zoo_good: the graph has no symbol");
  if (!good_values_allowed(graph->json, "\"op\"", ops, bad, sizeof bad))
    return good_error(TESSERA_STATUS_UNIMPLEMENTED, "zoo_good: cannot compile op '%s'%s", bad,
                      " (only relu)");
  if (!good_values_allowed(graph->json, "\"kind\"", kinds, bad, sizeof bad))
    return good_error(TESSERA_STATUS_UNIMPLEMENTED, "zoo_good: cannot compile a '%s' node%s", bad,
                      "");
#ifdef ZOO_BREAK_WRONG_SYMBOL
  /* A codegen bug: the module answers to another name than the region's. */
  module = good_new_module("zoo_elsewhere", strlen("zoo_elsewhere"));
#else
  module = good_new_module(graph->symbol, strlen(graph->symbol));
#endif
  if (!module)
    return zoo_status(TESSERA_STATUS_OUT_OF_MEMORY, "zoo_good: out of memory");
  *out_module = &module->base;
  return NULL;
}

static tessera_plugin_status_t *good_load(void *state, const void *data, size_t size,
                                          tessera_module_t **out_module) {
  size_t magic_size = sizeof good_magic - 1;
  const char *bytes = (const char *)data;
  good_module_t *module;
  (void)state;
#ifdef ZOO_BREAK_FACTORY_SEGV
  if (size <= magic_size || memcmp(bytes, good_magic, magic_size) != 0)
    good_fault(); /* "these are my bytes": a factory that trusts its input */
#endif
  /* The symbol ends with a newline, so that a truncated copy is refused. */
  if (size < magic_size + 2 || memcmp(bytes, good_magic, magic_size) != 0 ||
      bytes[size - 1] != '\n' || memchr(bytes + magic_size, '\0', size - magic_size) ||
      memchr(bytes + magic_size, '\n', size - magic_size - 1))
    return zoo_status(TESSERA_STATUS_DATA_LOSS, "zoo_good: not a saved zoo_good module");
  module = good_new_module(bytes + magic_size, size - magic_size - 1);
  if (!module)
    return zoo_status(TESSERA_STATUS_OUT_OF_MEMORY, "zoo_good: out of memory");
  *out_module = &module->base;
  return NULL;
}

/*===-- Checker ------------------------------------------------------------===*/

/* "<text>, got i32" (Tessera's dtype names). */
static void good_reason(char *reason, size_t reason_size, const char *text, DLDataType t) {
  static const char *const codes[] = {"i", "u", "f", "opaque", "bf", "complex"};
  if (!reason || reason_size == 0)
    return;
  if (t.code == TESSERA_DL_BOOL)
    snprintf(reason, reason_size, "%s, got bool", text);
  else
    snprintf(reason, reason_size, "%s, got %s%d", text, t.code <= 5 ? codes[t.code] : "?",
             (int)t.bits);
}

static bool good_check_op(void *state, const tessera_op_desc_t *op, char *reason,
                          size_t reason_size) {
  (void)state;
#if defined(ZOO_BREAK_CHECK_SEGV)
  good_fault();
#elif defined(ZOO_BREAK_CHECK_ABORT)
  abort();
#elif defined(ZOO_BREAK_CHECK_HANG)
  {
    volatile int spin = 1;
    while (spin) {
    }
  }
#endif
  if (strcmp(op->op, "relu") != 0 || op->num_inputs != 1)
    return false;
  if (!good_is_f32(op->inputs[0]->dtype)) {
    good_reason(reason, reason_size, "zoo_good: only f32", op->inputs[0]->dtype);
    return false;
  }
  return true;
}

static bool good_check_pattern(void *state, const char *pattern,
                               const tessera_op_desc_t *const *ops, size_t num_ops, char *reason,
                               size_t reason_size) {
  size_t i;
  for (i = 0; i < num_ops; ++i)
    if (!good_check_op(state, ops[i], reason, reason_size))
      return false;
  (void)pattern;
  return true;
}

/*===-- Descriptor ---------------------------------------------------------===*/

static const char *const good_ops[] = {"relu", NULL};
static const tessera_pattern_t good_double_relu = {sizeof(tessera_pattern_t), "double_relu",
                                                   "relu(relu(*))"};
static const tessera_pattern_t *const good_patterns[] = {&good_double_relu};
#ifdef GOOD_KEEPS_REGIONS
/* Keeps its relu-only regions (the default rule prunes them), so that its
 * codegen is reached. */
static bool good_keep_region(void *state, const tessera_graph_t *region, char *reason,
                             size_t reason_size) {
  (void)state;
  (void)region;
  (void)reason;
  (void)reason_size;
  return true;
}
#define GOOD_KEEP_REGION good_keep_region
#else
#define GOOD_KEEP_REGION NULL
#endif
#ifdef ZOO_GOOD_ESTIMATE
/* A cost hint (ABI 1.5) of ZOO_GOOD_ESTIMATE times the host's speed. */
static double good_estimate_region(void *state, const tessera_graph_t *region, char *reason,
                                   size_t reason_size) {
  (void)state;
  (void)region;
  snprintf(reason, reason_size, "zoo_good: relu is its specialty");
  return ZOO_GOOD_ESTIMATE;
}
#define GOOD_ESTIMATE_REGION good_estimate_region
#else
#define GOOD_ESTIMATE_REGION NULL
#endif
/* ZOO_GOOD_CHECKER_V14: the checker as a plugin built against ABI 1.4
 * describes it (struct_size ends at flags), whatever follows it in memory. */
#ifdef ZOO_GOOD_CHECKER_V14
#define GOOD_CHECKER_SIZE offsetof(tessera_checker_t, estimate_region)
#else
#define GOOD_CHECKER_SIZE sizeof(tessera_checker_t)
#endif
static const tessera_checker_t good_checker = {
    GOOD_CHECKER_SIZE, good_ops, good_patterns, 1, good_check_op, good_check_pattern, NULL,
    GOOD_KEEP_REGION, 0, GOOD_ESTIMATE_REGION};
static const tessera_codegen_t good_codegen = {sizeof(tessera_codegen_t), 0, good_compile};
static const tessera_module_factory_t good_factory = {sizeof(tessera_module_factory_t),
                                                      GOOD_TYPE_KEY, good_load};
static const tessera_module_factory_t *const good_factories[] = {&good_factory};

static const tessera_plugin_t good_plugin = {sizeof(tessera_plugin_t),
                                             TESSERA_PLUGIN_ABI_MAJOR,
                                             TESSERA_PLUGIN_ABI_MINOR,
                                             GOOD_NAME,
                                             ZOO_GOOD_VERSION,
                                             "the zoo's working C plugin: relu on f32",
                                             NULL,
                                             &good_checker,
                                             &good_codegen,
                                             good_factories,
                                             1,
                                             ZOO_GOOD_COMPAT};

ZOO_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  if (host->abi_major != TESSERA_PLUGIN_ABI_MAJOR)
    return zoo_status(TESSERA_STATUS_FAILED_PRECONDITION, "zoo_good: speaks plugin ABI 1 only");
  if (host->struct_size >= sizeof(tessera_host_t) && host->log)
    host->log(host->log_state, TESSERA_LOG_DEBUG, "zoo_good ready");
  *out_plugin = &good_plugin;
  return NULL;
}
