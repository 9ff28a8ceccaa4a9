# What a LibTorch built with CUDA (pip or conda torch, Debian's libtorch-cuda)
# brings to the build, after find_package(Torch). Nothing here runs for a CPU
# LibTorch (Debian 12's, CI): SALT_CUDA stays OFF and the CUDA sources compile
# to their CPU fallbacks.
#
#   SALT_CUDA          ON when LibTorch has CUDA: defines SALT_CUDA=1 for every
#                      file (the GPU-only paths: caching-allocator statistics,
#                      flash attention, fused AdamW, NCCL)
#   SALT_REQUIRE_CUDA  fail unless LibTorch has CUDA and nccl.h is found
#                      (scripts/check_cuda_build.sh sets it)
option(SALT_REQUIRE_CUDA "Fail the configure step unless LibTorch has CUDA and nccl.h is found" OFF)

set(SALT_CUDA OFF)
if(TORCH_CUDA_LIBRARIES)
  set(SALT_CUDA ON)
endif()

if(SALT_CUDA)
  add_compile_definitions(SALT_CUDA=1)
  # salt-cpp's own kernels (lib/models/kernels/cuda) use the shared CUDA runtime LibTorch
  # loads: one runtime in the process, not a static copy beside it in every program.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  # CUDA 12.9+ ships NVTX 3 as headers only, without libnvToolsExt, but LibTorch
  # 2.6's config still links torch::nvtoolsext to CUDA::nvToolsExt
  # (pytorch#152756): the missing target is the header-only one.
  if(TARGET torch::nvtoolsext AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    if(TARGET CUDA::nvtx3)
      target_link_libraries(CUDA::nvToolsExt INTERFACE CUDA::nvtx3)
    endif()
    message(STATUS "salt-cpp: CUDA::nvToolsExt missing (CUDA 12.9+): using the header-only NVTX 3")
  endif()
  # NCCL for the data-parallel gradients (lib/parallel/c10d_compat.h): torch's headers
  # test USE_C10D_NCCL; nccl.h comes from the CUDA toolkit, a Debian libnccl-dev,
  # or pip's nvidia-nccl (NCCL_ROOT).
  find_path(SALT_NCCL_INCLUDE_DIR nccl.h HINTS ENV NCCL_ROOT ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  if(SALT_NCCL_INCLUDE_DIR)
    add_compile_definitions(USE_C10D_NCCL)
    include_directories(SYSTEM ${SALT_NCCL_INCLUDE_DIR})
    message(STATUS "salt-cpp: CUDA LibTorch, NCCL headers in ${SALT_NCCL_INCLUDE_DIR}")
  else()
    message(WARNING "salt-cpp: CUDA LibTorch without nccl.h (set NCCL_ROOT): several GPUs reduce over Gloo through host memory")
  endif()
endif()

if(SALT_REQUIRE_CUDA AND NOT (SALT_CUDA AND SALT_NCCL_INCLUDE_DIR))
  message(FATAL_ERROR "SALT_REQUIRE_CUDA: LibTorch has CUDA: ${SALT_CUDA}; nccl.h found: '${SALT_NCCL_INCLUDE_DIR}'")
endif()
