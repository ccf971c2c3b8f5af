# The host kernel library (codegen/kernels/tk.h): the same sources built
#   - by clang++ (LLVM 19) into one bitcode file, embedded in tessera_codegen,
#     which links it into every artifact's host code and specialises it, and
#   - natively into tessera_host_kernels_native, for the unit tests that call
#     the kernels directly.
# Each op family lists its sources in its own file.
include(${CMAKE_CURRENT_LIST_DIR}/nn.cmake)      # TK_NN_SOURCES
include(${CMAKE_CURRENT_LIST_DIR}/tensor.cmake)  # TK_TENSOR_SOURCES
set(TK_SOURCES ${TK_NN_SOURCES} ${TK_TENSOR_SOURCES})

find_program(TESSERA_CLANGXX NAMES clang++ HINTS ${LLVM_TOOLS_BINARY_DIR} NO_DEFAULT_PATH)
find_program(TESSERA_LLVM_LINK NAMES llvm-link HINTS ${LLVM_TOOLS_BINARY_DIR} NO_DEFAULT_PATH)
if(NOT TESSERA_CLANGXX OR NOT TESSERA_LLVM_LINK)
  message(FATAL_ERROR "the host kernel library needs clang++ and llvm-link of LLVM "
                      "${LLVM_PACKAGE_VERSION} in ${LLVM_TOOLS_BINARY_DIR}: run cmake/install-deps.sh "
                      "(Debian packages clang-19 llvm-19)")
endif()

# Unoptimised bitcode (-O2 semantics, LLVM passes off): the optimisation runs
# once per model, after the kernels are inlined into the steps with their
# constants, for the model's target CPU.
set(TK_BC_DIR ${CMAKE_CURRENT_BINARY_DIR}/tk_kernels)
set(TK_BITCODES)
foreach(src ${TK_SOURCES})
  get_filename_component(stem ${src} NAME_WE)
  set(bc ${TK_BC_DIR}/${stem}.bc)
  add_custom_command(OUTPUT ${bc}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${TK_BC_DIR}
    COMMAND ${TESSERA_CLANGXX} -std=c++20 -O2 -Xclang -disable-llvm-optzns -emit-llvm -c
            -fno-exceptions -fno-rtti -fno-math-errno -fPIC -Wall -Wno-unused-function -DTK_BITCODE
            -I${PROJECT_SOURCE_DIR}/core -MD -MF ${bc}.d -o ${bc} ${src}
    DEPENDS ${src}
    DEPFILE ${bc}.d
    COMMENT "Compiling kernel bitcode ${stem}.bc"
    VERBATIM)
  list(APPEND TK_BITCODES ${bc})
endforeach()
set(TK_BITCODE ${TK_BC_DIR}/tk_kernels.bc)
add_custom_command(OUTPUT ${TK_BITCODE}
  COMMAND ${TESSERA_LLVM_LINK} -o ${TK_BITCODE} ${TK_BITCODES}
  DEPENDS ${TK_BITCODES}
  COMMENT "Linking the kernel library's bitcode"
  VERBATIM)
# Embedded with .incbin (codegen/kernels/embed.S.in).
set(TK_EMBED_ASM ${TK_BC_DIR}/tk_kernels_embed.S)
configure_file(${CMAKE_CURRENT_LIST_DIR}/embed.S.in ${TK_EMBED_ASM} @ONLY)
set_source_files_properties(${TK_EMBED_ASM} PROPERTIES OBJECT_DEPENDS ${TK_BITCODE})

add_library(tessera_host_kernels_native STATIC ${TK_SOURCES})
target_include_directories(tessera_host_kernels_native PUBLIC ${PROJECT_SOURCE_DIR}/core)
target_compile_options(tessera_host_kernels_native PRIVATE -fno-exceptions -fno-rtti
                       -fno-math-errno ${TESSERA_WARNINGS})
set_target_properties(tessera_host_kernels_native PROPERTIES POSITION_INDEPENDENT_CODE ON)
