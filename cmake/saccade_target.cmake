# Shared compile settings for every saccade target.

# Version and commit baked into run folders and checkpoints.
execute_process(
  COMMAND git describe --always --dirty --tags
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  OUTPUT_VARIABLE SACCADE_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET)
if(NOT SACCADE_GIT_COMMIT)
  set(SACCADE_GIT_COMMIT "unknown")
endif()

# Warnings, sanitizers, and a unity build: a target's sources are compiled four to a translation
# unit, since each file spent most of its time instantiating and compiling the same LibTorch
# templates (docs/testing.md has the build times). So names at file scope, anonymous namespaces
# included, must differ between a target's files.
function(saccade_configure_target target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 4)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  if(SACCADE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(SACCADE_SANITIZE)
    # Undefined behaviour stops the program (no recovery), so a report cannot pass unnoticed.
    target_compile_options(${target} PRIVATE
      -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
      # GCC's own caveat: the instrumentation makes this warning fire on sound library code.
      $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
    target_compile_definitions(${target} PRIVATE _GLIBCXX_ASSERTIONS)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(SACCADE_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# Targets whose sources include torch headers reuse one precompiled header (src/pch/), which
# turns a ~45 s translation unit into a few seconds. They are compiled with OpenMP, as the
# header is: at::parallel_for is expanded in the caller and would otherwise run on one thread.
function(saccade_use_torch_pch target)
  target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
  target_precompile_headers(${target} REUSE_FROM saccade_torch_pch)
endfunction()

# A static library for one stage folder under src/.
function(saccade_add_library target)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPENDS" ${ARGN})
  add_library(${target} STATIC ${ARG_SOURCES})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC ${ARG_DEPENDS})
  saccade_configure_target(${target})
  if(ARG_TORCH)
    target_link_libraries(${target} PUBLIC torch)
    saccade_use_torch_pch(${target})
  endif()
endfunction()
