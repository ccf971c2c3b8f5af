/*===- targets/tgt.c - Test targets with deterministic checkers -----------===
 *
 * One C99 source compiled into several partition test targets, selected by
 * a compile definition (TGT_VARIANT_<X>); tests/plugins/targets/CMakeLists.txt
 * builds them all into one folder that lit (TESSERA_PLUGIN_PATH) and the
 * unit tests (TESSERA_TARGETS_DIR) load.
 *
 *   tgt_a        add, multiply, relu, conv2d, dense; patterns
 *                conv_relu `relu(conv2d(*, const))` and
 *                dense_bias `add(dense(*, const), const)`; declines a
 *                multiply whose inputs differ in shape
 *                ("tgt_a: no broadcasting multiply")
 *   tgt_b        add, subtract, sigmoid, tanh, dense, relu, split; pattern
 *                swish `multiply(*, sigmoid(*))` and bias_sigmoid
 *                `sigmoid(add(*, const))`; declines a dense with
 *                more than 64 units ("tgt_b: dense units > 64") and an
 *                add whose inputs differ in shape ("tgt_b: no broadcasting
 *                add")
 *   tgt_picky    relu, add; declines any input of rank != 4
 *                ("tgt_picky: rank-4 tensors only"); pattern relu_add
 *                `relu(add(*, *))` whose every match it declines
 *                ("tgt_picky: no fusion today")
 *   tgt_hook     whole-graph hook, declares relu, sigmoid, tanh, multiply: takes the
 *                op nodes of those ops; a node joins the region of its
 *                first input when that input is taken, else opens a new
 *                region (so a diamond can form a cycle the core refuses)
 *   tgt_hook_bad whole-graph hook that claims every node, inputs included,
 *                in region 0 (the core must refuse it)
 *   tgt_prune    add, relu, multiply, dense, sigmoid; keep_region keeps
 *                regions with at least two op nodes
 *                ("tgt_prune: fewer than 2 ops")
 *   tgt_sym      relu, add, multiply over symbolic dims (ABI 1.4,
 *                TESSERA_CHECKER_SYMBOLIC_DIMS); declines an op with a
 *                symbolic dim of no upper bound, naming it ("tgt_sym: input
 *                0 dim 0 is N, which has no upper bound") and a multiply whose
 *                inputs' dims are not the same symbols ("tgt_sym: no
 *                broadcasting multiply")
 *
 * None compiles anything ("test target: no codegen"); each module factory
 * (type key = the plugin's name) refuses to load.
 *
 *===----------------------------------------------------------------------===*/
#include "tessera/c/plugin.h"
#include "zoo_base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TGT_EXPORT __attribute__((visibility("default")))
/* Helpers not every variant uses. */
#define TGT_MAYBE_UNUSED __attribute__((unused))

/*===-- The variants ------------------------------------------------------===*/

#if defined(TGT_VARIANT_A)
#define TGT_NAME "tgt_a"
static const char *const tgt_ops[] = {"add", "multiply", "relu", "conv2d", "dense", NULL};
static const tessera_pattern_t tgt_pat0 = {sizeof(tessera_pattern_t), "conv_relu",
                                           "relu(conv2d(*, const))"};
static const tessera_pattern_t tgt_pat1 = {sizeof(tessera_pattern_t), "dense_bias",
                                           "add(dense(*, const), const)"};
static const tessera_pattern_t *const tgt_patterns[] = {&tgt_pat0, &tgt_pat1};
#define TGT_PATTERNS tgt_patterns
#define TGT_NUM_PATTERNS 2
#elif defined(TGT_VARIANT_B)
#define TGT_NAME "tgt_b"
static const char *const tgt_ops[] = {"add",   "subtract", "sigmoid", "tanh",
                                      "dense", "relu",     "split",   NULL};
static const tessera_pattern_t tgt_pat0 = {sizeof(tessera_pattern_t), "swish",
                                           "multiply(*, sigmoid(*))"};
static const tessera_pattern_t tgt_pat1 = {sizeof(tessera_pattern_t), "bias_sigmoid",
                                           "sigmoid(add(*, const))"};
static const tessera_pattern_t *const tgt_patterns[] = {&tgt_pat0, &tgt_pat1};
#define TGT_PATTERNS tgt_patterns
#define TGT_NUM_PATTERNS 2
#elif defined(TGT_VARIANT_PICKY)
#define TGT_NAME "tgt_picky"
static const char *const tgt_ops[] = {"relu", "add", NULL};
static const tessera_pattern_t tgt_pat0 = {sizeof(tessera_pattern_t), "relu_add",
                                           "relu(add(*, *))"};
static const tessera_pattern_t *const tgt_patterns[] = {&tgt_pat0};
#define TGT_PATTERNS tgt_patterns
#define TGT_NUM_PATTERNS 1
#elif defined(TGT_VARIANT_HOOK)
#define TGT_NAME "tgt_hook"
#define TGT_HOOK 1
static const char *const tgt_ops[] = {"relu", "sigmoid", "tanh", "multiply", NULL};
#elif defined(TGT_VARIANT_HOOK_BAD)
#define TGT_NAME "tgt_hook_bad"
#define TGT_HOOK 2
static const char *const tgt_ops[] = {"relu", NULL};
#elif defined(TGT_VARIANT_PRUNE)
#define TGT_NAME "tgt_prune"
#define TGT_PRUNE 1
static const char *const tgt_ops[] = {"add", "relu", "multiply", "dense", "sigmoid", NULL};
#elif defined(TGT_VARIANT_SYM)
#define TGT_NAME "tgt_sym"
#define TGT_FLAGS TESSERA_CHECKER_SYMBOLIC_DIMS
static const char *const tgt_ops[] = {"relu", "add", "multiply", NULL};
#else
#error "define one TGT_VARIANT_<X>"
#endif

#ifndef TGT_FLAGS
#define TGT_FLAGS 0
#endif

#ifndef TGT_NUM_PATTERNS
#define TGT_PATTERNS NULL
#define TGT_NUM_PATTERNS 0
#endif

/*===-- Helpers -----------------------------------------------------------===*/

/* Statuses come from the zoo's helper (zoo_status, tests/plugins/zoo/zoo_base.c). */

TGT_MAYBE_UNUSED static bool tgt_decline(char *reason, size_t reason_size, const char *why) {
  if (reason && reason_size > 0) {
    strncpy(reason, why, reason_size - 1);
    reason[reason_size - 1] = '\0';
  }
  return false;
}

TGT_MAYBE_UNUSED static bool same_shape(const tessera_tensor_type_t *a, const tessera_tensor_type_t *b) {
  int32_t i;
  if (a->ndim != b->ndim)
    return false;
  for (i = 0; i < a->ndim; ++i) {
    if (a->shape[i] != b->shape[i])
      return false;
    /* ABI 1.4: two symbolic dims (-1) are equal when they are one symbol. */
    if (a->shape[i] == -1 && a->symbols[i] != b->symbols[i])
      return false;
  }
  return true;
}

/*===-- Checker -----------------------------------------------------------===*/

static bool tgt_check_op(void *state, const tessera_op_desc_t *op, char *reason,
                         size_t reason_size) {
  size_t i;
  (void)state;
  (void)i;
#if defined(TGT_VARIANT_SYM)
  for (i = 0; i < op->num_inputs; ++i) {
    const tessera_tensor_type_t *t = op->inputs[i];
    int32_t d;
    for (d = 0; t->symbols && d < t->ndim; ++d) {
      const tessera_symbol_t *s;
      if (t->symbols[d] < 0)
        continue;
      s = op->symbols[t->symbols[d]];
      if (s->hi < 0) {
        char why[256];
        snprintf(why, sizeof why, "tgt_sym: input %u dim %d is %s, which has no upper bound",
                 (unsigned)i, (int)d, s->name);
        return tgt_decline(reason, reason_size, why);
      }
    }
  }
  if (strcmp(op->op, "multiply") == 0 && op->num_inputs == 2 &&
      !same_shape(op->inputs[0], op->inputs[1]))
    return tgt_decline(reason, reason_size, "tgt_sym: no broadcasting multiply");
#elif defined(TGT_VARIANT_A)
  if (strcmp(op->op, "multiply") == 0 && op->num_inputs == 2 &&
      !same_shape(op->inputs[0], op->inputs[1]))
    return tgt_decline(reason, reason_size, "tgt_a: no broadcasting multiply");
#elif defined(TGT_VARIANT_B)
  if (strcmp(op->op, "add") == 0 && op->num_inputs == 2 &&
      !same_shape(op->inputs[0], op->inputs[1]))
    return tgt_decline(reason, reason_size, "tgt_b: no broadcasting add");
  if (strcmp(op->op, "dense") == 0 && op->num_outputs == 1 && op->outputs[0]->ndim > 0 &&
      op->outputs[0]->shape[op->outputs[0]->ndim - 1] > 64)
    return tgt_decline(reason, reason_size, "tgt_b: dense units > 64");
#elif defined(TGT_VARIANT_PICKY)
  for (i = 0; i < op->num_inputs; ++i)
    if (op->inputs[i]->ndim != 4)
      return tgt_decline(reason, reason_size, "tgt_picky: rank-4 tensors only");
#endif
  (void)op;
  (void)reason;
  (void)reason_size;
  return true;
}

#if defined(TGT_VARIANT_PICKY)
static bool tgt_check_pattern(void *state, const char *pattern,
                              const tessera_op_desc_t *const *ops, size_t num_ops, char *reason,
                              size_t reason_size) {
  (void)state;
  (void)pattern;
  (void)ops;
  (void)num_ops;
  return tgt_decline(reason, reason_size, "tgt_picky: no fusion today");
}
#define TGT_CHECK_PATTERN tgt_check_pattern
#else
#define TGT_CHECK_PATTERN NULL
#endif

/*===-- A small reader of the graph JSON's top-level nodes ----------------===*/

#if defined(TGT_HOOK) || defined(TGT_PRUNE)

/* What the hooks need of one top-level node. */
typedef struct tgt_node {
  char kind[16];
  char op[64];
  long first_input; /* node of the first input reference, or -1 */
} tgt_node_t;

typedef struct tgt_cursor {
  const char *p, *end;
} tgt_cursor_t;

static void tgt_ws(tgt_cursor_t *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r'))
    ++c->p;
}

static bool tgt_eat(tgt_cursor_t *c, char ch) {
  tgt_ws(c);
  if (c->p < c->end && *c->p == ch) {
    ++c->p;
    return true;
  }
  return false;
}

/* Reads a string (escapes kept raw, truncated to size); false when malformed. */
static bool tgt_string(tgt_cursor_t *c, char *buf, size_t size) {
  size_t n = 0;
  if (!tgt_eat(c, '"'))
    return false;
  while (c->p < c->end && *c->p != '"') {
    if (*c->p == '\\' && c->p + 1 < c->end) {
      if (n + 1 < size)
        buf[n++] = *c->p;
      ++c->p;
    }
    if (n + 1 < size)
      buf[n++] = *c->p;
    ++c->p;
  }
  if (size > 0)
    buf[n] = '\0';
  return tgt_eat(c, '"');
}

/* Skips one value of any kind. */
static bool tgt_skip(tgt_cursor_t *c) {
  char scratch[2];
  tgt_ws(c);
  if (c->p >= c->end)
    return false;
  if (*c->p == '"')
    return tgt_string(c, scratch, sizeof scratch);
  if (*c->p == '{' || *c->p == '[') {
    char close = *c->p == '{' ? '}' : ']';
    bool object = *c->p == '{';
    ++c->p;
    if (tgt_eat(c, close))
      return true;
    do {
      if (object && (!tgt_string(c, scratch, sizeof scratch) || !tgt_eat(c, ':')))
        return false;
      if (!tgt_skip(c))
        return false;
    } while (tgt_eat(c, ','));
    return tgt_eat(c, close);
  }
  while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']' && *c->p != ' ' &&
         *c->p != '\n')
    ++c->p;
  return true;
}

static bool tgt_read_node(tgt_cursor_t *c, tgt_node_t *node) {
  char key[32];
  memset(node, 0, sizeof *node);
  node->first_input = -1;
  if (!tgt_eat(c, '{'))
    return false;
  if (tgt_eat(c, '}'))
    return true;
  do {
    if (!tgt_string(c, key, sizeof key) || !tgt_eat(c, ':'))
      return false;
    if (strcmp(key, "kind") == 0) {
      if (!tgt_string(c, node->kind, sizeof node->kind))
        return false;
    } else if (strcmp(key, "op") == 0) {
      if (!tgt_string(c, node->op, sizeof node->op))
        return false;
    } else if (strcmp(key, "inputs") == 0) {
      tgt_cursor_t probe = *c;
      if (tgt_eat(&probe, '[') && tgt_eat(&probe, '[')) {
        tgt_ws(&probe);
        node->first_input = strtol(probe.p, NULL, 10);
      }
      if (!tgt_skip(c))
        return false;
    } else if (!tgt_skip(c)) {
      return false;
    }
  } while (tgt_eat(c, ','));
  return tgt_eat(c, '}');
}

/* The graph's top-level nodes (malloc'ed, *count of them), or NULL. */
static tgt_node_t *tgt_read_nodes(const tessera_graph_t *graph, size_t *count) {
  tgt_cursor_t c;
  char key[32];
  size_t cap = 16;
  tgt_node_t *nodes = (tgt_node_t *)malloc(cap * sizeof *nodes);
  *count = 0;
  c.p = graph->json;
  c.end = graph->json + graph->json_size;
  if (!nodes || !tgt_eat(&c, '{'))
    goto fail;
  do {
    if (!tgt_string(&c, key, sizeof key) || !tgt_eat(&c, ':'))
      goto fail;
    if (strcmp(key, "nodes") != 0) {
      if (!tgt_skip(&c))
        goto fail;
      continue;
    }
    if (!tgt_eat(&c, '['))
      goto fail;
    if (tgt_eat(&c, ']'))
      return nodes;
    do {
      if (*count == cap) {
        tgt_node_t *grown = (tgt_node_t *)realloc(nodes, 2 * cap * sizeof *nodes);
        if (!grown)
          goto fail;
        nodes = grown;
        cap *= 2;
      }
      if (!tgt_read_node(&c, &nodes[*count]))
        goto fail;
      ++*count;
    } while (tgt_eat(&c, ','));
    if (!tgt_eat(&c, ']'))
      goto fail;
    return nodes;
  } while (tgt_eat(&c, ','));
fail:
  free(nodes);
  return NULL;
}

TGT_MAYBE_UNUSED static bool tgt_is_op_node(const tgt_node_t *n) {
  return strcmp(n->kind, "op") == 0 || strcmp(n->kind, "composite") == 0;
}

#endif

/*===-- Whole-graph hooks -------------------------------------------------===*/

#if defined(TGT_HOOK)
TGT_MAYBE_UNUSED static bool tgt_takes(const char *op) {
  size_t i;
  for (i = 0; tgt_ops[i]; ++i)
    if (strcmp(tgt_ops[i], op) == 0)
      return true;
  return false;
}

static tessera_plugin_status_t *tgt_partition(void *state, const tessera_graph_t *graph,
                                              int64_t *out_region, size_t num_nodes) {
  size_t count = 0, i;
  int64_t next = 0;
  tgt_node_t *nodes = tgt_read_nodes(graph, &count);
  (void)state;
  (void)next;
  if (!nodes)
    return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT, TGT_NAME ": cannot read the graph JSON");
  if (count != num_nodes) {
    free(nodes);
    return zoo_status(TESSERA_STATUS_INVALID_ARGUMENT, TGT_NAME ": node count mismatch");
  }
  for (i = 0; i < num_nodes; ++i) {
#if TGT_HOOK == 2
    out_region[i] = 0;
#else
    long first = nodes[i].first_input;
    out_region[i] = -1;
    if (!tgt_is_op_node(&nodes[i]) || !tgt_takes(nodes[i].op))
      continue;
    if (first >= 0 && (size_t)first < i && out_region[first] >= 0)
      out_region[i] = out_region[first];
    else
      out_region[i] = next++;
#endif
  }
  free(nodes);
  return NULL;
}
#define TGT_PARTITION tgt_partition
#else
#define TGT_PARTITION NULL
#endif

#if defined(TGT_PRUNE)
static bool tgt_keep_region(void *state, const tessera_graph_t *region, char *reason,
                            size_t reason_size) {
  size_t count = 0, ops = 0, i;
  tgt_node_t *nodes = tgt_read_nodes(region, &count);
  (void)state;
  if (!nodes)
    return tgt_decline(reason, reason_size, "tgt_prune: cannot read the region JSON");
  for (i = 0; i < count; ++i)
    ops += tgt_is_op_node(&nodes[i]) ? 1 : 0;
  free(nodes);
  if (ops < 2)
    return tgt_decline(reason, reason_size, "tgt_prune: fewer than 2 ops");
  return true;
}
#define TGT_KEEP_REGION tgt_keep_region
#else
#define TGT_KEEP_REGION NULL
#endif

/*===-- Codegen, factory, descriptor --------------------------------------===*/

static tessera_plugin_status_t *tgt_compile(void *state, const tessera_graph_t *graph,
                                            tessera_module_t **out_module) {
  (void)state;
  (void)graph;
  (void)out_module;
  return zoo_status(TESSERA_STATUS_UNIMPLEMENTED, "test target: no codegen");
}

static tessera_plugin_status_t *tgt_load(void *state, const void *data, size_t size,
                                         tessera_module_t **out_module) {
  (void)state;
  (void)data;
  (void)size;
  (void)out_module;
  return zoo_status(TESSERA_STATUS_UNIMPLEMENTED, "test target: no modules");
}

static const tessera_checker_t tgt_checker = {
    sizeof(tessera_checker_t), tgt_ops,       TGT_PATTERNS,   TGT_NUM_PATTERNS,
    tgt_check_op,              TGT_CHECK_PATTERN, TGT_PARTITION, TGT_KEEP_REGION, TGT_FLAGS, NULL};
static const tessera_codegen_t tgt_codegen = {sizeof(tessera_codegen_t), 0, tgt_compile};
static const tessera_module_factory_t tgt_factory = {sizeof(tessera_module_factory_t), TGT_NAME,
                                                     tgt_load};
static const tessera_module_factory_t *const tgt_factories[1] = {&tgt_factory};

static const tessera_plugin_t tgt_plugin = {
    sizeof(tessera_plugin_t), TESSERA_PLUGIN_ABI_MAJOR, TESSERA_PLUGIN_ABI_MINOR,
    TGT_NAME,                 "0.0.1",                  "partition test target " TGT_NAME,
    NULL,                     &tgt_checker,             &tgt_codegen,
    tgt_factories,            1,  NULL};

TGT_EXPORT tessera_plugin_status_t *tessera_plugin_query(const tessera_host_t *host,
                                                         const tessera_plugin_t **out_plugin) {
  (void)host;
  *out_plugin = &tgt_plugin;
  return NULL;
}
