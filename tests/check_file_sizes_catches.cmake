# cmake -DCHECK=<check_file_sizes.cmake> -DWORK=<scratch folder> -P check_file_sizes_catches.cmake
#
# The size check must count what `wc -l` counts, whatever the text: files of
# LIMIT + 1 lines with an unmatched '[' (the bracket that made the old check
# count plan.cpp's 1,001 lines as 551), a trailing backslash, a ';' and
# non-ASCII text must fail it, and the same files one line shorter pass.
cmake_minimum_required(VERSION 3.20)
set(limit 20)
function(write_file path lines)
  set(text "// \"bytes [{}, {}) outside\" \\\n")
  string(APPEND text "int a; // a;b [ [[ é ü ∑\n")
  math(EXPR rest "${lines} - 2")
  foreach(i RANGE 1 ${rest})
    string(APPEND text "x[${i} // ${i};\\\n")
  endforeach()
  file(WRITE "${path}" "${text}")
endfunction()
function(run_check lines expect_ok)
  file(REMOVE_RECURSE "${WORK}")
  write_file("${WORK}/src/a.cpp" ${lines})
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${WORK} -DFOLDERS=src -DLIMIT=${limit}
                          -P ${CHECK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "a file of ${lines} lines failed the check (limit ${limit}):\n${err}")
  endif()
  if(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "a file of ${lines} lines passed the check (limit ${limit}):\n${out}")
  endif()
  if(NOT expect_ok AND NOT err MATCHES "src/a.cpp: ${lines} lines")
    message(FATAL_ERROR "the check failed without naming the file and its ${lines} lines:\n${err}")
  endif()
endfunction()
run_check(20 TRUE)
math(EXPR over "${limit} + 1")
run_check(${over} FALSE)
run_check(1001 FALSE)
file(REMOVE_RECURSE "${WORK}")
message(STATUS "the size check counts lines as wc -l does")
