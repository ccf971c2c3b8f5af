//===- tests/plugins/plugin_path_app.cpp - An app that sets the plugin path ---===//
//
//   plugin_path_app ARTIFACT PLUGIN_DIR
//
// Links libtessera_runtime alone. Sets the plugin search path from code (in
// place of TESSERA_PLUGIN_PATH, which the test points at a plugin that would
// refuse the artifact), loads and runs the artifact, then checks that the
// path cannot change once plugins were discovered. Prints what it saw;
// check_versions.cmake pins it.
//
//===----------------------------------------------------------------------===//
#include "tessera/runtime.hpp"

#include <algorithm>
#include <iostream>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: plugin_path_app ARTIFACT PLUGIN_DIR\n";
    return 2;
  }
  try {
    tessera::rt::setPluginPath(argv[2]);
    tessera::rt::Model model = tessera::rt::Model::load(argv[1]);
    tessera::rt::Session session(model);
    tessera::rt::Tensor x = tessera::rt::Tensor::zeros(model.input(0));
    const float values[4] = {-1.0f, 2.0f, -3.0f, 4.0f};
    std::copy(values, values + 4, x.data<float>());
    session.setInput(0, x);
    session.run();
    const auto *y = static_cast<const float *>(session.output(0).data);
    std::cout << "ran: " << y[0] << " " << y[1] << " " << y[2] << " " << y[3] << "\n";
  } catch (const tessera::rt::Error &e) {
    std::cout << "error: " << e.what() << "\n";
    return 1;
  }
  tessera_status_t *late = tessera_set_plugin_path(argv[2]);
  std::cout << "late: " << (late ? tessera_status_message(late) : "accepted") << "\n";
  bool refused = late && tessera_status_code(late) == TESSERA_STATUS_FAILED_PRECONDITION;
  tessera_status_free(late);
  return refused ? 0 : 1;
}
