/*
 * cuda target: the device this process's communicators use, and the
 * non-blocking stream each thread gin runs copies on. Below arch_cuda.c
 * and vmm.c, which both use them.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "arch/cuda/cuda_arch.h"

/* The device this process's communicators use, for threads gin starts. */
static int arch_device = -1;

void gin_cuda_device_set_(int dev) { arch_device = dev; }
int gin_cuda_device_(void) { return arch_device; }

/* Each thread copies on its own non-blocking stream: a copy on the legacy
 * default stream would wait for a kernel of this process that is itself
 * waiting for the copy (the proxy's case). */
static pthread_key_t stream_key;
static pthread_once_t stream_once = PTHREAD_ONCE_INIT;
static void stream_destroy(void *s) { cudaStreamDestroy((cudaStream_t)s); }
static void stream_key_make(void) {
  pthread_key_create(&stream_key, stream_destroy);
}

gin_result_t gin_cuda_thread_stream_(cudaStream_t *out) {
  pthread_once(&stream_once, stream_key_make);
  cudaStream_t s = (cudaStream_t)pthread_getspecific(stream_key);
  if (!s) {
    int cur = -1;
    if (arch_device >= 0 && cudaGetDevice(&cur) == cudaSuccess &&
        cur != arch_device)
      GIN_CUDA_CALL(cudaSetDevice(arch_device), "cudaSetDevice (gin thread)");
    GIN_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags");
    pthread_setspecific(stream_key, s);
  }
  *out = s;
  return GIN_SUCCESS;
}
