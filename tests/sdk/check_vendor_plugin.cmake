# cmake -DBUILD_DIR=... -DEXAMPLE_DIR=... -DWORK_DIR=... [-DCTEST=...] -P check_vendor_plugin.cmake
#
# 1. cmake --install BUILD_DIR into WORK_DIR/prefix;
# 2. copy the example out of the source tree and build it with only that
#    prefix on CMAKE_PREFIX_PATH;
# 3. `tessera plugins` (the installed binary) with TESSERA_PLUGIN_PATH set to
#    the example's build folder must list it, and the installed json plugin
#    from the prefix's plugin folder;
# 4. `tessera plugin-check` passes on it;
# 5. the example's own tests (ctest: lit with the prefix's `tessera`, the
#    conformance kit and a model compiled, inspected and run) pass.
include(${CMAKE_CURRENT_LIST_DIR}/../check_run.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

file(COPY ${EXAMPLE_DIR}/ DESTINATION ${WORK_DIR}/src)
set(launcher "")
find_program(CCACHE ccache)
if(CCACHE)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
endif()
run(${CMAKE_COMMAND} -S ${WORK_DIR}/src -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release ${launcher})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)

set(plugin ${WORK_DIR}/build/libtessera_acme.so)
if(NOT EXISTS ${plugin})
  message(FATAL_ERROR "the example did not produce ${plugin}")
endif()

run(${CMAKE_COMMAND} -E env TESSERA_PLUGIN_PATH=${WORK_DIR}/build
    ${prefix}/bin/tessera plugins)
message(STATUS "tessera plugins:\n${out}")
if(NOT out MATCHES "acme" OR NOT out MATCHES "${WORK_DIR}/build/libtessera_acme.so")
  message(FATAL_ERROR "tessera plugins does not list the example plugin:\n${out}")
endif()
if(NOT out MATCHES "${prefix}/lib/tessera/plugins/libtessera_json.so")
  message(FATAL_ERROR "tessera plugins does not list the installed json plugin:\n${out}")
endif()

run(${prefix}/bin/tessera plugin-check ${plugin})
message(STATUS "tessera plugin-check:\n${out}")

# The example's tests must drive the installed CLI, not another tessera on
# PATH.
file(STRINGS ${WORK_DIR}/build/tests/lit.site.cfg.py cli REGEX "^config.tessera = ")
string(REGEX REPLACE "^config.tessera = \"(.*)\"$" "\\1" cli "${cli}")
if(NOT cli STREQUAL "${prefix}/bin/tessera")
  message(FATAL_ERROR "the example's tests use '${cli}', not the installed ${prefix}/bin/tessera")
endif()
if(NOT CTEST)
  get_filename_component(cmake_bin ${CMAKE_COMMAND} DIRECTORY)
  set(CTEST ${cmake_bin}/ctest)
endif()
run(${CTEST} --test-dir ${WORK_DIR}/build --output-on-failure)
message(STATUS "the example's ctest:\n${out}")
