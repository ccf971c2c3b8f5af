# Fails when docs/onnx-support.md differs from `tessera onnx-support --markdown`.
execute_process(COMMAND ${TOOL} onnx-support --markdown OUTPUT_VARIABLE generated
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera onnx-support --markdown failed (${rc})")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${DOC} is stale: regenerate it with\n"
                      "  tessera onnx-support --markdown > docs/onnx-support.md")
endif()
