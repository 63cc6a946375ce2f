/* Internal to the cuda target: what arch_cuda.c, vmm.c and stream.c share. */
#ifndef GIN_ARCH_CUDA_ARCH_H
#define GIN_ARCH_CUDA_ARCH_H

#include <cuda_runtime_api.h>

#include "arch/arch.h"

#define GIN_CUDA_CALL(call, what)                                              \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return GIN_ERROR(                                                        \
          e_ == cudaErrorMemoryAllocation ? GIN_ERR_NOMEM : GIN_ERR_CUDA,      \
          "%s: %s (%s)", what, cudaGetErrorString(e_), cudaGetErrorName(e_));  \
  } while (0)

#define CUDA_HANDLE_MAGIC 0x47494e43u /* "GINC": cudaMalloc + CUDA IPC */
#define CUDA_VMM_MAGIC 0x47494e56u    /* "GINV": cuMemCreate + its fd */

/* What gin_arch_handle_t holds for shareable device memory. */
typedef struct cuda_handle {
  uint32_t magic;
  int32_t pid; /* the exporter */
  uint64_t size;
  union {
    cudaIpcMemHandle_t ipc; /* CUDA_HANDLE_MAGIC */
    int32_t fd; /* CUDA_VMM_MAGIC: the exporter's descriptor of it */
  } u;
} cuda_handle_t;
_Static_assert(sizeof(cuda_handle_t) <= GIN_ARCH_HANDLE_BYTES, "handle size");

/* ---- stream.c ---- */

/* The device this process's communicators use (gin_arch_init sets it; -1
 * before), for the threads gin starts. */
void gin_cuda_device_set_(int dev);
int gin_cuda_device_(void);
/* This thread's non-blocking stream on gin's device (created at first use,
 * after making that device current). */
gin_result_t gin_cuda_thread_stream_(cudaStream_t *out);

/* ---- VMM windows (vmm.c), GIN_CUDA_VMM ---- */

/* Decides once per process whether shareable device memory comes from
 * cuMemCreate (1) or cudaMalloc (0); called by every gin_arch_init.
 * GIN_ERR_UNSUPPORTED where GIN_CUDA_VMM=1 asks for what this process
 * cannot do, GIN_ERR_INVALID for another value than -1, 0 or 1. */
gin_result_t gin_cuda_vmm_init_(void);
/* Whether allocations use cuMemCreate now. */
int gin_cuda_vmm_on_(void);
/* Whether GIN_CUDA_VMM=1 (not the automatic choice). */
int gin_cuda_vmm_forced_(void);
/* From now on allocations use cudaMalloc. */
void gin_cuda_vmm_off_(void);
/* size bytes (rounded up to the allocation granularity, h->size), not
 * zeroed, mapped read-write for this device; fills h's magic, size and fd.
 * *cookie_out is for gin_cuda_vmm_release_. */
gin_result_t gin_cuda_vmm_alloc_(size_t size, void **ptr_out, cuda_handle_t *h,
                                 void **cookie_out);
/* Maps the allocation a peer exported (h from its gin_cuda_vmm_alloc_),
 * duplicating its descriptor with pidfd_getfd. */
gin_result_t gin_cuda_vmm_import_(const cuda_handle_t *h, void **ptr_out,
                                  void **cookie_out);
/* Unmaps and releases an allocation or an import. */
void gin_cuda_vmm_release_(void *cookie);

#endif
