/*===- zoo/clash_lib.c - A tiny static library, built as version 1 and 2 ===*/
int clash_version(void);

int clash_version(void) {
  return CLASH_LIB_VERSION;
}
