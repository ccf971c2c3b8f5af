# cmake -DTOOL=tessera -DAPP=plugin_path_app -DZOO=<zoo/versions> -DSHIPPED=<plugin folder> -DWORK=<dir>
#       -P check_versions.cmake
#
# Loading an artifact with another version of its plugin than the one that
# compiled it: warned with both versions when the plugin's rule (or, without
# one, its major version) admits it, refused with both versions otherwise.
# A plugin that shadows a shipped one is listed as such and warned about
# when used.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(relu ${WORK}/relu.tir)
file(WRITE ${relu} "def @main(%x: f32[4]) -> f32[4] {\n  %0 = relu(%x) : f32[4]\n  return %0\n}\n")

# run(<name> <plugin path> <exit status> <args> <text expected in stdout+stderr>...)
function(run name path want_rc args)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env TESSERA_PLUGIN_PATH=${path} ${TOOL} ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL want_rc)
    message(FATAL_ERROR "${name}: exit ${rc}, want ${want_rc}\n${out}${err}")
  endif()
  foreach(text IN LISTS ARGN)
    string(FIND "${out}${err}" "${text}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${name}: expected:\n${text}\n--- got:\n${out}${err}")
    endif()
  endforeach()
endfunction()

run(compile ${ZOO}/base 0 "compile;${relu};--target;zoo_good;-o;${WORK}/relu.tsr"
  "1 plugin step")
run(same-version ${ZOO}/base 0 "run;${WORK}/relu.tsr")

set(lib libtessera_zoo_version)
run(newer-minor ${ZOO}/minor 0 "run;${WORK}/relu.tsr"
  "plugin 'zoo_good': the artifact's module was compiled with version 1.0.0; loading it with version 1.1.0 (${ZOO}/minor/${lib}_minor.so), which loads modules of versions ^1 (its own major version: it declares no rule)")
run(other-major ${ZOO}/major 1 "run;${WORK}/relu.tsr"
  "tessera run: error: ${WORK}/relu.tsr: plugin 'zoo_good': the module was compiled with version 1.0.0; the loaded plugin is version 2.0.0 (${ZOO}/major/${lib}_major.so), which loads modules of versions ^2 (its own major version: it declares no rule) only: recompile the model, or put version 1.0.0 of 'zoo_good' on the plugin search path\n")
run(declared-range ${ZOO}/ranged 0 "run;${WORK}/relu.tsr"
  "loading it with version 2.0.0 (${ZOO}/ranged/${lib}_ranged.so), which loads modules of versions >=1.0 <3\n")
run(bad-rule ${ZOO}/badrule 0 "plugins;--verbose"
  "${ZOO}/badrule/${lib}_badrule.so: invalid compatible_versions '>=x': 'x' after '>=' is not a version (MAJOR[.MINOR[.PATCH]])")

# An app sets the path from code, over a TESSERA_PLUGIN_PATH that would
# refuse the artifact; the path is fixed once plugins were discovered.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env TESSERA_PLUGIN_PATH=${ZOO}/major ${APP} ${WORK}/relu.tsr ${ZOO}/base
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
set(want "ran: 0 2 0 4\nlate: the plugin search path cannot change: plugins were already discovered (at the first model load or compile); set it before that\n")
if(NOT rc EQUAL 0 OR NOT out STREQUAL want)
  message(FATAL_ERROR "plugin_path_app: exit ${rc}\ngot:  ${out}${err}\nwant: ${want}")
endif()

# A copy of the shipped json plugin earlier in the search path.
file(MAKE_DIRECTORY ${WORK}/shadow)
file(COPY ${SHIPPED}/libtessera_json.so DESTINATION ${WORK}/shadow)
run(shadow-listed ${WORK}/shadow 0 "plugins"
  "json 1.0.0 (plugin ABI 1.6)\n  path: ${WORK}/shadow/libtessera_json.so\n  shadows the shipped plugin: ${SHIPPED}/libtessera_json.so\n")
run(shadow-used ${WORK}/shadow 0 "partition;${relu};--target;json"
  "plugin 'json' 1.0.0 is ${WORK}/shadow/libtessera_json.so, which shadows the shipped plugin ${SHIPPED}/libtessera_json.so")
