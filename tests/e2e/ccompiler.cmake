# The ccompiler plugin end to end (issue 8; included from tests/CMakeLists.txt):
# tessera compile --target ccompiler (and ccompiler,json: alternating regions)
# on tiny_cnn.tir, a mixed model, the ONNX CNN and a small MobileNetV3, run in
# fresh processes against the interpreter / host / NumPy; inspect --source;
# running the artifact with no C compiler around.
add_test(NAME ccompiler_e2e
  COMMAND ${TESSERA_ONNX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/check_ccompiler_e2e.py
          --tessera $<TARGET_FILE:tessera> --source-dir ${PROJECT_SOURCE_DIR}
          --out ${CMAKE_CURRENT_BINARY_DIR}/e2e/ccompiler)
set_tests_properties(ccompiler_e2e PROPERTIES TIMEOUT 600)
