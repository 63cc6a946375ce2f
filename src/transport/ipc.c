/*
 * ipc transport: peers on this machine whose windows are mapped here (the
 * proxy path inside a node). The proxy thread copies the payload into the
 * peer's mapped window, then adds to its mapped signal with a release, so
 * the ordering promise holds by program order (gin_arch_copy returns once
 * the bytes are written: memcpy on the host target, a synchronous copy-
 * engine copy on cuda). Signals the proxy updates are in host memory.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

typedef struct ipc_state {
  gin_comm_t comm;
} ipc_state_t;

static gin_result_t ipc_init(gin_comm_t comm, const uint8_t *use,
                             void **state_out) {
  for (int r = 0; r < comm->nranks; r++)
    if (use[r] && comm->path_mapped[r] == 0)
      return GIN_ERROR(GIN_ERR_UNSUPPORTED,
                       "ipc transport: rank %d cannot map rank %d's memory",
                       comm->rank, r);
  ipc_state_t *s = (ipc_state_t *)calloc(1, sizeof *s);
  if (!s) return GIN_ERROR(GIN_ERR_NOMEM, "ipc transport");
  s->comm = comm;
  *state_out = s;
  return GIN_SUCCESS;
}

static gin_result_t ipc_put(void *state, const gin_xfer_t *x) {
  ipc_state_t *s = (ipc_state_t *)state;
  gin_comm_t c = s->comm;
  if (x->op == GIN_OP_PUT || x->op == GIN_OP_PUT_VALUE) {
    char *dst = c->wins[x->dst_win].bases[x->peer];
    if (!dst)
      return GIN_ERROR(GIN_ERR_INTERNAL, "ipc: window %u of rank %d not mapped",
                       x->dst_win, x->peer);
    if (x->op == GIN_OP_PUT)
      GIN_CHECK(gin_arch_copy(dst + x->dst_off, x->src, x->bytes));
    else
      GIN_CHECK(gin_arch_copy(dst + x->dst_off, &x->value, x->bytes));
  }
  if (x->has_signal) {
    char *sig = c->wins[x->sig_win].hbases[x->peer]; /* CPU view */
    if (!sig)
      return GIN_ERROR(GIN_ERR_INTERNAL, "ipc: signals of rank %d not mapped",
                       x->peer);
    if (x->mode_off)
      __atomic_fetch_or((uint32_t *)(sig + x->mode_off), x->mode_bit,
                        __ATOMIC_RELAXED);
    GIN_CHECK(
        gin_arch_atomic_add_u64((uint64_t *)(sig + x->sig_off), x->sig_add));
  }
  return GIN_SUCCESS;
}

static gin_result_t ipc_progress(void *state) { return GIN_SUCCESS; }

static void ipc_fini(void *state) { free(state); }

const gin_transport_ops_t gin_transport_ipc = {
    .size = sizeof(gin_transport_ops_t),
    .name = "ipc",
    .init = ipc_init,
    .put = ipc_put,
    .progress = ipc_progress,
    .fini = ipc_fini,
};
