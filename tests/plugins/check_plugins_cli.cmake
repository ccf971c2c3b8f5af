# `tessera plugins --verbose` with TESSERA_PLUGIN_PATH on the zoo: the
# listing and the rejections contain the expected lines.
#   cmake -DTOOL=<tessera> -DZOO=<zoo folder> -P check_plugins_cli.cmake
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env TESSERA_PLUGIN_PATH=${ZOO}:${ZOO}/missing ${TOOL} plugins --verbose
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera plugins --verbose exited with ${rc}:\n${out}${err}")
endif()

set(expected
  "zoo_good 1.0.0 (plugin ABI 1.6)\n  path: ${ZOO}/libtessera_zoo_good.so\n"
  "  description: the zoo's working C plugin: relu on f32\n  ops: relu\n"
  "  patterns:\n    double_relu: relu(relu(*))\n  module types: zoo_good\n"
  "zoo_hook 0.0.1 (plugin ABI 1.6)"
  "  ops: (none)\n"
  "search path:\n  1. ${ZOO}  (TESSERA_PLUGIN_PATH entry 1)\n"
  "  2. ${ZOO}/missing  (TESSERA_PLUGIN_PATH entry 2)\n"
  "rejected candidates:\n"
  "  ${ZOO}/missing: no such file or folder\n"
  "  ${ZOO}/libzoo_text.so: not a shared object (no ELF header)\n"
  "  ${ZOO}/libzoo_segv.so: crashed while loading (SIGSEGV)\n"
  "  ${ZOO}/libzoo_ctor_abort.so: crashed while loading (SIGABRT)\n"
  "  ${ZOO}/libzoo_dup_b.so: duplicate plugin name 'zoo_dup': already loaded from ${ZOO}/libzoo_dup_a.so (same folder, earlier in name order: TESSERA_PLUGIN_PATH entry 1)\n"
  "  ${ZOO}/libzoo_abi3.so: built against plugin ABI 3.0, this core speaks ABI 1.x\n")
foreach(line IN LISTS expected)
  string(FIND "${out}" "${line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected in the output of tessera plugins --verbose:\n${line}\n"
                        "--- output:\n${out}--- stderr:\n${err}")
  endif()
endforeach()
message(STATUS "tessera plugins --verbose:\n${out}")
