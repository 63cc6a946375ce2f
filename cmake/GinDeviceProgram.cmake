# gin_device_program(NAME SOURCES...): device code written once, built as
# NAME_host (the C compiler; linked with ${GIN_DEVICE_HOST_LIB}, e.g.
# gin::host) and, where the CUDA language is enabled and
# ${GIN_DEVICE_CUDA_LIB} names a target (e.g. gin::cuda), NAME_cuda: the
# same .c files compiled as CUDA through generated one-line .cu wrappers.
# GIN_DEVICE_INCLUDES: extra include folders for both (optional).
#
# Installed with gin (find_package(gin) sets the two library variables);
# this repository's own CMakeLists.txt uses it too.
function(gin_device_program name)
  add_executable(${name}_host ${ARGN})
  target_link_libraries(${name}_host PRIVATE ${GIN_DEVICE_HOST_LIB} m)
  if(GIN_DEVICE_INCLUDES)
    target_include_directories(${name}_host PRIVATE ${GIN_DEVICE_INCLUDES})
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(GIN_DEVICE_CUDA_LIB AND TARGET "${GIN_DEVICE_CUDA_LIB}" AND "CUDA" IN_LIST languages)
    set(wrapped)
    foreach(src ${ARGN})
      get_filename_component(abs ${src} ABSOLUTE)
      get_filename_component(stem ${src} NAME_WE)
      set(out ${CMAKE_CURRENT_BINARY_DIR}/gin_cuda_wrap/${name}_${stem}.cu)
      file(WRITE ${out}.tmp "#include \"${abs}\"\n")
      configure_file(${out}.tmp ${out} COPYONLY)
      list(APPEND wrapped ${out})
    endforeach()
    add_executable(${name}_cuda ${wrapped})
    target_link_libraries(${name}_cuda PRIVATE ${GIN_DEVICE_CUDA_LIB} m)
    if(GIN_DEVICE_INCLUDES)
      target_include_directories(${name}_cuda PRIVATE ${GIN_DEVICE_INCLUDES})
    endif()
    set_target_properties(${name}_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
endfunction()
