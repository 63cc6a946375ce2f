/*
 * null transport: every operation completes at once and nothing is moved.
 * For measuring the ring and the proxy alone (gin-perf's ring rate). A
 * signal sent through it never arrives, so waits on it time out.
 */
#include "transport/transport.h"

static gin_result_t null_init(const gin_job_t *job, const uint8_t *use,
                              void **state_out) {
  *state_out = NULL;
  return GIN_SUCCESS;
}

static gin_result_t null_put(void *state, const gin_xfer_t *x) {
  return GIN_SUCCESS;
}

static gin_result_t null_progress(void *state) { return GIN_SUCCESS; }

static gin_result_t null_flush(void *state) { return GIN_SUCCESS; }

static void null_fini(void *state) {}

const gin_transport_ops_t gin_transport_null = {
    .size = sizeof(gin_transport_ops_t),
    .name = "null",
    .init = null_init,
    .put = null_put,
    .flush = null_flush,
    .progress = null_progress,
    .fini = null_fini,
};
