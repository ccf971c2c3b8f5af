# Fails when docs/ops.md differs from `tessera ops --markdown`.
execute_process(COMMAND ${TOOL} ops --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera ops --markdown failed (${rc})")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${DOC} is stale: regenerate it with\n  tessera ops --markdown > docs/ops.md")
endif()
