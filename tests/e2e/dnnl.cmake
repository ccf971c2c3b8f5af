# The dnnl plugin's end-to-end ctest (issue 7): tiny_cnn.tir and ResNet-18 /
# MobileNetV3-Small (make_models.py, 64x64, half width) compiled with
# --target dnnl, run in fresh processes, against the host-only artifacts and
# the reference interpreter.
add_test(NAME dnnl_e2e
  COMMAND ${TESSERA_ONNX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/check_dnnl_e2e.py
          --tessera $<TARGET_FILE:tessera> --source-dir ${PROJECT_SOURCE_DIR}
          --out ${CMAKE_CURRENT_BINARY_DIR}/e2e/dnnl)
set_tests_properties(dnnl_e2e PROPERTIES TIMEOUT 600)
