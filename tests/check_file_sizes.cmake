# cmake -DROOT=<source root> [-DFOLDERS="core;plugins;sdk"] [-DLIMIT=600] -P check_file_sizes.cmake
#
# Fails when a C++ source or header under FOLDERS (relative to ROOT) has
# more than LIMIT lines (issue 20: a file holds one thing a reader can take
# in; split it along its ideas, with a private *_internal.h for what the
# parts share). A line is what `wc -l` counts: the newline characters.
# (file(STRINGS) + list(LENGTH), which this check used before issue 45,
# merged every line after an unmatched '[' into one list element: a file of
# 1,001 lines counted as 551.) check_file_sizes_catches.cmake tries it on
# files made to fool it.
cmake_minimum_required(VERSION 3.20)
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source root> [-DFOLDERS=...] [-DLIMIT=600] -P check_file_sizes.cmake")
endif()
if(NOT DEFINED FOLDERS)
  set(FOLDERS core plugins sdk)
endif()
if(NOT DEFINED LIMIT)
  set(LIMIT 600)
endif()
set(problems "")
set(checked 0)
foreach(folder ${FOLDERS})
  file(GLOB_RECURSE files ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.hpp ${ROOT}/${folder}/*.cpp
       ${ROOT}/${folder}/*.c)
  foreach(f ${files})
    file(READ "${f}" content)
    # Keep only the newlines, then count them.
    string(REGEX REPLACE "[^\n]" "" newlines "${content}")
    string(LENGTH "${newlines}" n)
    math(EXPR checked "${checked} + 1")
    if(n GREATER LIMIT)
      file(RELATIVE_PATH rel ${ROOT} ${f})
      string(APPEND problems "  ${rel}: ${n} lines\n")
    endif()
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no source files under ${FOLDERS} in ${ROOT}")
endif()
if(problems)
  message(FATAL_ERROR "source files over ${LIMIT} lines (split them along their ideas):\n${problems}")
endif()
message(STATUS "${checked} source files, none over ${LIMIT} lines")
