# `tessera plugin-check` on the deliberately wrong plugin (liar_plugin.cpp):
# every way it is wrong shows up as a FAIL line naming the stage, declines
# are listed with the checker's reason, and the exit status is 1.
#   cmake -DTOOL=<tessera> -DPLUGIN=<libtessera_kit_liar.so> -P check_kit_catches.cmake
function(check_output args expected_rc)
  execute_process(COMMAND ${TOOL} plugin-check ${PLUGIN} ${args}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "tessera plugin-check ${args} exited with ${rc}, expected "
                        "${expected_rc}:\n${out}${err}")
  endif()
  foreach(line IN LISTS ARGN)
    string(FIND "${out}" "${line}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "expected in the output of tessera plugin-check ${args}:\n${line}\n"
                          "--- output:\n${out}--- stderr:\n${err}")
    endif()
  endforeach()
  message(STATUS "tessera plugin-check ${args}:\n${out}")
endfunction()

check_output("" 1
  "plugin-check: plugin 'liar' 0.0.1 (ABI 1.6) from ${PLUGIN}\n"
  "f32/f64 rtol 1e-4 atol 1e-5"
  # save/load loses the op: only the reloaded module is wrong.
  "FAIL relu f32[7]: module reloaded through factory 'liar': output 0: "
  "DECLINED relu f16[2,3,5]: liar: only f32, got f16\n"
  "DECLINED relu i32[2,3,5]: liar: only f32, got i32\n"
  # The output is never written: the kit's NaN fill shows through.
  "FAIL neg f32[7]: compiled module: output 0 was not written (it still holds the kit's fill: NaN)\n"
  # Codegen fails after the checker accepted.
  "FAIL exp f32[7]: compile: plugin 'liar': compiling 'tessera_kit_"
  "' failed: liar: exp is not implemented after all\n"
  "DECLINED pattern twice: relu(relu(*)) f32[1,4,6,6]: liar: no composites (twice over 2 ops)\n"
  # The checker throws: a failure, not a decline.
  "FAIL sigmoid f32[7]: the checker failed instead of deciding: checker error: "
  "0 passed, 13 failed, 6 declined\n")

# --op keeps one op's cases; an unknown name is a failure.
check_output("--op;neg" 1 "0 passed, 3 failed, 2 declined\n")
check_output("--op;twice" 1 "DECLINED pattern twice: " "0 passed, 0 failed, 1 declined\n")
check_output("--op;conv2d" 1
  "FAIL conv2d: the plugin claims no op or pattern named 'conv2d'\n"
  "0 passed, 1 failed, 0 declined\n")
