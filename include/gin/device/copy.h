/*
 * Copies on both targets: 16-byte stores, small copies held in registers,
 * a cooperative group's bulk copies (plain, batched, split into two
 * destinations) and the FP8 cast.
 */
#ifndef GIN_DEVICE_COPY_H
#define GIN_DEVICE_COPY_H

#include "gin/device/impl/arch__types.h"

/* Plain (weak) store of 16 bytes from src to dst, both 16-byte aligned:
 * one 128-bit store on the GPU (one transaction across PCIe). */
#if GIN_ARCH_CUDA
GIN_DEVICE_FN void gin_store16(void *dst, const void *src) {
  *(uint4 *)dst = *(const uint4 *)src;
}
#else
GIN_DEVICE_FN void gin_store16(void *dst, const void *src) {
  memcpy(dst, src, 16);
}
#endif

/* ---------------------------------------------------------- small copy */

/* Up to GIN_SMALL_BYTES bytes held in registers (byte i at bits
 * 8 (i % 8) of w[i / 8]). A small put (up to GIN_SMALL_BYTES for a lone
 * thread, GIN_SMALL_COOP_BYTES per thread of a warp or block: gin_put)
 * reads its source into these as soon as it may, so that the read's
 * memory latency passes while the call finds its destination, then
 * stores them. */
#define GIN_SMALL_BYTES 64
#define GIN_SMALL_COOP_BYTES 16
typedef struct gin_small {
  uint64_t w[GIN_SMALL_BYTES / 8];
} gin_small_t;

#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
/* Reads n <= GIN_SMALL_BYTES bytes at src: 16- or 8-byte loads where the
 * size and alignment allow them (all in flight), else independent byte
 * loads. Words past the first n bytes are left unset (gin_small_store
 * reads none of them; zeroing them cost a lone thread's put eight
 * instructions before its load). */
GIN_DEVICE_FN gin_small_t gin_small_load(const char *src, size_t n) {
  gin_small_t v;
#if !GIN_ARCH_CUDA
  /* The unit test's host build: poison, not zeros (its compiler warns
   * about unset words, and zeros would hide a store that read one). */
  memset(&v, 0xa5, sizeof v);
#endif
  uintptr_t a = (uintptr_t)src;
  if (n == 8 && (a & 7) == 0) {
    v.w[0] = *(const uint64_t *)src;
  } else if ((n & 15) == 0 && (a & 15) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 16; q++) {
      if (16 * (size_t)q >= n) break;
      uint4 x = ((const uint4 *)src)[q];
      v.w[2 * q] = x.x | (uint64_t)x.y << 32;
      v.w[2 * q + 1] = x.z | (uint64_t)x.w << 32;
    }
  } else if ((n & 7) == 0 && (a & 7) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 8; q++) {
      if (8 * (size_t)q >= n) break;
      v.w[q] = ((const uint64_t *)src)[q];
    }
  } else if (n == 4 && (a & 3) == 0) {
    v.w[0] = *(const uint32_t *)src;
  } else {
#pragma unroll
    for (int i = 0; i < GIN_SMALL_BYTES; i++) {
      if ((size_t)i >= n) break;
      uint64_t b = (uint64_t)(unsigned char)src[i] << (8 * (i % 8));
      v.w[i / 8] = i % 8 ? v.w[i / 8] | b : b;
    }
  }
  return v;
}
/* Writes the first n bytes of v at dst (as gin_small_load reads them). */
GIN_DEVICE_FN void gin_small_store(char *dst, gin_small_t v, size_t n) {
  uintptr_t a = (uintptr_t)dst;
  if (n == 8 && (a & 7) == 0) {
    *(uint64_t *)dst = v.w[0];
  } else if ((n & 15) == 0 && (a & 15) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 16; q++) {
      if (16 * (size_t)q >= n) break;
      ((uint4 *)dst)[q] = make_uint4(
          (uint32_t)v.w[2 * q], (uint32_t)(v.w[2 * q] >> 32),
          (uint32_t)v.w[2 * q + 1], (uint32_t)(v.w[2 * q + 1] >> 32));
    }
  } else if ((n & 7) == 0 && (a & 7) == 0) {
#pragma unroll
    for (int q = 0; q < GIN_SMALL_BYTES / 8; q++) {
      if (8 * (size_t)q >= n) break;
      ((uint64_t *)dst)[q] = v.w[q];
    }
  } else if (n == 4 && (a & 3) == 0) {
    *(uint32_t *)dst = (uint32_t)v.w[0];
  } else {
#pragma unroll
    for (int i = 0; i < GIN_SMALL_BYTES; i++) {
      if ((size_t)i >= n) break;
      dst[i] = (char)(v.w[i / 8] >> (8 * (i % 8)));
    }
  }
}
#else
/* The host target's kernels are CPU threads: the bytes are copied as
 * they are (the layout above on a little-endian host; only store reads
 * what load wrote). */
GIN_DEVICE_FN gin_small_t gin_small_load(const char *src, size_t n) {
  gin_small_t v = {{0}};
  memcpy(v.w, src, n);
  return v;
}
GIN_DEVICE_FN void gin_small_store(char *dst, gin_small_t v, size_t n) {
  memcpy(dst, v.w, n);
}
#endif

/* ---------------------------------------------------------- bulk copy */

/* Copies n bytes with the threads of a coop (rank r of size s), using the
 * widest accesses the alignment allows. */
/* No restrict on the GPU: with `const restrict` the compiler may read the
 * source through the non-coherent cache, which can miss what other threads
 * of the kernel wrote into it just before the put. */
#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
GIN_DEVICE_FN void gin_copy_coop(char *dst, const char *src, size_t n, int r,
                                 int s) {
  size_t head = 0;
  if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
    const uint4 *vs = (const uint4 *)src;
    uint4 *vd = (uint4 *)dst;
    size_t nv = n / 16;
    size_t i = (size_t)r;
    for (; i + 3 * (size_t)s < nv; i += 4 * (size_t)s) {
      uint4 a = vs[i], b = vs[i + s], c = vs[i + 2 * s], d = vs[i + 3 * s];
      vd[i] = a;
      vd[i + s] = b;
      vd[i + 2 * s] = c;
      vd[i + 3 * s] = d;
    }
    /* The last (at most three) loaded before any is stored: a store
     * between two loads keeps the second waiting (the compiler cannot
     * tell the buffers apart), one memory latency each. */
    if (i + (size_t)s < nv) {
      uint4 a = vs[i], b = vs[i + s];
      if (i + 2 * (size_t)s < nv) {
        uint4 c = vs[i + 2 * s];
        vd[i + 2 * s] = c;
      }
      vd[i] = a;
      vd[i + s] = b;
    } else if (i < nv) {
      vd[i] = vs[i];
    }
    head = nv * 16;
  }
  if ((((uintptr_t)dst | (uintptr_t)src | head) & 7) == 0 && n - head >= 8) {
    /* What 16-byte steps left, or all of it when only 8-aligned (8-byte
     * puts: one store, not eight). */
    const uint64_t *vs = (const uint64_t *)(src + head);
    uint64_t *vd = (uint64_t *)(dst + head);
    size_t nv = (n - head) / 8;
    for (size_t i = (size_t)r; i < nv; i += (size_t)s)
      vd[i] = vs[i];
    head += nv * 8;
  }
  for (size_t i = head + (size_t)r; i < n; i += (size_t)s)
    dst[i] = src[i];
}
#else
GIN_DEVICE_FN void gin_copy_coop(char *GIN_RESTRICT dst,
                                 const char *GIN_RESTRICT src, size_t n, int r,
                                 int s) {
  memcpy(dst, src, n);
}
#endif

/* Copies n bytes with the threads of a coop (rank r of size s) like
 * gin_copy_coop, for long rows: where both pointers and n are multiples
 * of 16, each thread loads GIN_COPY_BATCH vectors before it stores any
 * (a 14 KiB row in four memory round trips where gin_copy_coop takes
 * seven), at the cost of their registers. */
#define GIN_COPY_BATCH 8
#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
GIN_DEVICE_FN void gin_copy_coop_batched(char *dst, const char *src, size_t n,
                                         int r, int s) {
  if ((((uintptr_t)dst | (uintptr_t)src | n) & 15) == 0) {
    const uint4 *vs = (const uint4 *)src;
    uint4 *vd = (uint4 *)dst;
    size_t nv = n / 16;
    for (size_t i0 = (size_t)r; i0 < nv; i0 += GIN_COPY_BATCH * (size_t)s) {
      uint4 v[GIN_COPY_BATCH];
      for (int b = 0; b < GIN_COPY_BATCH; b++) {
        size_t i = i0 + (size_t)b * (size_t)s;
        if (i < nv) v[b] = vs[i];
      }
      for (int b = 0; b < GIN_COPY_BATCH; b++) {
        size_t i = i0 + (size_t)b * (size_t)s;
        if (i < nv) vd[i] = v[b];
      }
    }
    return;
  }
  gin_copy_coop(dst, src, n, r, s);
}
#else
GIN_DEVICE_FN void gin_copy_coop_batched(char *dst, const char *src, size_t n,
                                         int r, int s) {
  gin_copy_coop(dst, src, n, r, s);
}
#endif

/* Copies n bytes from src with the threads of a coop: the first nx to dx,
 * the rest to ds (a row and what follows it, such as its scales). Where
 * the rest is at most one 16-byte vector a thread and every pointer and
 * length a multiple of 16, each thread loads its vector of the rest
 * before the row's copy and stores it after, so the two round trips
 * overlap; else two copies. */
#if GIN_ARCH_CUDA || defined(GIN_UNIT_TEST_DEVICE_COPIES)
GIN_DEVICE_FN void gin_copy_coop_split(char *dx, size_t nx, char *ds,
                                       const char *src, size_t n, int r,
                                       int s) {
  /* Not a branch around the row's copy: knowing the row aligned, the
   * compiler specialises that copy into one that takes more registers. */
  size_t ns = (n - nx) / 16;
  int pre = (((uintptr_t)ds | (uintptr_t)(src + nx) | (n - nx)) & 15) == 0 &&
            ns <= (size_t)s;
  uint4 v;
  if (pre && (size_t)r < ns) v = ((const uint4 *)(src + nx))[r];
  gin_copy_coop(dx, src, nx, r, s);
  if (pre && (size_t)r < ns) ((uint4 *)ds)[r] = v;
  if (!pre && n > nx) gin_copy_coop(ds, src + nx, n - nx, r, s);
}
#else
GIN_DEVICE_FN void gin_copy_coop_split(char *dx, size_t nx, char *ds,
                                       const char *src, size_t n, int r,
                                       int s) {
  gin_copy_coop(dx, src, nx, r, s);
  if (n > nx) gin_copy_coop(ds, src + nx, n - nx, r, s);
}
#endif

/* ---------------------------------------------------------- fp8 cast */

/* Converts f to FP8 E4M3 (nearest even, saturating to +-448) in one
 * instruction where the GPU has one (sm_89 and up): 1 and *out; else 0
 * (the caller converts in software, the same way, NaN's sign kept). */
GIN_HD_FN int gin_hw_float_to_fp8e4m3(float f, uint8_t *out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (f == f) {
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"
        : "=h"(r)
        : "f"(0.0f), "f"(f));
    *out = (uint8_t)(r & 0xffu);
    return 1;
  }
#endif
  (void)f, (void)out;
  return 0;
}
#endif
