# Use ccache for every compile when it is installed.
find_program(TESSERA_CCACHE ccache)
if(TESSERA_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER "${TESSERA_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${TESSERA_CCACHE}")
endif()
