/*
 * The network floors a measurement takes its ratio to, by the path the
 * ranks' puts take (perf_net_path): the raw TCP ping-pong over loopback
 * (floors_host.c), or raw libfabric RMA writes between the ranks over the
 * same provider (floors_ofi.c), on an endpoint of their own opened at
 * first use. Used by the floors (floors.c) and the ping-pong launches
 * (lat.c).
 */
#include "perf/floors_host.h"
#include "perf/perf.h"
#if GIN_PERF_OFI
#include "perf/floors_ofi.h"

static int ofi_allgather(void *ctx, const void *mine, void *all, size_t n) {
  perf_env_t *env = (perf_env_t *)ctx;
  return gin_comm_allgather(env->comm, mine, all, n) == GIN_SUCCESS ? 0 : -1;
}

floor_ofi_t *perf_ofi_floor(perf_env_t *env) {
  if (env->ofi_floor) return (floor_ofi_t *)env->ofi_floor;
  char prov[64];
  floor_ofi_t *f = NULL;
  size_t buf = env->o.e < (4u << 20) ? (4u << 20) : env->o.e;
  if (floor_ofi_open(env->rank, buf, ofi_allgather, env, &f, prov,
                     sizeof prov) != 0)
    return NULL;
  perf_note(env,
            "libfabric floors: RMA writes with remote CQ data, provider "
            "%s, an endpoint of their own",
            prov);
  env->ofi_floor = f;
  return f;
}
#endif

int perf_net_floor_pp(perf_env_t *env, size_t bytes, double *med, double *p99) {
  switch (perf_net_path(env)) {
  case PERF_NET_TCP:
    if (env->rank != 0) return 0;
    return floor_tcp_pingpong(bytes, 1, env->o.iters, env->o.warmup, med, p99);
#if GIN_PERF_OFI
  case PERF_NET_OFI: {
    floor_ofi_t *f = perf_ofi_floor(env);
    return f ? floor_ofi_pingpong(f, bytes, env->o.iters, env->o.warmup, med,
                                  p99)
             : -1;
  }
#endif
  default: return -1;
  }
}

void perf_floors_close(perf_env_t *env) {
#if GIN_PERF_OFI
  floor_ofi_close((floor_ofi_t *)env->ofi_floor);
#endif
  env->ofi_floor = NULL;
}
