//===- support/link_check_main.cpp - The layer link checks' program -------===//
//
// Linked with every object of one compiler layer and the layers below it
// (core/CMakeLists.txt, link_check_<layer>): the link fails when the layer
// calls into a higher one. It never runs.
//
//===----------------------------------------------------------------------===//
int main() { return 0; }
