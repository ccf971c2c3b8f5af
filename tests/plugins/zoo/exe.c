/*===- zoo/exe.c - An executable named like a plugin (libzoo_exe*.so) ===*/
int main(void) {
  return 0;
}
