/*
 * One-off probe (fourteenth session), not part of the build: does the
 * kind of allocation change a block copy's bandwidth when the copies
 * spread over gigabytes? gin-perf's bw over an 8.4 GB window runs at
 * ~1390 GB/s against ~1970 over 2.1 GB, and a library-free copy through
 * the same memory is no faster; NVSHMEM's heap (one VMM mapping) kept
 * ~1500 there. This copies bw's pattern (132 blocks of 512 threads, each
 * block its own run of `bytes`-sized regions, a block barrier before
 * each region, 16-byte loads and stores) from one buffer to another of
 * the same kind, in one process:
 *   malloc: cudaMalloc (what gin's windows are)
 *   vmm:    cuMemCreate of the whole size, mapped into a reserved range
 *           (what NVSHMEM's heap is)
 * Build and run on the GPU machine:
 *   nvcc -O2 -arch=sm_90 -o vmm_probe vmm_probe.cu -lcuda && ./vmm_probe
 * k_copy4 (second pass) keeps four loads in flight, as gin_copy_coop.
 * Prints: kind, copy, window GB, message bytes, messages per block, GB/s
 * (median of 5 timed launches after one warm-up).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                 \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define CKD(x)                                                                 \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      fprintf(stderr, "%s: %d\n", #x, (int)r_);                                \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

__global__ void k_copy(const int4 *src, int4 *dst, size_t bytes, int iters) {
  size_t n = bytes / 16;
  for (int i = 0; i < iters; i++) {
    size_t base = ((size_t)blockIdx.x * iters + i) * n;
    __syncthreads();
    for (size_t k = threadIdx.x; k < n; k += blockDim.x)
      dst[base + k] = src[base + k];
  }
}

/* The same with four loads in flight per thread before their stores, as
 * gin_copy_coop copies. */
__global__ void k_copy4(const int4 *src, int4 *dst, size_t bytes, int iters) {
  size_t n = bytes / 16, s = blockDim.x;
  for (int i = 0; i < iters; i++) {
    size_t base = ((size_t)blockIdx.x * iters + i) * n;
    const int4 *vs = src + base;
    int4 *vd = dst + base;
    __syncthreads();
    size_t k = threadIdx.x;
    for (; k + 3 * s < n; k += 4 * s) {
      int4 a = vs[k], b = vs[k + s], c = vs[k + 2 * s], d = vs[k + 3 * s];
      vd[k] = a;
      vd[k + s] = b;
      vd[k + 2 * s] = c;
      vd[k + 3 * s] = d;
    }
    for (; k < n; k += s) vd[k] = vs[k];
  }
}

static void *alloc_vmm(size_t size) {
  CUmemAllocationProp p = {};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  size_t g = 0;
  CKD(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  size = (size + g - 1) / g * g;
  CUmemGenericAllocationHandle h;
  CKD(cuMemCreate(&h, size, &p, 0));
  CUdeviceptr va;
  CKD(cuMemAddressReserve(&va, size, 0, 0, 0));
  CKD(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc a = {};
  a.location = p.location;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CKD(cuMemSetAccess(va, size, &a, 1));
  return (void *)va;
}

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  const int grid = 132, threads = 512;
  const size_t windows[2] = {(size_t)grid << 24, (size_t)grid << 26};
  const size_t sizes[4] = {1 << 16, 1 << 20, 1 << 24, 1 << 26};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int kind = 0; kind < 2; kind++) {
    for (int w = 0; w < 2; w++) {
      size_t win = windows[w];
      void *src, *dst;
      if (kind == 0) {
        CK(cudaMalloc(&src, win));
        CK(cudaMalloc(&dst, win));
      } else {
        src = alloc_vmm(win);
        dst = alloc_vmm(win);
      }
      CK(cudaMemset(src, 1, win));
      CK(cudaMemset(dst, 0, win));
      for (int q = 0; q < 8; q++) {
        int s = q % 4, deep = q / 4;
        size_t bytes = sizes[s];
        size_t fit = win / ((size_t)grid * bytes);
        int iters = fit > 100 ? 100 : (int)fit;
        if (iters < 1) continue;
        float t[5];
        for (int r = -1; r < 5; r++) {
          CK(cudaEventRecord(e0));
          if (deep)
            k_copy4<<<grid, threads>>>((const int4 *)src, (int4 *)dst, bytes, iters);
          else
            k_copy<<<grid, threads>>>((const int4 *)src, (int4 *)dst, bytes, iters);
          CK(cudaEventRecord(e1));
          CK(cudaEventSynchronize(e1));
          if (r >= 0) CK(cudaEventElapsedTime(&t[r], e0, e1));
        }
        qsort(t, 5, sizeof t[0], cmp);
        double gbps = (double)grid * iters * bytes / (t[2] * 1e-3) / 1e9;
        printf("%s %s window %.1f GB msg %zu iters %d GB/s %.0f\n",
               kind ? "vmm" : "malloc", deep ? "copy4" : "copy1", win / 1e9,
               bytes, iters, gbps);
      }
      if (kind == 0) {
        CK(cudaFree(src));
        CK(cudaFree(dst));
      } else {
        /* the process exits soon; the mappings go with it */
      }
    }
  }
  return 0;
}
