/*===- zoo/dep.c - The library zoo_missing_dep needs (built out of its reach) ===*/
__attribute__((visibility("default"))) int zoo_dep_version(void) {
  return 0;
}
