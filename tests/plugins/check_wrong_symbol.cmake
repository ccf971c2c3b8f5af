# cmake -DTOOL=tessera -DDIR=<folder of zoo_wrong_symbol> -DWORK=<dir> -P check_wrong_symbol.cmake
#
# A codegen whose module lacks the region's function fails `tessera compile`
# (exit 1) with the plugin and region named, and writes no artifact: the
# function would otherwise be missing only at the artifact's first run.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/relu.tir "def @main(%x: f32[4]) -> f32[4] {\n  %0 = relu(%x) : f32[4]\n  return %0\n}\n")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env TESSERA_PLUGIN_PATH=${DIR}
          ${TOOL} compile ${WORK}/relu.tir --target zoo_wrong_symbol -o ${WORK}/relu.tsr
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(want "tessera compile: error: ${WORK}/relu.tir: region @tessera_module_zoo_wrong_symbol_0 (plugin 'zoo_wrong_symbol'): the plugin's codegen returned a module without the region's function: module 'zoo_wrong_symbol' of plugin 'zoo_wrong_symbol': function 'tessera_module_zoo_wrong_symbol_0': zoo_good: no function 'tessera_module_zoo_wrong_symbol_0' (the module has 'zoo_elsewhere')\n")
if(NOT rc EQUAL 1 OR NOT err STREQUAL want)
  message(FATAL_ERROR "exit ${rc}\ngot:  ${err}\nwant: ${want}\n${out}")
endif()
if(EXISTS ${WORK}/relu.tsr)
  message(FATAL_ERROR "an artifact was written")
endif()
