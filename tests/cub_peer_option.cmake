# cub_peer_option.cmake: tests tools/cub_peer_option.cmake's decision in every case (above all:
# nvcc without an NVIDIA GPU builds nothing unless asked), and this build's own: cub_peer is a
# target exactly when the decision says so.
#   cmake -DOPTION_FILE=F -DMODE=M -DGPU=G -DNVCC=N -DBUILT=0|1 -P cub_peer_option.cmake
# CASE=NAME runs one case that must stop with an error (the test runs itself for those).
include(${OPTION_FILE})

if(CASE STREQUAL "bad_mode")
  clreduce_cub_peer_mode("maybe" m)
  return()
elseif(CASE STREQUAL "on_without_nvcc")
  clreduce_cub_peer_decide(ON FALSE FALSE b w)
  return()
endif()

set(failures 0)
function(fail what)
  message("FAIL: ${what}")
  math(EXPR n "${failures} + 1")
  set(failures ${n} PARENT_SCOPE)
endfunction()

# mode gpu nvcc -> built
foreach(c "AUTO;FALSE;TRUE;FALSE" "AUTO;FALSE;FALSE;FALSE" "AUTO;TRUE;TRUE;TRUE"
          "AUTO;TRUE;FALSE;FALSE" "ON;FALSE;TRUE;TRUE" "ON;TRUE;TRUE;TRUE" "OFF;TRUE;TRUE;FALSE")
  list(GET c 0 mode)
  list(GET c 1 gpu)
  list(GET c 2 nvcc)
  list(GET c 3 want)
  clreduce_cub_peer_decide(${mode} ${gpu} ${nvcc} got why)
  if(NOT got STREQUAL want)
    fail("mode ${mode}, GPU ${gpu}, nvcc ${nvcc}: built ${got}, want ${want} (${why})")
  endif()
endforeach()
clreduce_cub_peer_decide(AUTO FALSE TRUE got why)
if(NOT why MATCHES "no NVIDIA GPU found" OR NOT why MATCHES "-DCLREDUCE_CUB_PEER=ON")
  fail("without a GPU the configure line says why and names the option: '${why}'")
endif()

foreach(c "AUTO;AUTO" "auto;AUTO" "ON;ON" "on;ON" "1;ON" "TRUE;ON" "yes;ON" "OFF;OFF" "0;OFF"
          "false;OFF" "No;OFF")
  list(GET c 0 value)
  list(GET c 1 want)
  clreduce_cub_peer_mode("${value}" got)
  if(NOT got STREQUAL want)
    fail("CLREDUCE_CUB_PEER=${value} reads as ${got}, want ${want}")
  endif()
endforeach()
foreach(case bad_mode on_without_nvcc)
  execute_process(COMMAND ${CMAKE_COMMAND} -DOPTION_FILE=${OPTION_FILE} -DCASE=${case}
    -P ${CMAKE_CURRENT_LIST_FILE} RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
  if(code EQUAL 0 OR NOT err MATCHES "CLREDUCE_CUB_PEER")
    fail("${case}: a configure error naming CLREDUCE_CUB_PEER (exit ${code}: ${err})")
  endif()
endforeach()

# This build: what the configure found, and whether cub_peer is a target.
clreduce_cub_peer_decide(${MODE} ${GPU} ${NVCC} want why)
if(want)
  set(want 1)
else()
  set(want 0)
endif()
if(NOT BUILT STREQUAL want)
  fail("this build (mode ${MODE}, GPU ${GPU}, nvcc ${NVCC}): cub_peer target ${BUILT}, want ${want}")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "cub_peer_option: ${failures} failed")
endif()
message("cub_peer_option: passed (this build: ${why})")
