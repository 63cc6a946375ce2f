/*
 * The GPU -> CPU ring of the proxy path, shared by device code (producers)
 * and the host proxy (consumer). One ring per context of a device
 * communicator: many producers (any thread of any block), one consumer.
 *
 * A producer claims slot s with an atomic add on the producer index, waits
 * (bounded) until s - consumer < size, writes the descriptor's body, then
 * publishes it with a release store of flag = lap(s) + 1 where
 * lap(s) = s / size. The consumer waits for that flag value in slot
 * s % size, so a stale descriptor from an earlier lap is never mistaken for
 * a new one, and flags never need clearing. It then advances the consumer
 * index with a release store; that is also the flush point. Producers keep
 * a credit limit next to the producer index (consumer + size as last seen)
 * so that only a post that reaches it reads the consumer index, which
 * lives across PCIe.
 */
#ifndef GIN_DEVICE_PROXY_H
#define GIN_DEVICE_PROXY_H

#include "gin/device/types.h"

#define GIN_DESC_VERSION 1

enum {
  GIN_OP_PUT = 1,       /* bytes from src window to dst window, then signal */
  GIN_OP_PUT_VALUE = 2, /* `src_off` holds the value, `bytes` its width */
  GIN_OP_SIGNAL = 3,    /* signal only */
  GIN_OP_BARRIER = 4    /* barrier arrival: `signal` indexes the barrier
                           counters that follow the signals */
};

/* Window handle packed into 32 bits: index (low 16) and generation (high
 * 16, truncated); the proxy checks both against its table. */
#define GIN_DESC_WIN(w) ((uint32_t)((w).idx & 0xffffu) | ((w).gen << 16))
#define GIN_DESC_WIN_IDX(v) ((v)&0xffffu)
#define GIN_DESC_WIN_GEN(v) ((v) >> 16)

typedef struct gin_desc {
  /* 16-byte aligned: producers write it in 16-byte stores. */
  GIN_ALIGNAS(16) uint32_t flag; /* lap + 1 once the body is written */
  uint8_t op;                    /* GIN_OP_* */
  uint8_t remote;                /* GIN_REMOTE_* */
  uint8_t local;                 /* GIN_LOCAL_* */
  uint8_t version;               /* GIN_DESC_VERSION */
  int32_t peer;                  /* world rank */
  int32_t signal;
  int32_t counter;
  uint32_t dst_win; /* GIN_DESC_WIN */
  uint32_t src_win;
  uint32_t pad_;
  uint64_t dst_off;
  uint64_t src_off; /* or the value of a PUT_VALUE */
  uint64_t bytes;
  uint64_t signal_value;
} gin_desc_t;

GIN_STATIC_ASSERT(sizeof(gin_desc_t) == 64, "ring descriptor is 64 bytes");
GIN_STATIC_ASSERT(offsetof(gin_desc_t, flag) == 0, "flag leads the descriptor");
GIN_STATIC_ASSERT(offsetof(gin_desc_t, dst_off) % 8 == 0, "aligned body");
GIN_STATIC_ASSERT(GIN_ALIGNOF(gin_desc_t) == 16, "16-byte stores");

/* One ring as device code sees it. */
typedef struct gin_ring {
  gin_desc_t *slots;    /* [size], host memory mapped for the device */
  uint64_t *prod;       /* producer index (device memory); prod[1] is the
                           credit limit: slots below it are known free */
  const uint64_t *cons; /* consumer index (host memory, device view) */
  uint32_t size;        /* power of two */
  int32_t bell;         /* host target: the serving proxy thread's eventfd */
  /* Host target: nonzero while that thread sleeps in poll(); a producer
   * that sees it after publishing writes the bell. NULL on a GPU. */
  const uint32_t *sleeping;
} gin_ring_t;

#endif
