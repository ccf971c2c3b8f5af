# tessera_add_plugin(NAME SOURCES src... [LINK_LIBRARIES lib...] [OUTPUT_DIRECTORY dir])
#
# Builds a Tessera plugin: a MODULE library libtessera_<NAME>.so that exports
# tessera_plugin_query and nothing else. Everything else is hidden:
#   - C/C++ visibility hidden by default, inline functions hidden;
#   - a linker version script keeps only the entry symbol in the dynamic
#     symbol table (static libraries bundled into the plugin included);
#   - -Bsymbolic binds the plugin's own references inside it, so two plugins
#     that bundle different versions of one library each use their own;
#   - --no-undefined turns a missing symbol into a link error instead of a
#     load-time failure on the user's machine.
# The target links TesseraSDK::sdk (the C ABI and the C++ helpers).
function(tessera_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LINK_LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tessera_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE TesseraSDK::sdk ${ARG_LINK_LIBRARIES})
  target_compile_features(${name} PRIVATE cxx_std_20)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${name}.exports.map")
  file(WRITE "${script}" "{\n  global: tessera_plugin_query;\n  local: *;\n};\n")
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "tessera_${name}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    LINK_DEPENDS "${script}")
  target_link_options(${name} PRIVATE
    "LINKER:--version-script=${script}" "LINKER:-Bsymbolic" "LINKER:--no-undefined"
    "LINKER:--exclude-libs,ALL")
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  endif()
endfunction()
