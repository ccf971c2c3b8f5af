# cmake -DCORE=<core folder> -P check_file_sizes.cmake
#
# Fails when a source file of the core is over 600 lines (issue 20: a file
# holds one thing a reader can take in; split it along its sections, with a
# private *_internal.h for what the parts share).
cmake_minimum_required(VERSION 3.20)
set(limit 600)
file(GLOB_RECURSE files ${CORE}/*.h ${CORE}/*.cpp)
set(problems "")
foreach(f ${files})
  file(STRINGS ${f} lines)
  list(LENGTH lines n)
  if(n GREATER limit)
    file(RELATIVE_PATH rel ${CORE} ${f})
    string(APPEND problems "  core/${rel}: ${n} lines\n")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "core source files over ${limit} lines (split them along their sections):\n${problems}")
endif()
