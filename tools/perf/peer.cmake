# peer.cmake: how gin-perf's peer benchmarks (tools/perf/nccl,
# tools/perf/nvshmem) find their library, included by their CMakeLists.txt.
# A library LIB has two settings: GIN_<LIB> (ON, OFF or AUTO) and <LIB>_HOME
# (cache variable, else the environment). Built only with the cuda target;
# not found: a status line and the directory is skipped, never a failure,
# unless GIN_<LIB>=ON. Only the peer program links its library; the gin
# libraries never do.
include_guard(GLOBAL)

# gin_peer_stop(LIB FATAL STATUS): with GIN_<LIB>=ON, FATAL as an error;
# else STATUS as a status line, and the calling CMakeLists.txt returns (a
# macro, so return() is the caller's).
macro(gin_peer_stop lib fatal status)
  if(GIN_${lib} STREQUAL "ON")
    message(FATAL_ERROR "${fatal}")
  endif()
  message(STATUS "${status}")
  return()
endmacro()

# gin_peer_skip(LIB PROGRAM WHY): LIB was not found, for the reason WHY.
macro(gin_peer_skip lib program why)
  gin_peer_stop(${lib} "gin: GIN_${lib}=ON but ${why}"
    "gin: ${lib} not found (${why}), ${program} skipped")
endmacro()

# gin_peer_gate(LIB PROGRAM HOME_DOC): the settings GIN_<LIB> and
# <LIB>_HOME (HOME_DOC: its help); the calling CMakeLists.txt returns with
# GIN_<LIB>=OFF or without the cuda target.
macro(gin_peer_gate lib program home_doc)
  set(GIN_${lib} "AUTO" CACHE STRING "build ${program} against ${lib}: ON, OFF or AUTO")
  set(${lib}_HOME "" CACHE PATH "${home_doc}")
  if(GIN_${lib} STREQUAL "OFF")
    message(STATUS "gin: GIN_${lib}=OFF, ${program} skipped")
    return()
  endif()
  if(NOT GIN_WITH_CUDA)
    gin_peer_stop(${lib} "gin: GIN_${lib}=ON needs the cuda target"
      "gin: no cuda target, ${program} skipped")
  endif()
endmacro()

# gin_peer_home(LIB HOME_OUT FROM_OUT): <LIB>_HOME, else the environment's
# <LIB>_HOME, else empty; FROM_OUT names where it came from.
function(gin_peer_home lib home_out from_out)
  set(home "${${lib}_HOME}")
  set(from "${lib}_HOME")
  if(NOT home AND DEFINED ENV{${lib}_HOME})
    set(home "$ENV{${lib}_HOME}")
    set(from "environment ${lib}_HOME")
  endif()
  set(${home_out} "${home}" PARENT_SCOPE)
  set(${from_out} "${from}" PARENT_SCOPE)
endfunction()

# gin_peer_python(PKG HEADER DIR_OUT FROM_OUT): the directory of the first
# python3 on PATH's nvidia.<PKG> package (PyTorch's wheels) that holds
# include/<HEADER>, else empty; FROM_OUT names it when found.
function(gin_peer_python pkg header dir_out from_out)
  set(dir "")
  # nvidia/ is a namespace package (no __file__): search its __path__.
  find_program(GIN_PYTHON3 python3)
  if(GIN_PYTHON3)
    execute_process(
      COMMAND ${GIN_PYTHON3} -c "
import os
try:
    import nvidia.${pkg} as m
except ImportError:
    raise SystemExit(1)
for d in list(getattr(m, '__path__', [])) + [os.path.dirname(getattr(m, '__file__', None) or '')]:
    if os.path.isfile(os.path.join(d, 'include', '${header}')):
        print(d)
        break
"
      OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  set(${dir_out} "${dir}" PARENT_SCOPE)
  if(dir)
    set(${from_out} "${GIN_PYTHON3}'s nvidia.${pkg}" PARENT_SCOPE)
  endif()
endfunction()

# gin_peer_program(NAME SOURCE INCLUDE_DIR LIBS...): the peer program NAME
# from SOURCE, with tools/ (perf/peer_common.h) and INCLUDE_DIR on its
# include path, linked to gin_cuda, LIBS and the CUDA runtime, written
# beside gin-perf.
function(gin_peer_program name source include_dir)
  add_executable(${name} ${source})
  target_include_directories(${name} PRIVATE "${CMAKE_SOURCE_DIR}/tools" "${include_dir}")
  target_link_libraries(${name} PRIVATE gin_cuda ${ARGN} CUDA::cudart)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}")
endfunction()
