# Every external dependency, found once, from Debian 12's packages
# (cmake/install-deps.sh installs them). Versions and gotchas are measured in
# ../shared/DEPENDENCIES.md.
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(ZLIB REQUIRED) # the runtime inflates compressed host code; tools read .npz
find_package(dlpack CONFIG REQUIRED)          # its config says 0.1.0: ask for no version
find_package(nlohmann_json 3 CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# LLVM 19 for the host code generator; only core/codegen sees its headers.
# ("19" alone fails: the version file wants major.minor.)
find_package(LLVM 19.1 CONFIG REQUIRED)
# jemalloc, linked into the compiler's executables only (docs/design/0005);
# not under the sanitizers, which bring their own allocator.
if(TESSERA_USE_JEMALLOC)
  find_library(TESSERA_JEMALLOC NAMES libjemalloc.so.2 jemalloc REQUIRED)
else()
  set(TESSERA_JEMALLOC "")
endif()
find_package(Threads REQUIRED)
# OpenMP (libgomp with GCC): the runtime's thread pool, shared with oneDNN's.
find_package(OpenMP REQUIRED)
find_package(Boost 1.74 REQUIRED)              # Boost.DLL, header-only (BOOST_DLL_USE_STD_FS)
find_package(Protobuf REQUIRED)               # before ONNX, whose targets need it
find_package(ONNX CONFIG REQUIRED)            # targets onnx, onnx_proto
if(TESSERA_BUILD_TESTS)
  find_package(Catch2 2 CONFIG REQUIRED)
  find_program(TESSERA_LIT NAMES lit.py lit PATHS /usr/lib/llvm-19/build/utils/lit NO_DEFAULT_PATH)
  find_program(TESSERA_FILECHECK FileCheck PATHS /usr/lib/llvm-19/bin NO_DEFAULT_PATH)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
endif()

# tessera_find_python(VAR "numpy, onnx"): the first of ${Python3_EXECUTABLE}
# and /usr/bin/python3 that imports those modules, or "" (Debian's packages
# are installed for /usr/bin/python3, which may not be the first python3).
function(tessera_find_python var modules)
  set(found "")
  foreach(candidate ${Python3_EXECUTABLE} /usr/bin/python3)
    if(NOT found AND EXISTS ${candidate})
      execute_process(COMMAND ${candidate} -c "import ${modules}"
                      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(found ${candidate})
      endif()
    endif()
  endforeach()
  set(${var} ${found} PARENT_SCOPE)
endfunction()
