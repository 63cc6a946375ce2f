/*
 * The host-initiated baseline: the same put+signal ping-pong done the
 * traditional way, in the same run. Each half trip: the host launches a
 * kernel that consumes the last message and produces the next, copies the
 * payload into the peer's IPC-mapped buffer on the same stream, waits for
 * the stream, then notifies the peer's host through a flag in shared host
 * memory; the peer's host, polling that flag, launches its kernel. This is
 * the best a host-driven exchange does (one launch, one copy, one stream
 * wait per half trip, the cheapest notification there is); the ratio to
 * gin's ping-pong is what GPU-initiated puts buy.
 */
#include <sched.h>
#include <string.h>

#include "perf/perf.h"

typedef struct step_args {
  const uint64_t *recv; /* the payload that arrived (its first word) */
  uint64_t *send;       /* the payload to copy to the peer next */
  uint64_t expect, tag; /* expect 0: nothing to check yet */
  uint64_t *errors;
} step_args_t;

GIN_KERNEL(k_step, step_args_t) {
  if (args.expect && *(const volatile uint64_t *)args.recv != args.expect)
    *args.errors += 1;
  *args.send = args.tag;
}

/* Bounded wait for the peer's notification; 0 on time. */
static int wait_flag(volatile uint64_t *flag, uint64_t v) {
  double t0 = perf_now_us();
  for (uint32_t i = 0; __atomic_load_n(flag, __ATOMIC_ACQUIRE) < v; i++) {
    if ((i & 1023) == 1023) {
      if (perf_now_us() - t0 > 1e7) return -1;
      if (strcmp(perf_target_name(), "host") == 0) sched_yield();
    }
  }
  return 0;
}

void perf_baseline(perf_env_t *env) {
  const perf_opts_t *o = &env->o;
  size_t maxb = o->e, dev_bytes = 64 + 2 * maxb, flag_bytes = 4096;
  int me = env->rank, peer = 1 - me;
  unsigned char mine[2][64], all[2][2][64];
  char *dev = (char *)perf_shared_alloc(dev_bytes, mine[0]);
  uint64_t *flag = (uint64_t *)perf_memfd_alloc(flag_bytes, mine[1]);
  if (!dev || !flag) {
    fprintf(stderr, "gin-perf: baseline: cannot allocate shared buffers\n");
    exit(1);
  }
  PERF_CHECK(gin_comm_allgather(env->comm, mine, all, sizeof mine));
  char *peer_dev = (char *)perf_shared_map(all[peer][0], dev_bytes);
  uint64_t *peer_flag = (uint64_t *)perf_memfd_map(all[peer][1], flag_bytes);
  if (!peer_dev || !peer_flag) {
    fprintf(stderr, "gin-perf: baseline: cannot map rank %d's buffers\n", peer);
    exit(1);
  }
  PERF_CHECK(gin_comm_barrier(env->comm));
  gin_stream_t s = perf_stream();
  uint64_t *errors = (uint64_t *)dev;
  char *recv = dev + 64, *send = dev + 64 + maxb, *peer_recv = peer_dev + 64;
  uint64_t round = 0; /* flag values already used */
  int n = o->warmup + o->iters;
  double *t = (double *)malloc(sizeof(double) * (size_t)o->iters);
  for (size_t bytes = o->b; bytes <= o->e && t;
       bytes = perf_next_size(bytes, o->f)) {
    size_t nb = bytes < 8 ? 8 : bytes;
    for (int i = 0; i < n; i++) {
      uint64_t v = round + (uint64_t)i + 1;
      step_args_t a;
      a.recv = (const uint64_t *)recv;
      a.send = (uint64_t *)send;
      a.errors = errors;
      a.tag = 2 * v + (uint64_t)me;
      /* Rank 1 answers message v; rank 0 checks the answer to v - 1. */
      a.expect = me == 1 ? 2 * v : (i > 0 ? 2 * (v - 1) + 1 : 0);
      double t0 = perf_now_us();
      if (me == 1 && wait_flag(flag, v) != 0) break;
      if (gin_launch(k_step, 1, 1, s, &a) != GIN_SUCCESS ||
          perf_copy_async(peer_recv, send, nb, s) != 0 ||
          gin_stream_synchronize(s) != GIN_SUCCESS) {
        fprintf(stderr, "gin-perf: baseline: launch or copy failed\n");
        exit(1);
      }
      __atomic_store_n(peer_flag, v, __ATOMIC_RELEASE);
      if (me == 0 && wait_flag(flag, v) != 0) break;
      if (i >= o->warmup) t[i - o->warmup] = perf_now_us() - t0;
    }
    round += (uint64_t)n;
    if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != round) {
      fprintf(stderr, "gin-perf: baseline: rank %d timed out at %zu bytes\n",
              me, bytes);
      exit(1);
    }
    PERF_CHECK(gin_comm_barrier(env->comm));
    if (me != 0) continue;
    double med, max;
    perf_stats_d(t, o->iters, &med, &max);
    perf_row_t r = perf_row("baseline", "host", bytes);
    r.median_us = med;
    r.p99_us = t[(size_t)(o->iters * 0.99)];
    double gin = perf_by_size_get(&env->pp, bytes);
    if (gin >= 0) {
      r.floor = "gin_pingpong";
      r.floor_value = gin;
      r.ratio = med / gin;
    }
    perf_emit(env, &r);
  }
  /* Every answer arrived intact (rank 0 checks the last one here). */
  uint64_t bad = 0;
  if (me == 0) {
    step_args_t a;
    a.recv = (const uint64_t *)recv;
    a.send = (uint64_t *)(send + 8);
    a.errors = errors;
    a.tag = 0;
    a.expect = 2 * round + 1;
    PERF_CHECK(gin_launch(k_step, 1, 1, s, &a));
    PERF_CHECK(gin_stream_synchronize(s));
  }
  PERF_CHECK(gin_mem_copy(&bad, errors, sizeof bad));
  if (bad) {
    fprintf(stderr, "gin-perf: baseline: rank %d saw %llu wrong payloads\n", me,
            (unsigned long long)bad);
    exit(1);
  }
  free(t);
  PERF_CHECK(gin_comm_barrier(env->comm));
  perf_shared_unmap(peer_dev, dev_bytes);
  munmap(peer_flag, flag_bytes);
  PERF_CHECK(gin_comm_barrier(env->comm));
  perf_shared_free(dev, dev_bytes, mine[0]);
  perf_memfd_free(flag, flag_bytes, mine[1]);
}
