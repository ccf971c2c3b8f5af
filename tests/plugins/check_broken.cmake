# cmake -DTOOL=tessera -DOPT=tessera-opt -DZOO=<zoo/broken> -DLIAR=<libtessera_kit_liar.so> -DWORK=<dir>
#       -P check_broken.cmake
#
# The zoo's plugins that break one compile-time call each (zoo/good.c) run
# through `tessera partition`, `compile` and `plugin-check`: every tool
# ends with its own exit status and a message naming the plugin, the call
# and the op or region; none dies with the plugin. Messages are pinned
# whole.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(relu ${WORK}/relu.tir)
file(WRITE ${relu} "def @main(%x: f32[4]) -> f32[4] {\n  %0 = relu(%x) : f32[4]\n  return %0\n}\n")

# run(<name> <exit status> <stderr or "">, <stdout lines...>): runs the
# tool (arguments in ARGS, the plugin path in PATH_ENV) and checks its exit
# status, its whole stderr, and that each line appears in its stdout.
function(run name want_rc want_err)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env TESSERA_PLUGIN_PATH=${PATH_ENV} ${TOOL} ${ARGS}
    WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    TIMEOUT 120)
  if(NOT rc EQUAL want_rc)
    message(FATAL_ERROR "${name}: exit ${rc}, want ${want_rc}\n${out}${err}")
  endif()
  if(NOT err STREQUAL want_err)
    message(FATAL_ERROR "${name}: stderr\ngot:  ${err}\nwant: ${want_err}")
  endif()
  foreach(line IN LISTS ARGN)
    string(FIND "${out}" "${line}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${name}: expected in stdout:\n${line}\n--- stdout:\n${out}")
    endif()
  endforeach()
endfunction()

# The checker crashes, aborts, hangs: partition and compile fail naming the
# op; plugin-check fails every case naming the step, and goes on.
foreach(case "check_segv;crashed (SIGSEGV)" "check_abort;crashed (SIGABRT)"
             "check_hang;did not finish within 1 s (killed)")
  list(GET case 0 b)
  list(GET case 1 how)
  set(PATH_ENV ${ZOO}/${b})
  set(msg "plugin 'zoo_${b}' ${how} in check_op for relu '0'")
  set(ARGS partition ${relu} --target zoo_${b} --plugin-timeout 1)
  run(${b}-partition 1 "tessera partition: error: ${relu}: ${msg}\n")
  set(ARGS compile ${relu} --target zoo_${b} --plugin-timeout 1 -o ${WORK}/${b}.tsr)
  run(${b}-compile 1 "tessera compile: error: ${relu}: ${msg}\n")
  set(ARGS plugin-check ${ZOO}/${b}/libtessera_zoo_${b}.so --plugin-timeout 1)
  run(${b}-plugin-check 1 ""
    "FAIL relu f32[7]: the plugin ${how} in check_op\n"
    "FAIL relu i32[2,3,5]: the plugin ${how} in check_op\n"
    "FAIL pattern double_relu: relu(relu(*)) f32[1,4,6,6]: the plugin ${how} in check_pattern\n"
    "0 passed, 6 failed, 0 declined\n")
endforeach()

# A library user calling the passes directly (tessera-opt, no child for the
# whole command) gets a child per batch of calls, and the pass's context.
set(PATH_ENV ${ZOO}/check_segv)
set(TOOL_SAVED ${TOOL})
set(TOOL ${OPT})
set(ARGS ${relu} --target zoo_check_segv --passes partition)
run(check_segv-opt 1 "tessera-opt: error: while running pass 'partition': in function '@main': plugin 'zoo_check_segv' crashed (SIGSEGV) in check_op for relu '0'\n")
set(TOOL ${TOOL_SAVED})

# Codegen crashes: partition is fine, compile fails naming the region.
set(PATH_ENV ${ZOO}/codegen_segv)
set(ARGS partition ${relu} --target zoo_codegen_segv)
run(codegen_segv-partition 0 "" "1 region (zoo_codegen_segv: 1)")
set(ARGS compile ${relu} --target zoo_codegen_segv -o ${WORK}/codegen_segv.tsr)
set(region tessera_module_zoo_codegen_segv_0)
run(codegen_segv-compile 1 "tessera compile: error: ${relu}: plugin 'zoo_codegen_segv' crashed (SIGSEGV) in codegen.compile for region @${region}\n")
set(ARGS plugin-check ${ZOO}/codegen_segv/libtessera_zoo_codegen_segv.so)
run(codegen_segv-plugin-check 1 ""
  "FAIL relu f32[7]: the plugin crashed (SIGSEGV) in codegen.compile\n"
  "FAIL pattern double_relu: relu(relu(*)) f32[1,4,6,6]: the plugin crashed (SIGSEGV) in codegen.compile\n"
  "0 passed, 4 failed, 2 declined\n")

# A module without the region's function: a compile error, no artifact.
set(PATH_ENV ${ZOO}/wrong_symbol)
set(region tessera_module_zoo_wrong_symbol_0)
set(ARGS compile ${relu} --target zoo_wrong_symbol -o ${WORK}/wrong_symbol.tsr)
run(wrong_symbol-compile 1 "tessera compile: error: ${relu}: region @${region} (plugin 'zoo_wrong_symbol'): the plugin's codegen returned a module without the region's function: module 'zoo_wrong_symbol' of plugin 'zoo_wrong_symbol': function '${region}': zoo_good: no function '${region}' (the module has 'zoo_elsewhere')\n")
if(EXISTS ${WORK}/wrong_symbol.tsr)
  message(FATAL_ERROR "wrong_symbol-compile: an artifact was written")
endif()
set(ARGS plugin-check ${ZOO}/wrong_symbol/libtessera_zoo_wrong_symbol.so)
run(wrong_symbol-plugin-check 1 ""
  "FAIL relu f32[7]: compiled module: function: module 'zoo_wrong_symbol' of plugin 'zoo_wrong_symbol': function 'tessera_kit_1': zoo_good: no function 'tessera_kit_1' (the module has 'zoo_elsewhere')\n"
  "0 passed, 4 failed, 2 declined\n")

# A function that writes nothing: the kit sees its fill come back.
set(PATH_ENV ${ZOO}/no_output)
set(ARGS plugin-check ${ZOO}/no_output/libtessera_zoo_no_output.so)
run(no_output-plugin-check 1 ""
  "FAIL relu f32[7]: compiled module: output 0 was not written (it still holds the kit's fill: NaN)\n"
  "0 passed, 4 failed, 2 declined\n")

# A factory that faults on bytes it did not write: the kit's damaged copies
# find it, and name the copy.
set(PATH_ENV ${ZOO}/factory_segv)
set(ARGS plugin-check ${ZOO}/factory_segv/libtessera_zoo_factory_segv.so)
run(factory_segv-plugin-check 1 ""
  "FAIL relu f32[7]: the plugin crashed (SIGSEGV) in the module factory 'zoo_factory_segv' on the saved module truncated to 0 of 32 bytes\n"
  "0 passed, 4 failed, 2 declined\n")

# A checker that throws (the SDK turns it into a decline "checker error:
# ..."): partition warns, naming plugin and op, and the op stays on the host.
set(sigmoid ${WORK}/sigmoid.tir)
file(WRITE ${sigmoid} "def @main(%x: f32[4]) -> f32[4] {\n  %0 = sigmoid(%x) : f32[4]\n  return %0\n}\n")
set(PATH_ENV ${LIAR})
set(ARGS partition ${sigmoid} --target liar)
run(throw-partition 0 "tessera: warning: plugin 'liar' failed in check_op for sigmoid '0' (checker error: vector::_M_range_check: __n (which is 3) >= this->size() (which is 1)); the op stays off the plugin\n"
  "1 declined by a checker")
set(ARGS compile ${sigmoid} --target liar -o ${WORK}/sigmoid.tsr)
run(throw-compile 0 "tessera: warning: plugin 'liar' failed in check_op for sigmoid '0' (checker error: vector::_M_range_check: __n (which is 3) >= this->size() (which is 1)); the op stays off the plugin\n"
  "1 declined by a checker" "0 plugin steps")
