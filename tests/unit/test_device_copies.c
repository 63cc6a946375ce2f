/*
 * The GPU's copy helpers (gin/device/arch.h: gin_copy_coop, and
 * gin_small_load / gin_small_store, the put's register path), compiled
 * here for the CPU with GIN_UNIT_TEST_DEVICE_COPIES (the host target's own
 * versions are memcpy): every coop rank's part run in turn for coops of 1
 * to 512 threads, sizes 0-700 bytes at every source and destination
 * alignment mod 16, each against memcpy, with the bytes around the
 * destination checked untouched. The index arithmetic (widths, the last
 * vectors loaded before they are stored, the partial parts) is the same
 * code the GPU runs; what the CPU cannot show is the GPU's memory order.
 * Exit 0 pass, 1 fail.
 */
#define GIN_UNIT_TEST_DEVICE_COPIES 1
#define UNIT_CHECK_NO_GIN 1
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The CUDA vector type the helpers use, as vector_types.h defines it. */
typedef struct {
  _Alignas(16) unsigned x;
  unsigned y, z, w;
} uint4;
static uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  uint4 v = {x, y, z, w};
  return v;
}

#include "gin/device/arch.h"

#include "unit_check.h"

#define PAD 32
#define MAXN 700
static _Alignas(16) unsigned char src[MAXN + 2 * PAD];
static _Alignas(16) unsigned char dst[MAXN + 2 * PAD];
static _Alignas(16) unsigned char ref[MAXN + 2 * PAD];

static void fill(size_t n, int sa, int da) {
  for (size_t i = 0; i < sizeof src; i++) {
    src[i] = (unsigned char)(i * 7 + 3 + n);
    dst[i] = ref[i] = 0xee;
  }
  memcpy(ref + PAD + da, src + PAD + sa, n);
}

int main(void) {
  static const int coops[] = {1, 2, 3, 5, 32, 33, 128, 512};
  long cases = 0;
  for (size_t n = 0; n <= MAXN; n++)
    for (int sa = 0; sa < 16; sa++)
      for (int da = 0; da < 16; da++) {
        for (size_t k = 0; k < sizeof coops / sizeof coops[0]; k++) {
          int s = coops[k];
          fill(n, sa, da);
          for (int r = 0; r < s; r++)
            gin_copy_coop((char *)dst + PAD + da, (const char *)src + PAD + sa,
                          n, r, s);
          CHECK(memcmp(dst, ref, sizeof dst) == 0,
                "gin_copy_coop n %zu src +%d dst +%d coop %d", n, sa, da, s);
          cases++;
        }
        if (n > GIN_SMALL_BYTES) continue;
        fill(n, sa, da);
        gin_small_t v = gin_small_load((const char *)src + PAD + sa, n);
        gin_small_store((char *)dst + PAD + da, v, n);
        CHECK(memcmp(dst, ref, sizeof dst) == 0,
              "gin_small_load/store n %zu src +%d dst +%d", n, sa, da);
        cases++;
      }
  printf("device copies: %ld cases, %d failed\n", cases, failures);
  return failures ? 1 : 0;
}
