/*
 * The machine's floors, measured in the same run as the library so every
 * figure is a ratio: GPU side (raw flag ping-pong between the ranks, GPU
 * <-> pinned host flag round trip, device copy, copy into the peer's
 * memory, host <-> device copy, the cost of one asynchronous copy call)
 * and CPU side (raw TCP ping-pong and stream over loopback, raw
 * shared-memory flag ping-pong; floors_host.c), and on the ofi path raw
 * libfabric writes between the ranks (floors_ofi.c).
 */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "perf/floors_host.h"
#include "perf/perf.h"
#if GIN_PERF_OFI
#include "perf/floors_ofi.h"
#endif

typedef struct hostflag_args {
  int iters, warmup;
  volatile uint64_t *flag; /* device view: ping at [0], pong at [8] */
  uint64_t *samples;
} hostflag_args_t;

/* The GPU writes a pinned host word; a CPU thread answers in another. */
GIN_KERNEL(k_hostflag, hostflag_args_t) {
  uint64_t *ping = (uint64_t *)(args.flag), *pong = ping + 8;
  uint64_t t0 = gin_time_ns();
  for (int i = 1; i <= args.warmup + args.iters; i++) {
    if (i == args.warmup + 1) t0 = gin_time_ns();
    gin_store_release_u64(ping, (uint64_t)i);
    uint64_t s0 = gin_time_ns();
    for (uint32_t k = 0; gin_load_acquire_u64(pong) < (uint64_t)i; k++)
      if ((k & 1023) == 1023 && gin_time_ns() - s0 > PERF_SPIN_LIMIT_NS) return;
  }
  args.samples[0] = gin_time_ns() - t0;
}

typedef struct responder {
  volatile uint64_t *flags;
  int n;
} responder_t;

static void *respond(void *p) {
  responder_t *r = (responder_t *)p;
  double t0 = perf_now_us();
  for (int i = 1; i <= r->n; i++) {
    while (__atomic_load_n(&r->flags[0], __ATOMIC_ACQUIRE) < (uint64_t)i)
      if (perf_now_us() - t0 > 1e7) return NULL;
    __atomic_store_n(&r->flags[8], (uint64_t)i, __ATOMIC_RELEASE);
  }
  return NULL;
}

/* Mean GPU <-> pinned host flag round trip (us), rank 0 only. */
static double hostflag_rtt(perf_env_t *env) {
  void *hh, *hd;
  double us = -1;
  if (perf_hostflag_alloc(128, &hh, &hd) != 0) return -1;
  hostflag_args_t h;
  memset(&h, 0, sizeof h);
  h.iters = env->o.iters;
  h.warmup = env->o.warmup;
  h.flag = (volatile uint64_t *)hd;
  h.samples = env->samples;
  responder_t r = {(volatile uint64_t *)hh, h.warmup + h.iters};
  pthread_t th;
  if (pthread_create(&th, NULL, respond, &r) == 0) {
    PERF_CHECK(gin_launch(k_hostflag, 1, 1, 0, &h));
    PERF_CHECK(gin_stream_synchronize(0));
    pthread_join(th, NULL);
    uint64_t ns = 0;
    PERF_CHECK(gin_mem_copy(&ns, env->samples, sizeof ns));
    us = (double)ns / 1000.0 / h.iters;
  }
  perf_hostflag_free(hh);
  return us;
}

static void emit_value(perf_env_t *env, const char *test, size_t bytes,
                       double us, double p99, double gbps) {
  perf_row_t r = perf_row(test, "-", bytes);
  r.median_us = us;
  r.p99_us = p99;
  r.gbps = gbps;
  perf_emit(env, &r);
}

/* Row `test`: the median us per copy of perf_batch_copy_times (64
 * copies of n bytes a batch, 21 batches; from pinned host memory when src
 * is NULL), and GB/s; nothing where it cannot run. */
static void batch_floor(perf_env_t *env, const char *test, void *dst,
                        const char *src, size_t n) {
  double t[21], med, max;
  if (perf_batch_copy_times((char *)dst, src, n, 64, 21, src == NULL, t))
    return;
  perf_stats_d(t, 21, &med, &max);
  emit_value(env, test, n, med, -1, src ? (double)n / (med * 1e3) : -1);
}

/* Rank 0 copies into a buffer of rank 1 mapped here (CUDA IPC on cuda):
 * the copy engine's path to the peer's GPU, what cudaMemcpyPeer does
 * (NVLink or PCIe when the peer has its own GPU, a device copy when it
 * shares this one), the floor of direct put bandwidth across GPUs. */
static void peer_copy(perf_env_t *env) {
  size_t data = env->win_bytes - PERF_DATA;
  size_t n = data < (256u << 20) ? data : (256u << 20);
  unsigned char blob[64], blobs[2][64];
  void *mine = NULL;
  memset(blob, 0, sizeof blob);
  if (env->rank == 1) mine = perf_shared_alloc(n, blob);
  PERF_CHECK(gin_comm_allgather(env->comm, blob, blobs, sizeof blob));
  void *peer = env->rank == 0 ? perf_shared_map(blobs[1], n) : NULL;
  if (env->rank == 0 && !peer)
    perf_note(env, "floor_peer_copy: cannot map rank 1's buffer");
  for (size_t k = 65536; peer && k <= n; k *= 16) {
    double us = perf_copy_us(peer, (char *)env->mem + PERF_DATA, k, 20);
    emit_value(env, "floor_peer_copy", k, us, -1, (double)k / (us * 1e3));
  }
  /* The proxy's ipc lane: 64 small copies in one batch into the peer's
   * mapping (from device memory, and from pinned host memory as its
   * put_value sources), and into this rank's own memory; us per copy. */
  static const size_t bsz[3] = {8, 7424, 65536};
  const char *src = (const char *)env->mem + PERF_DATA;
  for (int i = 0; peer && i < 3 && 64 * bsz[i] <= n; i++) {
    batch_floor(env, "floor_batch_peer", peer, src, bsz[i]);
    batch_floor(env, "floor_batch_local", (char *)env->copy_dst + PERF_DATA,
                src, bsz[i]);
  }
  if (peer) batch_floor(env, "floor_batch_h2d_peer", peer, NULL, 8);
  if (peer) perf_shared_unmap(peer, n);
  PERF_CHECK(gin_comm_barrier(env->comm));
  if (mine) perf_shared_free(mine, n, blob);
}

void perf_floors_gpu(perf_env_t *env) {
  double med, p99;
  perf_raw_pingpong(env, 0, &med, &p99);
  env->raw_floor_us = med;
  env->raw_floor_done = 1;
  emit_value(env, "floor_raw_flag_pp", 8, med, p99, -1);
  PERF_CHECK(gin_comm_barrier(env->comm));
  if (env->rank == 0) {
    env->hostflag_us = hostflag_rtt(env);
    emit_value(env, "floor_host_flag_rtt", 8, env->hostflag_us, -1, -1);
    size_t data = env->win_bytes - PERF_DATA;
    for (size_t n = 65536; n <= data; n *= 16) {
      double us = perf_copy_us((char *)env->copy_dst + PERF_DATA,
                               (char *)env->mem + PERF_DATA, n, 20);
      emit_value(env, "floor_dev_copy", n, us, -1, (double)n / (us * 1e3));
    }
    /* Host <-> device copies: none on the host target (-1). */
    size_t big = data < (64u << 20) ? data : (64u << 20);
    double h2d = perf_h2d_gbps(big, 1), d2h = perf_h2d_gbps(big, 0);
    if (h2d > 0) emit_value(env, "floor_h2d_copy", big, -1, -1, h2d);
    if (d2h > 0) emit_value(env, "floor_d2h_copy", big, -1, -1, d2h);
    double a_us, s_us;
    perf_copy_call_us(1000, &a_us, &s_us);
    if (a_us >= 0) {
      emit_value(env, "floor_copy_call", 8, a_us, -1, -1);
      emit_value(env, "floor_copy_sync", 8, s_us, -1, -1);
    }
  }
  peer_copy(env);
  PERF_CHECK(gin_comm_barrier(env->comm));
}

#if GIN_PERF_OFI
/* Raw libfabric write ping-pong and stream over the sizes asked. */
static void floors_ofi(perf_env_t *env) {
  floor_ofi_t *f = perf_ofi_floor(env);
  if (!f) return;
  double med, p99, gbps;
  for (size_t n = env->o.b; n <= env->o.e; n = perf_next_size(n, env->o.f))
    if (floor_ofi_pingpong(f, n, env->o.iters, env->o.warmup, &med, &p99) ==
            0 &&
        env->rank == 0) {
      emit_value(env, "floor_ofi_pp", n, med, p99, -1);
      perf_by_size_put(&env->ofi_pp, n, med);
    }
  for (size_t n = env->o.b < 4096 ? 4096 : env->o.b; n <= env->o.e;
       n = perf_next_size(n, env->o.f)) {
    size_t total = n * 256 > (256u << 20) ? n * 256 : (256u << 20);
    if (floor_ofi_stream(f, n, total, &gbps) == 0 && env->rank == 0) {
      emit_value(env, "floor_ofi_stream", n, -1, -1, gbps);
      perf_by_size_put(&env->ofi_bw, n, gbps);
    }
  }
}
#endif

void perf_floors_cpu(perf_env_t *env) {
  PERF_CHECK(gin_comm_barrier(env->comm));
  if (env->rank == 0) {
    double med, p99, gbps;
    if (floor_shm_pingpong(env->o.iters, env->o.warmup, &med, &p99) == 0)
      emit_value(env, "floor_shm_pp", 8, med, p99, -1);
    for (size_t n = env->o.b; n <= env->o.e; n = perf_next_size(n, env->o.f)) {
      if (floor_tcp_pingpong(n, 1, env->o.iters, env->o.warmup, &med, &p99) ==
          0) {
        emit_value(env, "floor_tcp_pp", n, med, p99, -1);
        perf_by_size_put(&env->tcp_pp, n, med);
      }
      /* An ordinary receiver, asleep in recv: what netperf's TCP_RR
       * measures, and what a user's own socket ping-pong gets. */
      if (floor_tcp_pingpong(n, 0, env->o.iters, env->o.warmup, &med, &p99) ==
          0)
        emit_value(env, "floor_tcp_pp_block", n, med, p99, -1);
    }
    /* Its four processes spin: with fewer than 8 usable cores they take
     * scheduler turns (milliseconds a trip), so a few trips only, noted
     * and not reported as a floor. */
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0
                    ? CPU_COUNT(&set)
                    : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores >= 8) {
      if (floor_tcp_relay(env->o.iters, env->o.warmup, &med, &p99) == 0)
        emit_value(env, "floor_tcp_relay", 8, med, p99, -1);
    } else if (floor_tcp_relay(20, 2, &med, &p99) == 0) {
      perf_note(env,
                "floor_tcp_relay: %d usable cores, its four spinning "
                "processes take turns: 20 round trips, median %.1f us, "
                "not a floor",
                cores, med);
    }
    for (size_t n = env->o.b < 4096 ? 4096 : env->o.b; n <= env->o.e;
         n = perf_next_size(n, env->o.f)) {
      size_t total = n * 256 > (256u << 20) ? n * 256 : (256u << 20);
      if (floor_tcp_stream(n, total, &gbps) == 0) {
        emit_value(env, "floor_tcp_stream", n, -1, -1, gbps);
        perf_by_size_put(&env->tcp_bw, n, gbps);
      }
    }
  }
  PERF_CHECK(gin_comm_barrier(env->comm));
#if GIN_PERF_OFI
  if (perf_net_path(env) == PERF_NET_OFI) floors_ofi(env);
#endif
}
