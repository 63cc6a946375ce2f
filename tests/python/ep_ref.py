"""The EP reference in NumPy, one process: every rank's inputs from
(seed, rank), what dispatch must deliver to a rank, a stand-in expert, and
what combine must return. The rules are gin_ep.h's (and DeepEP's):

- rank r owns experts [r * L, (r + 1) * L); a rank's arrivals at local
  expert le are (source rank, token, k) in that order;
- fp8: per 128 channels amax = max(max |x|, 1e-4), scale = amax / 448
  (with round_scale: the power of two at or above it), q = e4m3(x / scale)
  rounded to nearest even, saturating at 448;
- the stand-in expert e returns bf16(deq(x) * (e + 1) / 8);
- combine: out[t] = bf16(sum over routed k, in order, of
  w[t][k] * y_k[t]) in fp32; the device may fuse multiply-adds, so outputs
  compare within |got - want| <= |want| / 128 + 1e-3.
"""

import numpy as np

AMAX_MIN = np.float32(1e-4)
FP8_MAX = np.float32(448.0)


def bf16_to_f32(u):
    return (np.asarray(u, np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(f):
    """Round to nearest even (no NaN in these tests)."""
    u = np.asarray(f, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def e4m3_round(v):
    """The E4M3 value nearest to float32 v (ties to even), saturating at
    +-448: exact arithmetic on powers of two, so it matches the casts."""
    v = np.clip(np.asarray(v, np.float32), -FP8_MAX, FP8_MAX)
    a = np.abs(v)
    _, e = np.frexp(a)                      # a = m * 2^e, m in [0.5, 1)
    e = np.maximum(e - 1, -6)               # normal exponent; below: 2^-6
    q = np.ldexp(np.float32(1), e - 3).astype(np.float32)  # 3 mantissa bits
    r = (np.round(a / q) * q).astype(np.float32)
    return np.minimum(r, FP8_MAX) * np.sign(v)


# E4M3 byte -> value (no NaN byte is ever produced by a cast above).
_FP8 = np.zeros(256, np.float32)
for b in range(256):
    s, ex, m = b >> 7, (b >> 3) & 15, b & 7
    val = m / 512.0 if ex == 0 else (1 + m / 8.0) * 2.0 ** (ex - 7)
    _FP8[b] = -val if s else val


def fp8_bytes_to_f32(b):
    return _FP8[np.asarray(b, np.uint8)]


def quantize(x_u16, round_scale):
    """(q values float32 [.., H], scales float32 [.., H/128]) of bf16 rows."""
    f = bf16_to_f32(x_u16)
    g = f.reshape(*f.shape[:-1], -1, 128)
    amax = np.maximum(np.abs(g).max(axis=-1), AMAX_MIN).astype(np.float32)
    scale = (amax / FP8_MAX).astype(np.float32)
    inv = (FP8_MAX / amax).astype(np.float32)
    if round_scale:
        m, e = np.frexp(scale)
        e = np.where(m == 0.5, e - 1, e)
        scale = np.ldexp(np.float32(1), e).astype(np.float32)
        inv = np.ldexp(np.float32(1), -e).astype(np.float32)
    q = e4m3_round((g * inv[..., None]).astype(np.float32))
    return q.reshape(f.shape), scale


def inputs(seed, rank, T, H, K, E, masked=True):
    """Rank `rank`'s x [T, H] (bf16 bits), topk_idx [T, K] int64 and
    weights [T, K] float32: rows of several magnitudes (some below the
    fp8 scale floor), K distinct experts a token, some entries -1."""
    rng = np.random.default_rng([seed, rank])
    mag = rng.choice(np.array([1.0, 30.0, 1e-6, 0.05], np.float32), size=T)
    x = f32_to_bf16(rng.standard_normal((T, H)).astype(np.float32) *
                    mag[:, None])
    idx = np.stack([rng.permutation(E)[:K] for _ in range(T)]) \
        if T else np.zeros((0, K), np.int64)
    idx = idx.astype(np.int64)
    if masked and T:
        idx[rng.random((T, K)) < 0.2] = -1
    w = rng.random((T, K)).astype(np.float32)
    return x, idx, w


def arrivals(all_idx, me, L):
    """For each local expert of rank me: [(source, token, k), ...]."""
    out = [[] for _ in range(L)]
    for src, idx in enumerate(all_idx):
        for t in range(idx.shape[0]):
            for k in range(idx.shape[1]):
                e = int(idx[t, k])
                if e >= 0 and e // L == me:
                    out[e % L].append((src, t, k))
    return out


def deq_row(x_u16, fp8, round_scale):
    """What an expert sees of a bf16 row sent with (fp8, round_scale)."""
    if not fp8:
        return bf16_to_f32(x_u16)
    q, s = quantize(x_u16, round_scale)
    return (q.reshape(-1, 128) * s.reshape(-1, 1)).reshape(q.shape)


def expert(deq, e):
    return f32_to_bf16(deq * np.float32((e + 1) / 8.0))


def combine(x, idx, w, fp8, round_scale):
    """out [T, H] bf16 bits for one rank's own tokens."""
    T, H = x.shape
    out = np.zeros((T, H), np.uint16)
    for t in range(T):
        d = deq_row(x[t], fp8, round_scale)
        acc = np.zeros(H, np.float32)
        for k in range(idx.shape[1]):
            e = int(idx[t, k])
            if e >= 0:
                acc = (acc + w[t, k] * bf16_to_f32(expert(d, e))).astype(
                    np.float32)
        out[t] = f32_to_bf16(acc)
    return out


def close(want_u16, got_u16):
    """Indices where got is outside |got - want| <= |want| / 128 + 1e-3."""
    a, b = bf16_to_f32(want_u16), bf16_to_f32(got_u16)
    return np.argwhere(~(np.abs(a - b) <= np.abs(a) / 128 + 1e-3))
