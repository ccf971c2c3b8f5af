# cmake -DBUILD_DIR=... -DEXAMPLE_DIR=... -DMODEL=... -DWORK_DIR=... -DPYTHON=... -P check_app.cmake
#
# 1. cmake --install BUILD_DIR into WORK_DIR/prefix;
# 2. the installed `tessera compile MODEL -o WORK_DIR/model.tsr`;
# 3. copy the example out of the source tree and build it with only that
#    prefix on CMAKE_PREFIX_PATH; it must link the installed runtime;
# 4. run it on the artifact (no TESSERA_PLUGIN_PATH): it prints every output
#    and the latency;
# 5. the same with the model compiled for the json plugin, which the
#    installed runtime finds in <prefix>/lib/tessera/plugins;
# 6. examples/app/README.md's dynamic model: compiled with symbolic N, H, W,
#    run on a .npy file (the dims from its shape) and on --dim values.
include(${CMAKE_CURRENT_LIST_DIR}/../check_run.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f lib/cmake/TesseraRuntime/TesseraRuntimeConfig.cmake include/tessera/c/runtime.h
          include/tessera/runtime.hpp bin/tessera)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()

set(model ${WORK_DIR}/model.tsr)
run(${prefix}/bin/tessera compile ${MODEL} -o ${model})
message(STATUS "tessera compile:\n${out}")
if(NOT EXISTS ${model})
  message(FATAL_ERROR "tessera compile did not write ${model}")
endif()

file(COPY ${EXAMPLE_DIR}/ DESTINATION ${WORK_DIR}/src)
set(launcher "")
find_program(CCACHE ccache)
if(CCACHE)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
endif()
run(${CMAKE_COMMAND} -S ${WORK_DIR}/src -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    ${launcher})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
set(app ${WORK_DIR}/build/tessera_app)
if(NOT EXISTS ${app})
  message(FATAL_ERROR "the example did not produce ${app}")
endif()

# The app runs on the installed runtime, not the build tree's.
run(ldd ${app})
if(NOT out MATCHES "libtessera_runtime\\.so\\.[0-9]+ => ${prefix}/lib")
  message(FATAL_ERROR "tessera_app does not load ${prefix}/lib/libtessera_runtime.so:\n${out}")
endif()

run(${CMAKE_COMMAND} -E env --unset=TESSERA_PLUGIN_PATH ${app} ${model} --repeat 3)
message(STATUS "tessera_app:\n${out}")
if(NOT out MATCHES "input 'x': f32\\[1, 3, 16, 16\\]")
  message(FATAL_ERROR "tessera_app did not bind input 'x':\n${out}")
endif()
if(NOT out MATCHES "output '[^']*': f32\\[1, 10\\] \\[[-0-9.e]+, ")
  message(FATAL_ERROR "tessera_app did not print the f32[1, 10] output:\n${out}")
endif()
if(NOT out MATCHES "latency: mean [0-9.]+ ms, min [0-9.]+ ms over 3 runs")
  message(FATAL_ERROR "tessera_app did not print the latency:\n${out}")
endif()

set(model_json ${WORK_DIR}/model_json.tsr)
run(${prefix}/bin/tessera compile ${MODEL} --target json -o ${model_json})
run(${CMAKE_COMMAND} -E env --unset=TESSERA_PLUGIN_PATH ${app} ${model_json} --repeat 3)
message(STATUS "tessera_app (json plugin):\n${out}")
if(NOT out MATCHES "output '[^']*': f32\\[1, 10\\] \\[[-0-9.e]+, ")
  message(FATAL_ERROR "tessera_app did not run the json-compiled model:\n${out}")
endif()

# The README's dynamic model: dims from a .npy file's shape, and from --dim.
get_filename_component(models ${MODEL} DIRECTORY)
set(dynamic ${WORK_DIR}/dynamic.tsr)
run(${prefix}/bin/tessera compile ${models}/tiny_cnn_dynamic.tir -o ${dynamic})
# (no ';' in the code: CMake would split the argument there)
run(${PYTHON} -c "__import__('numpy').save('${WORK_DIR}/x.npy', __import__('numpy').random.default_rng(0).random((2, 3, 40, 24)).astype('float32'))")
run(${CMAKE_COMMAND} -E env --unset=TESSERA_PLUGIN_PATH ${app} ${dynamic} --input x=${WORK_DIR}/x.npy --repeat 2)
message(STATUS "tessera_app (dynamic, x.npy):\n${out}")
if(NOT out MATCHES "input 'x': f32\\[N, 3, H, W\\], bound to the .npy file's \\[2, 3, 40, 24\\]" OR
   NOT out MATCHES "output '[^']*': f32\\[2, 10\\] \\[[-0-9.e]+, ")
  message(FATAL_ERROR "tessera_app did not run the dynamic model on x.npy:\n${out}")
endif()
run(${CMAKE_COMMAND} -E env --unset=TESSERA_PLUGIN_PATH ${app} ${dynamic} --dim H=64 --dim W=48 --repeat 2)
message(STATUS "tessera_app (dynamic, --dim):\n${out}")
if(NOT out MATCHES "bound to a generated \\[1, 3, 64, 48\\]" OR
   NOT out MATCHES "output '[^']*': f32\\[1, 10\\] ")
  message(FATAL_ERROR "tessera_app did not run the dynamic model at --dim H=64 W=48:\n${out}")
endif()
