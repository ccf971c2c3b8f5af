# cmake -DCORE=<core folder> -P check_layering.cmake
#
# The core's layers and what each may include (the picture is
# docs/design/0012-layers.md; lowest first). A layer includes only layers
# below it ("tessera/..." are the SDK's public headers, below every layer):
# an include outside its list fails, naming the file and the line. The pass
# machinery (passes/) knows no partitioning; the runtime knows no compiler;
# codegen knows no plugin.
cmake_minimum_required(VERSION 3.20)
set(allowed_support "")
set(allowed_ir support)
set(allowed_interp support ir)
set(allowed_passes support ir interp)
set(allowed_frontend support ir interp passes)
set(allowed_plugin support tessera)
set(allowed_runtime support plugin tessera)
set(allowed_bridge support ir tessera)
set(allowed_partition support ir interp passes bridge plugin tessera)
set(allowed_kit support ir interp bridge plugin tessera)
set(allowed_codegen support ir runtime)
set(allowed_compile support ir interp passes bridge partition plugin codegen runtime tessera)
set(allowed_tools support ir interp passes frontend plugin runtime bridge partition kit codegen compile tessera)
set(layers support ir interp passes frontend plugin runtime bridge partition kit codegen compile tools)

set(problems "")
foreach(layer ${layers})
  file(GLOB_RECURSE files ${CORE}/${layer}/*.h ${CORE}/${layer}/*.cpp)
  foreach(f ${files})
    file(STRINGS ${f} includes REGEX "^#include \"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" target "${line}")
      if(NOT target STREQUAL layer AND NOT target STREQUAL "tessera" AND NOT target IN_LIST allowed_${layer})
        file(RELATIVE_PATH rel ${CORE} ${f})
        string(APPEND problems "  core/${rel}: ${line} (layer '${layer}' may include: ${allowed_${layer}})\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "includes that cross the core's layers upward or sideways:\n${problems}")
endif()
