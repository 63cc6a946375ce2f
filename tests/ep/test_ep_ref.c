/*
 * Self-check of the EP CPU reference (ep_ref.c) and of the number formats
 * it shares with the device (gin/ep_format.h), without the library:
 *  - bf16 and FP8 E4M3 casts against brute-force nearest-even searches;
 *  - the FP8 cast of rows stays within its rounding bound;
 *  - dispatch: every routed (rank, token, expert) lands exactly once, in
 *    (source rank, token) order, with a consistent layout;
 *  - combine: the shortcut the reference takes (expert outputs computed
 *    from the token's own row) equals gathering the outputs of the slots
 *    dispatch filled, bit for bit, and is close to a double computation.
 * Exit 0 pass, 1 fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep/ep_ref.h"
#include "gin/ep_format.h"

#define UNIT_CHECK_NO_GIN
#include "unit_check.h"

static uint64_t rng_s = 12345;
static uint64_t rnd(void) {
  uint64_t x = (rng_s += 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* ------------------------------------------------------------ formats */

static uint16_t bf16_brute(float f) {
  uint32_t u = gin_ep_float_bits(f);
  uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
  double dl = fabs((double)f - (double)gin_ep_bf16_to_float(lo));
  double dh = fabs((double)f - (double)gin_ep_bf16_to_float(hi));
  if ((lo & 0x7f80) == 0x7f80) return lo; /* inf/nan inputs not drawn */
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo & 1) ? hi : lo;
}

static void check_bf16(void) {
  for (int i = 0; i < 200000; i++) {
    /* finite floats of all magnitudes below the bf16 overflow */
    uint32_t u = (uint32_t)rnd();
    u = (u & 0x80000000u) | ((u & 0x7fffffffu) % 0x7f7f0000u);
    float f = gin_ep_bits_float(u);
    uint16_t a = gin_ep_float_to_bf16(f), b = bf16_brute(f);
    if (a != b) {
      CHECK(a == b, "bf16(%a) = 0x%04x, nearest even 0x%04x", (double)f, a, b);
      return;
    }
  }
  CHECK(gin_ep_float_to_bf16(1.0f) == 0x3f80, "bf16(1)");
  CHECK(gin_ep_bf16_to_float(0xc000) == -2.0f, "bf16 0xc000");
}

/* Nearest finite E4M3 code to |f| (ties to the even code), with f's sign. */
static uint8_t fp8_brute(float f) {
  double a = fabs((double)f);
  int best = 0;
  double bd = INFINITY;
  for (int c = 0; c <= 0x7e; c++) {
    double d = fabs(a - (double)gin_ep_fp8_to_float((uint8_t)c));
    if (d < bd || (d == bd && !(c & 1))) {
      bd = d;
      best = c;
    }
  }
  return (uint8_t)(best | (signbit(f) ? 0x80 : 0));
}

static void check_fp8(void) {
  for (int c = 0; c < 256; c++) {
    if ((c & 0x7f) == 0x7f) {
      CHECK(isnan(gin_ep_fp8_to_float((uint8_t)c)), "fp8 0x%02x is NaN", c);
      continue;
    }
    float f = gin_ep_fp8_to_float((uint8_t)c);
    CHECK(gin_ep_float_to_fp8(f) == c, "fp8 round trip of 0x%02x (%g)", c,
          (double)f);
  }
  CHECK(gin_ep_fp8_to_float(0x7e) == 448.0f, "fp8 max");
  CHECK(gin_ep_fp8_to_float(0x01) == 1.0f / 512.0f, "fp8 min subnormal");
  CHECK(gin_ep_float_to_fp8(1e9f) == 0x7e, "fp8 saturates");
  CHECK(gin_ep_float_to_fp8(-1e9f) == 0xfe, "fp8 saturates (negative)");
  for (int i = 0; i < 200000; i++) {
    /* magnitudes 2^-12 .. 2^10 plus exact halfway points */
    float f;
    if (i % 4 == 0) {
      int c = (int)(rnd() % 0x7e);
      f = 0.5f * (gin_ep_fp8_to_float((uint8_t)c) +
                  gin_ep_fp8_to_float((uint8_t)(c + 1)));
    } else {
      f = ldexpf((float)(rnd() >> 40) / 16777216.0f, (int)(rnd() % 23) - 12);
    }
    if (rnd() & 1) f = -f;
    uint8_t a = gin_ep_float_to_fp8(f), b = fp8_brute(f);
    if (a != b) {
      CHECK(a == b, "fp8(%a) = 0x%02x, nearest even 0x%02x", (double)f, a, b);
      return;
    }
  }
}

/* ---------------------------------------------------------- quantize */

/* Power-of-two scales: gin_ep_fp8_scale (the device's) against the
 * smallest power of two at or above amax / 448 found by doubling, at
 * exact powers times 448, next to them and across the range; its UE8M0
 * byte is the power's biased exponent. */
static void check_pow2_scale(void) {
  float amaxes[64];
  int n = 0;
  for (int k = -12; k <= 40; k += 4) {
    float a = ldexpf(448.0f, k);
    amaxes[n++] = a;
    amaxes[n++] = nextafterf(a, 0.0f);
    amaxes[n++] = nextafterf(a, 1e30f);
  }
  amaxes[n++] = GIN_EP_AMAX_MIN;
  amaxes[n++] = 1.75f; /* bf16 1.75 = 448 x 2^-8 */
  amaxes[n++] = 3.0e38f;
  for (int i = 0; i < n; i++) {
    float a = amaxes[i], inv = 0, want = ldexpf(1.0f, -40);
    int e = -40;
    while (want < a / GIN_EP_FP8_MAX) {
      want *= 2.0f;
      e++;
    }
    float got = gin_ep_fp8_scale(a, 1, &inv);
    CHECK(got == want && inv == 1.0f / want,
          "pow2 scale of amax %a: %a (inv %a), want %a", (double)a, (double)got,
          (double)inv, (double)want);
    CHECK(gin_ep_scale_ue8m0(got) == (uint8_t)(127 + e),
          "UE8M0 of %a: %u, want %d", (double)got, gin_ep_scale_ue8m0(got),
          127 + e);
    float plain = gin_ep_fp8_scale(a, 0, &inv);
    CHECK(plain == a / 448.0f && inv == 448.0f / a,
          "scale of amax %a: %a (inv %a)", (double)a, (double)plain,
          (double)inv);
  }
}

static void check_quantize(int pow2) {
  ep_ref_input_t in;
  CHECK(ep_ref_input_make(7, 0, 200, 256, 1, 4, EP_ROUTE_RANDOM, &in) == 0,
        "input");
  uint8_t q[256];
  float sc[2];
  int tiny = 0, large = 0;
  for (int t = 0; t < in.num_tokens; t++) {
    const uint16_t *row = in.x + (size_t)t * 256;
    ep_ref_quantize_row(row, 256, pow2, q, sc);
    for (int g = 0; g < 2; g++) {
      float amax = 0;
      for (int c = 0; c < 128; c++)
        amax = fmaxf(amax, fabsf(gin_ep_bf16_to_float(row[g * 128 + c])));
      if (amax < GIN_EP_AMAX_MIN) tiny++;
      if (amax > 16.0f) large++;
      float want = fmaxf(amax, GIN_EP_AMAX_MIN) / 448.0f;
      if (pow2) { /* the power of two at or above */
        int e;
        frexpf(want, &e);
        want =
            ldexpf(1.0f, e) / 2 >= want ? ldexpf(1.0f, e - 1) : ldexpf(1.0f, e);
      }
      CHECK(sc[g] == want, "token %d group %d: scale %g, want %g%s", t, g,
            (double)sc[g], (double)want, pow2 ? " (pow2)" : "");
      int top = 0;
      for (int c = 0; c < 128; c++) {
        float x = gin_ep_bf16_to_float(row[g * 128 + c]);
        float d = gin_ep_fp8_to_float(q[g * 128 + c]) * sc[g];
        if ((q[g * 128 + c] & 0x7f) == 0x7e) top = 1;
        if (!(fabsf(d - x) <= fabsf(x) * 0.0626f + sc[g] * 0.001f)) {
          CHECK(0, "token %d channel %d: %g cast to %g (scale %g)", t,
                g * 128 + c, (double)x, (double)d, (double)sc[g]);
          ep_ref_input_free(&in);
          return;
        }
      }
      /* With a power-of-two scale the largest channel lands in
       * (224, 448]. */
      CHECK(pow2 || top || amax < GIN_EP_AMAX_MIN,
            "token %d group %d: no channel at 448", t, g);
    }
  }
  CHECK(tiny > 0 && large > 0, "rows below AMAX_MIN (%d) and large (%d)", tiny,
        large);
  ep_ref_input_free(&in);
}

/* ---------------------------------------------------------- pipeline */

/* Where (rank, token) landed for expert e: slot index, or -1. */
static int find_slot(const ep_ref_recv_t *r, int le, int src, int t) {
  for (int j = 0; j < r->count[le]; j++) {
    size_t s = (size_t)le * (size_t)r->slots + (size_t)j;
    if (r->src_rank[s] == src && r->src_token[s] == t) return j;
  }
  return -1;
}

static void check_pipeline(int R, int E, int K, int M, int fp8,
                           ep_route_t route, uint64_t seed) {
  int H = 256, L = E / R;
  ep_ref_input_t *in = (ep_ref_input_t *)calloc((size_t)R, sizeof *in);
  ep_ref_recv_t *rv = (ep_ref_recv_t *)calloc((size_t)R, sizeof *rv);
  uint16_t **y = (uint16_t **)calloc((size_t)R, sizeof *y);
  long routed = 0, delivered = 0, skew_want = 0;
  for (int r = 0; r < R; r++) {
    int T = (M * (r + 2) / 3 + r) % (M + 1);
    CHECK(ep_ref_input_make(seed, r, T, H, K, E, route, &in[r]) == 0, "input");
    for (int i = 0; i < T * K; i++)
      routed += in[r].topk_idx[i] >= 0;
    skew_want += T;
  }
  for (int me = 0; me < R; me++) {
    CHECK(ep_ref_recv_alloc(L, R, M, H, fp8, &rv[me]) == 0, "recv");
    ep_ref_dispatch(in, R, me, &rv[me]);
    ep_ref_recv_t *r = &rv[me];
    for (int le = 0; le < L; le++) {
      int e = me * L + le, n = r->count[le];
      delivered += n;
      if (route == EP_ROUTE_SKEWED && e == 0)
        CHECK(n == skew_want, "skewed: expert 0 got %d, want %ld", n,
              skew_want);
      int off = 0;
      for (int s = 0; s < R; s++) {
        const int32_t *lay = r->layout + ((size_t)le * (size_t)R + s) * 2;
        CHECK(lay[0] == off, "layout offset");
        for (int j = lay[0]; j < lay[0] + lay[1]; j++)
          CHECK(r->src_rank[(size_t)le * r->slots + j] == s,
                "slot %d of expert %d not from rank %d", j, e, s);
        off += lay[1];
      }
      CHECK(off == n, "layout counts sum to %d, count %d", off, n);
      for (int j = 0; j < n; j++) {
        size_t sl = (size_t)le * (size_t)r->slots + (size_t)j;
        int s = r->src_rank[sl], t = r->src_token[sl];
        CHECK(s >= 0 && s < R && t >= 0 && t < in[s].num_tokens, "slot source");
        if (j > 0) {
          int ps = r->src_rank[sl - 1], pt = r->src_token[sl - 1];
          CHECK(ps < s || (ps == s && pt < t), "slots out of order");
        }
        int hits = 0;
        for (int k = 0; k < K; k++)
          hits += in[s].topk_idx[(size_t)t * K + k] == e;
        CHECK(hits == 1, "token (%d, %d) routes to %d %d times", s, t, e, hits);
        const uint16_t *row = in[s].x + (size_t)t * H;
        if (!fp8)
          CHECK(!memcmp((uint16_t *)r->x + sl * H, row, (size_t)H * 2),
                "bf16 row differs");
      }
    }
    y[me] = (uint16_t *)calloc((size_t)L * r->slots * H, sizeof(uint16_t));
    ep_ref_experts(r, me, y[me]);
  }
  CHECK(delivered == routed, "delivered %ld of %ld routed", delivered, routed);
  /* Combine by gathering from the slots, against the reference. */
  char msg[256];
  for (int me = 0; me < R; me++) {
    int T = in[me].num_tokens;
    uint16_t *want = (uint16_t *)calloc((size_t)T * H + 1, 2);
    uint16_t *got = (uint16_t *)calloc((size_t)T * H + 1, 2);
    ep_ref_combine(&in[me], fp8, want);
    int unrouted = 0;
    for (int t = 0; t < T; t++) {
      const int32_t *idx = in[me].topk_idx + (size_t)t * K;
      const float *w = in[me].weights + (size_t)t * K;
      int any = 0;
      for (int c = 0; c < H; c++) {
        float acc = 0.0f;
        double dacc = 0.0;
        for (int k = 0; k < K; k++) {
          if (idx[k] < 0) continue;
          any = 1;
          int e = idx[k], owner = e / L, le = e % L;
          int j = find_slot(&rv[owner], le, me, t);
          if (j < 0) {
            CHECK(0, "token %d of rank %d not at expert %d", t, me, e);
            goto out;
          }
          float yv = gin_ep_bf16_to_float(
              y[owner][((size_t)le * rv[owner].slots + j) * H + c]);
          acc += w[k] * yv;
          dacc += (double)w[k] * (double)yv;
        }
        got[(size_t)t * H + c] = gin_ep_float_to_bf16(acc);
        CHECK(ep_ref_close((float)dacc,
                           gin_ep_bf16_to_float(want[(size_t)t * H + c])),
              "rank %d token %d channel %d: %g vs double %g", me, t, c,
              (double)gin_ep_bf16_to_float(want[(size_t)t * H + c]), dacc);
      }
      if (!any) {
        unrouted++;
        for (int c = 0; c < H; c++)
          CHECK(want[(size_t)t * H + c] == 0, "unrouted row not zero");
      }
    }
    if (route == EP_ROUTE_MASKED && T >= 16)
      CHECK(unrouted > 0, "masked: no token routed nowhere (rank %d)", me);
    CHECK(memcmp(want, got, (size_t)T * H * 2) == 0,
          "rank %d: gathered combine differs from the reference", me);
    CHECK(ep_ref_check_out(want, got, T, H, msg, sizeof msg) == 0, "%s", msg);
  out:
    free(want);
    free(got);
  }
  /* The checker finds a flipped byte and names it. */
  if (rv[0].count[0] > 0) {
    ep_ref_recv_t copy;
    CHECK(ep_ref_recv_alloc(L, R, M, H, fp8, &copy) == 0, "recv");
    ep_ref_dispatch(in, R, 0, &copy);
    CHECK(ep_ref_check_recv(&rv[0], &copy, 0, msg, sizeof msg) == 0, "%s", msg);
    ((uint8_t *)copy.x)[fp8 ? 1 : 3] ^= 1; /* channel 1 */
    CHECK(ep_ref_check_recv(&rv[0], &copy, 0, msg, sizeof msg) == 1 &&
              strstr(msg, "slot 0 channel 1") != NULL,
          "flipped byte: '%s'", msg);
    ep_ref_recv_free(&copy);
  }
  for (int r = 0; r < R; r++) {
    ep_ref_input_free(&in[r]);
    ep_ref_recv_free(&rv[r]);
    free(y[r]);
  }
  free(in);
  free(rv);
  free(y);
}

int main(void) {
  check_bf16();
  check_fp8();
  check_pow2_scale();
  check_quantize(0);
  check_quantize(1);
  const int ranks[] = {1, 2, 3, 8};
  const int topks[] = {1, 2, 4, 8};
  uint64_t seed = 1;
  for (int ri = 0; ri < 4; ri++)
    for (int ki = 0; ki < 4; ki++)
      for (int route = 0; route < 3; route++)
        for (int fp8 = 0; fp8 <= EP_REF_FP8_POW2; fp8++) {
          int R = ranks[ri], E = R * 4, K = topks[ki];
          if (K > E) continue;
          check_pipeline(R, E, K, 32, fp8, (ep_route_t)route, seed++);
        }
  printf("ep reference self-check: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
