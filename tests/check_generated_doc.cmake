# cmake -DTOOL=<tessera> -DDOC=<docs/X.md> -DCOMMAND="<subcommand> --markdown" -P check_generated_doc.cmake
#
# Fails when a generated document differs from what the tool prints
# (docs/ops.md: `tessera ops --markdown`; docs/passes.md: `tessera passes --markdown`).
if(NOT DEFINED COMMAND)
  set(COMMAND "ops --markdown")
endif()
separate_arguments(args UNIX_COMMAND "${COMMAND}")
execute_process(COMMAND ${TOOL} ${args} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera ${COMMAND} failed (${rc})")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  get_filename_component(name ${DOC} NAME)
  message(FATAL_ERROR "${DOC} is stale: regenerate it with\n  tessera ${COMMAND} > docs/${name}")
endif()
