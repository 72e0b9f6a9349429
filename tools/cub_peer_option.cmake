# cub_peer_option.cmake: whether to build tools/cub_peer, the CUB peer (CLREDUCE_CUB_PEER).
# nvcc takes about 1.6 minutes of a 2-core build for a program that runs only on an NVIDIA GPU,
# so AUTO builds it only where an NVIDIA GPU and nvcc are both found; ON builds it wherever nvcc
# is (say, to copy it to a GPU machine); OFF never. Included by tools/CMakeLists.txt, and run in
# script mode by the test cub_peer_option.

# Sets OUT to TRUE where this machine has an NVIDIA GPU: /dev/nvidia0 exists, or `nvidia-smi -L`
# lists one.
function(clreduce_nvidia_gpu_found out)
  set(found FALSE)
  if(EXISTS /dev/nvidia0)
    set(found TRUE)
  else()
    find_program(CLREDUCE_NVIDIA_SMI nvidia-smi)
    if(CLREDUCE_NVIDIA_SMI)
      execute_process(COMMAND ${CLREDUCE_NVIDIA_SMI} -L OUTPUT_VARIABLE listed ERROR_QUIET
        RESULT_VARIABLE code TIMEOUT 60)
      if(code EQUAL 0 AND listed MATCHES "GPU [0-9]+:")
        set(found TRUE)
      endif()
    endif()
  endif()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# The option's value as AUTO, ON or OFF (CMake's other spellings of true and false accepted);
# anything else is an error.
function(clreduce_cub_peer_mode value out)
  string(TOUPPER "${value}" v)
  if(v STREQUAL "AUTO")
    set(${out} AUTO PARENT_SCOPE)
  elseif(v MATCHES "^(ON|1|TRUE|YES|Y)$")
    set(${out} ON PARENT_SCOPE)
  elseif(v MATCHES "^(OFF|0|FALSE|NO|N)$")
    set(${out} OFF PARENT_SCOPE)
  else()
    message(FATAL_ERROR "CLREDUCE_CUB_PEER must be AUTO, ON or OFF, not '${value}'")
  endif()
endfunction()

# The decision: MODE from clreduce_cub_peer_mode, GPU whether an NVIDIA GPU was found (AUTO
# only), NVCC whether a CUDA compiler was found. Sets BUILD to TRUE or FALSE and WHY to a line
# for the configure log; ON without nvcc is an error.
function(clreduce_cub_peer_decide mode gpu nvcc build why)
  set(hint "-DCLREDUCE_CUB_PEER=ON builds it wherever nvcc is")
  if(mode STREQUAL "OFF")
    set(b FALSE)
    set(w "cub_peer not built: CLREDUCE_CUB_PEER=OFF")
  elseif(mode STREQUAL "ON")
    if(NOT nvcc)
      message(FATAL_ERROR "CLREDUCE_CUB_PEER=ON, but no CUDA compiler (nvcc) was found")
    endif()
    set(b TRUE)
    set(w "cub_peer built: CLREDUCE_CUB_PEER=ON")
  elseif(NOT gpu)
    set(b FALSE)
    set(w "cub_peer not built: no NVIDIA GPU found (no /dev/nvidia0, nvidia-smi -L lists none); ${hint}")
  elseif(NOT nvcc)
    set(b FALSE)
    set(w "cub_peer not built: an NVIDIA GPU but no CUDA compiler (nvcc) found")
  else()
    set(b TRUE)
    set(w "cub_peer built: an NVIDIA GPU and nvcc found (CLREDUCE_CUB_PEER=AUTO)")
  endif()
  set(${build} ${b} PARENT_SCOPE)
  set(${why} "${w}" PARENT_SCOPE)
endfunction()
