/*
 * Number formats of EP messages, written once for host and device code:
 * bf16 (the top half of an IEEE float, round to nearest even) and FP8
 * E4M3 (1 sign, 4 exponent bits with bias 7, 3 mantissa bits, no
 * infinities, max 448; round to nearest even, saturating), and the FP8
 * payload of a token: E4M3 bytes with one fp32 scale per GIN_EP_FP8_GROUP
 * channels (gin_ep_pack_payload). The EP kernels, the CPU reference and
 * anything that prepares or checks tokens the same way use these
 * functions, so casts match bit for bit.
 */
#ifndef GIN_EP_FORMAT_H
#define GIN_EP_FORMAT_H

#include <stdint.h>
#include <string.h>

#include "gin/device/arch.h"

#define GIN_EP_FP8_MAX 448.0f
#define GIN_EP_FP8_GROUP 128 /* channels per scale */
#define GIN_EP_AMAX_MIN 1e-4f
#define GIN_EP_PACK_BATCH 4 /* groups whose loads a warp issues at once */

GIN_HD_FN float gin_ep_bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
GIN_HD_FN uint32_t gin_ep_float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

GIN_HD_FN float gin_ep_bf16_to_float(uint16_t v) {
  return gin_ep_bits_float((uint32_t)v << 16);
}

GIN_HD_FN uint16_t gin_ep_float_to_bf16(float f) {
  uint32_t u = gin_ep_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

GIN_HD_FN float gin_ep_fp8_to_float(uint8_t v) {
  uint32_t s = (uint32_t)(v >> 7) << 31, e = (v >> 3) & 0xfu, m = v & 7u;
  if (e == 0xf && m == 7) return gin_ep_bits_float(s | 0x7fc00000u); /* NaN */
  if (e == 0) { /* subnormal: m * 2^-9 */
    float f = (float)m * (1.0f / 512.0f);
    return s ? -f : f;
  }
  return gin_ep_bits_float(s | ((e + 120u) << 23) | (m << 20));
}

/* Nearest even, saturating to +-448; NaN stays NaN. On GPUs that have it
 * (sm_89 and up) one conversion instruction, which rounds and saturates
 * the same way (the GPU tests compare every byte with the CPU reference);
 * NaN keeps its sign through the software path. */
GIN_HD_FN uint8_t gin_ep_float_to_fp8(float f) {
  uint8_t hw;
  if (gin_hw_float_to_fp8e4m3(f, &hw)) return hw;
  uint32_t u = gin_ep_float_bits(f);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint8_t)(sign | 0x7f);  /* NaN */
  if (a >= 0x43e00000u) return (uint8_t)(sign | 0x7e); /* >= 448: max */
  if (a < 0x3c800000u) { /* below 2^-6: subnormal, steps of 2^-9 */
    float q = gin_ep_bits_float(a) * 512.0f; /* exact */
    uint32_t n = (uint32_t)q;
    float r = q - (float)n;
    if (r > 0.5f || (r == 0.5f && (n & 1u))) n++;
    return (uint8_t)(sign | n); /* n == 8 is the smallest normal */
  }
  /* Normal: keep 3 mantissa bits of 23, nearest even. */
  uint32_t mant = a & 0x7fffffu, exp = (a >> 23) - 120u; /* 1..15 */
  uint32_t keep = mant >> 20, rest = mant & 0xfffffu;
  if (rest > 0x80000u || (rest == 0x80000u && (keep & 1u))) keep++;
  if (keep == 8) {
    keep = 0;
    exp++;
  }
  uint32_t v = (exp << 3) | keep;
  if (v > 0x7e) v = 0x7e; /* 0x7f is NaN: saturate at 448 */
  return (uint8_t)(sign | v);
}

/* The fp32 scale of an FP8 group whose amax (at least GIN_EP_AMAX_MIN)
 * is given, and in *inv the factor its channels are multiplied by before
 * the cast: scale = amax / 448 and inv = 448 / amax; with pow2, scale is
 * rounded up to a power of two, 2^ceil(log2(amax / 448)), and inv is its
 * exact inverse, so that the scale is its exponent alone (UE8M0). */
GIN_HD_FN float gin_ep_fp8_scale(float amax, int pow2, float *inv) {
  float s = amax / GIN_EP_FP8_MAX;
  if (!pow2) {
    *inv = GIN_EP_FP8_MAX / amax;
    return s;
  }
  uint32_t u = gin_ep_float_bits(s);
  /* amax >= 1e-4: e >= -22; an infinite amax saturates at 2^126 */
  int e = (int)((u >> 23) & 0xffu) - 127 + ((u & 0x7fffffu) != 0);
  e = e < 126 ? e : 126;
  *inv = gin_ep_bits_float((uint32_t)(127 - e) << 23);
  return gin_ep_bits_float((uint32_t)(127 + e) << 23);
}

/* A power-of-two scale as UE8M0: its biased exponent byte. */
GIN_HD_FN uint8_t gin_ep_scale_ue8m0(float scale) {
  return (uint8_t)(gin_ep_float_bits(scale) >> 23);
}

/* Four bf16 channels at in (8-byte aligned when vec), channel 0 first. */
GIN_HD_FN void gin_ep_load4(const uint16_t *in, int vec, uint16_t v[4]) {
  if (vec) {
    uint64_t w8 = *(const uint64_t *)in;
    memcpy(v, &w8, 8); /* little endian: channel 0 first */
  } else {
    for (int j = 0; j < 4; j++)
      v[j] = in[j];
  }
}
/* The largest of amax and |v[j]| (NaN channels do not count). */
GIN_HD_FN float gin_ep_amax4(const uint16_t v[4], float amax) {
  for (int j = 0; j < 4; j++) {
    float f = gin_ep_bf16_to_float(v[j]);
    f = f < 0 ? -f : f;
    amax = f > amax ? f : amax;
  }
  return amax;
}
/* A group's amax from each thread's part: the coop's largest, at least
 * GIN_EP_AMAX_MIN. */
GIN_DEVICE_FN float gin_ep_group_amax(gin_coop_t coop, float amax) {
  amax = gin_coop_max_f32(coop, amax);
  return amax > GIN_EP_AMAX_MIN ? amax : GIN_EP_AMAX_MIN;
}
/* fp8(v[j] * inv) for four channels, channel 0 in the low byte. */
GIN_HD_FN uint32_t gin_ep_fp8x4(const uint16_t v[4], float inv) {
  uint32_t w = 0;
  for (int j = 0; j < 4; j++)
    w |= (uint32_t)gin_ep_float_to_fp8(gin_ep_bf16_to_float(v[j]) * inv)
         << (8 * j);
  return w;
}

/* Part `part` of `parts` of a dispatch message's payload for one bf16 row
 * of `hidden` channels, written by a THREAD or WARP coop (parts coops
 * together write all of it): the row unchanged, or with fp8 the E4M3
 * bytes [hidden] then one fp32 scale per 128 channels
 * (amax = max(max |x|, GIN_EP_AMAX_MIN), scale and inv from
 * gin_ep_fp8_scale(amax, pow2), q = fp8(x * inv)). Each thread casts 4
 * channels of a group at a time; the coop reduces the group's amax; part
 * p takes groups p, p + parts, ... */
GIN_DEVICE_FN void gin_ep_pack_payload(const uint16_t *row, int hidden, int fp8,
                                       int pow2, char *out, gin_coop_t coop,
                                       int part, int parts) {
  int rank = gin_coop_rank(coop), size = gin_coop_size(coop);
  if (!fp8) {
    gin_copy_coop(out, (const char *)row, (size_t)hidden * 2,
                  part * size + rank, parts * size);
    return;
  }
  float *scales = (float *)(out + hidden);
  int vec = (((uintptr_t)row | (uintptr_t)out) & 7) == 0;
  int groups = hidden / GIN_EP_FP8_GROUP;
  if (vec && 4 * size == GIN_EP_FP8_GROUP) {
    /* A warp: one 4-channel word per thread per group, the words of
     * GIN_EP_PACK_BATCH groups loaded before any is used (their loads
     * overlap); the same arithmetic as below. */
    for (int g0 = part; g0 < groups; g0 += parts * GIN_EP_PACK_BATCH) {
      uint64_t w8[GIN_EP_PACK_BATCH];
      for (int b = 0; b < GIN_EP_PACK_BATCH; b++) {
        int grp = g0 + b * parts;
        w8[b] = grp < groups
                    ? *(const uint64_t *)(row + (size_t)grp * GIN_EP_FP8_GROUP +
                                          4 * rank)
                    : 0;
      }
      for (int b = 0; b < GIN_EP_PACK_BATCH; b++) {
        int grp = g0 + b * parts; /* the same in every thread */
        if (grp >= groups) break;
        uint16_t v[4];
        memcpy(v, &w8[b], 8); /* little endian: channel c first */
        float amax = gin_ep_group_amax(coop, gin_ep_amax4(v, 0.0f)), inv;
        float scale = gin_ep_fp8_scale(amax, pow2, &inv);
        *(uint32_t *)((uint8_t *)out + (size_t)grp * GIN_EP_FP8_GROUP +
                      4 * rank) = gin_ep_fp8x4(v, inv);
        if (rank == 0) scales[grp] = scale;
      }
    }
    return;
  }
  for (int grp = part; grp < groups; grp += parts) {
    const uint16_t *in = row + (size_t)grp * GIN_EP_FP8_GROUP;
    uint8_t *q = (uint8_t *)out + (size_t)grp * GIN_EP_FP8_GROUP;
    float amax = 0.0f;
    for (int c = 4 * rank; c < GIN_EP_FP8_GROUP; c += 4 * size) {
      uint16_t v[4];
      gin_ep_load4(in + c, vec, v);
      amax = gin_ep_amax4(v, amax);
    }
    amax = gin_ep_group_amax(coop, amax);
    float inv, scale = gin_ep_fp8_scale(amax, pow2, &inv);
    for (int c = 4 * rank; c < GIN_EP_FP8_GROUP; c += 4 * size) {
      uint16_t v[4];
      gin_ep_load4(in + c, vec, v);
      uint32_t w = gin_ep_fp8x4(v, inv);
      if (vec)
        *(uint32_t *)(q + c) = w;
      else
        memcpy(q + c, &w, 4); /* little endian: channel c first */
    }
    if (rank == 0) scales[grp] = scale;
  }
}

#endif
