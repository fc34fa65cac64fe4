# sanitizers.cmake - PLEXUS_SANITIZE: a build instrumented by a sanitizer, for the tests.
#   address  AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer; undefined
#            behaviour aborts (-fno-sanitize-recover=undefined) instead of printing and going on
#   thread   ThreadSanitizer
# Every target of the tree is instrumented (-O1 -g1, frame pointers kept, so reports have file
# and line). CUDA and plexus_torch are off in such a build: nvcc code and the torch extension
# (loaded by an uninstrumented Python) cannot run under these runtimes. scripts/test-sanitizers.sh
# builds both kinds and runs the tests they are for.
set(PLEXUS_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan + UBSan), thread (TSan) or empty")
set_property(CACHE PLEXUS_SANITIZE PROPERTY STRINGS "" address thread)

if(PLEXUS_SANITIZE STREQUAL "address")
  set(PLEXUS_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
elseif(PLEXUS_SANITIZE STREQUAL "thread")
  set(PLEXUS_SANITIZE_FLAGS -fsanitize=thread)
elseif(NOT PLEXUS_SANITIZE STREQUAL "")
  message(FATAL_ERROR "PLEXUS_SANITIZE=${PLEXUS_SANITIZE}: expected address, thread or empty")
endif()

if(PLEXUS_SANITIZE_FLAGS)
  add_compile_options(${PLEXUS_SANITIZE_FLAGS} -fno-omit-frame-pointer -O1 -g1)
  add_link_options(${PLEXUS_SANITIZE_FLAGS})
  # Normal variables hide the cache entries of the same name (policy CMP0126).
  set(PLEXUS_CUDA OFF)
  set(PLEXUS_TORCH OFF)
  message(STATUS "Plexus: PLEXUS_SANITIZE=${PLEXUS_SANITIZE} (${PLEXUS_SANITIZE_FLAGS}); CUDA and "
                 "plexus_torch off")
endif()

# PLEXUS_SANITIZE_TARGETS (a list, set by scripts/test-sanitizers.sh): one target,
# sanitizer_targets, that builds them all, so that a parallel build works across them (CMake's
# Makefiles build the targets named on one command line one after the other).
function(plexus_sanitizer_targets)
  if(PLEXUS_SANITIZE_TARGETS)
    add_custom_target(sanitizer_targets)
    add_dependencies(sanitizer_targets ${PLEXUS_SANITIZE_TARGETS})
  endif()
endfunction()
