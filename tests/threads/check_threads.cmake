# cmake -DTESSERA=... -DCHECK=... -DMODEL=... -DWORK_DIR=... -DTARGETS=host,dnnl
#       [-DTHREADS=8] [-DRUNS=500] -P check_threads.cmake
# Compiles MODEL for each target ("host": none) and runs tessera_threads_check
# on the artifact (tests/threads/threads_check.cpp says what it checks).
include(${CMAKE_CURRENT_LIST_DIR}/../check_run.cmake)
if(NOT THREADS)
  set(THREADS 8)
endif()
if(NOT RUNS)
  set(RUNS 500)
endif()
string(REPLACE "," ";" targets "${TARGETS}")
file(MAKE_DIRECTORY ${WORK_DIR})
foreach(target ${targets})
  set(tsr ${WORK_DIR}/threads_${target}.tsr)
  if(target STREQUAL "host")
    run(${TESSERA} compile ${MODEL} -o ${tsr})
  else()
    run(${TESSERA} compile ${MODEL} -o ${tsr} --target ${target})
  endif()
  run(${CHECK} ${tsr} ${THREADS} ${RUNS} 1)
  message(STATUS "${target}: ${out}")
endforeach()
