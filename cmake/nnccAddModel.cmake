# nncc_add_model(<target> <model.nn>
#                [TARGETS cpu [cuda]] [GRAD] [F64]
#                [MEMORY_BUDGET <bytes|NNNMiB|NNNGiB|min> DIMS NAME=SIZE...]
#                [CUDA_ARCH sm_XX] [OPTIONS <more nncc compile flags>...])
#
# Compiles <model.nn> with `nncc compile` at build time (whenever the file or
# nncc changes) into lib<model>.so and <model>.h under
# ${CMAKE_CURRENT_BINARY_DIR}/<target>.nncc/, and defines <target>, an
# imported shared library to link: it carries the generated header's
# directory and nncc::runtime. <model> is the name declared in the file
# (`model NAME { ... }`), read with `nncc inspect` when CMake configures;
# the target's NNCC_MODEL_NAME property holds it, NNCC_MODEL_HEADER the
# header's path.
#
#   TARGETS        cpu (the default) or cuda (the CPU and CUDA; needs nvcc)
#   GRAD           also differentiate: forward_train, backward, train_step
#   F64            CPU code in double precision
#   MEMORY_BUDGET  with GRAD: the training step's arena budget for the DIMS
#                  binding (nncc-remat); an infeasible one fails the build
#                  with nncc's message
include_guard(GLOBAL)

function(nncc_add_model target model)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "GRAD;F64" "MEMORY_BUDGET;CUDA_ARCH"
                        "TARGETS;DIMS;OPTIONS")
  set(where "nncc_add_model(${target})")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(TARGET ${target})
    message(FATAL_ERROR "${where}: a target named '${target}' already exists")
  endif()
  if(NOT IS_ABSOLUTE "${model}")
    set(model "${CMAKE_CURRENT_SOURCE_DIR}/${model}")
  endif()
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "${where}: no such model file: ${model}")
  endif()

  set(kind cpu)
  foreach(t IN LISTS ARG_TARGETS)
    if(t STREQUAL "cuda")
      set(kind cuda)
    elseif(NOT t STREQUAL "cpu")
      message(FATAL_ERROR "${where}: TARGETS takes cpu and cuda, got '${t}'")
    endif()
  endforeach()

  set(flags --target ${kind})
  if(ARG_GRAD)
    list(APPEND flags --grad)
  endif()
  if(ARG_F64)
    list(APPEND flags --f64)
  endif()
  if(ARG_CUDA_ARCH)
    list(APPEND flags --cuda-arch ${ARG_CUDA_ARCH})
  endif()
  if(DEFINED ARG_MEMORY_BUDGET)
    if(NOT ARG_GRAD)
      message(FATAL_ERROR "${where}: MEMORY_BUDGET applies to the training step: add GRAD")
    endif()
    list(APPEND flags --memory-budget ${ARG_MEMORY_BUDGET})
  endif()
  foreach(d IN LISTS ARG_DIMS)
    list(APPEND flags --dim ${d})
  endforeach()
  list(APPEND flags ${ARG_OPTIONS})

  # The library and header are named after the model the file declares.
  get_target_property(nncc_exe nncc::nncc LOCATION)
  execute_process(COMMAND "${nncc_exe}" inspect "${model}"
                  OUTPUT_VARIABLE signature ERROR_VARIABLE error RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    string(STRIP "${error}" error)
    message(FATAL_ERROR "${where}: nncc cannot read ${model}:\n${error}")
  endif()
  string(JSON name GET "${signature}" model)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${model}")

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.nncc")
  file(MAKE_DIRECTORY "${dir}")
  set(library "${dir}/lib${name}.so")
  set(header "${dir}/${name}.h")
  add_custom_command(OUTPUT "${library}" "${header}"
    COMMAND nncc::nncc compile "${model}" -o "${dir}" ${flags}
    DEPENDS "${model}" nncc::nncc
    COMMENT "nncc: compiling ${model} into lib${name}.so"
    VERBATIM)
  add_custom_target(${target}_nncc DEPENDS "${library}" "${header}")

  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${library}"
    IMPORTED_SONAME "lib${name}.so"
    INTERFACE_INCLUDE_DIRECTORIES "${dir}"
    INTERFACE_LINK_LIBRARIES nncc::runtime
    NNCC_MODEL_NAME "${name}"
    NNCC_MODEL_HEADER "${header}")
  add_dependencies(${target} ${target}_nncc)
endfunction()
