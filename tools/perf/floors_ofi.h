/*
 * gin-perf's libfabric floors: what two ranks get from libfabric alone,
 * with none of gin's code on the way. RMA writes with remote CQ data
 * (fi_writedata) into a buffer each rank registered, over the provider
 * gin's ofi transport takes (GIN_OFI_PROVIDER, else FI_PROVIDER, else
 * libfabric's first that has what these need), on an endpoint of their
 * own beside gin's.
 *
 * Plain C11 + libfabric (nothing of gin: the caller passes an allgather),
 * every wait bounded (FLOOR_OFI_TIMEOUT_MS). The two ranks call each
 * function together; a failure prints one line to stderr and returns -1
 * on the rank that saw it, while the other times out.
 */
#ifndef GIN_PERF_FLOORS_OFI_H
#define GIN_PERF_FLOORS_OFI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOOR_OFI_TIMEOUT_MS 10000

typedef struct floor_ofi floor_ofi_t;

/* Gathers `bytes` from each of the two ranks into all[rank * bytes];
 * returns 0 on success. */
typedef int (*floor_ofi_allgather_t)(void *ctx, const void *mine, void *all,
                                     size_t bytes);

/* Opens the endpoint and registers `buf_bytes` (>= 8) on rank `rank` (0
 * or 1), exchanging addresses and keys through `ag`. The provider's name
 * goes to prov (prov_len bytes). Returns 0, or -1 with the reason on
 * stderr and *out NULL. */
int floor_ofi_open(int rank, size_t buf_bytes, floor_ofi_allgather_t ag,
                   void *ctx, floor_ofi_t **out, char *prov, size_t prov_len);

/* Ping-pong: rank 0 writes `bytes` (<= buf_bytes) into rank 1's buffer
 * with remote CQ data; rank 1, once its queue reports the data, writes
 * `bytes` back the same way. `warmup` untimed round trips, then `iters`
 * timed ones. On rank 0 writes the median and 99th percentile round trip
 * in microseconds. Returns 0 on success. */
int floor_ofi_pingpong(floor_ofi_t *f, size_t bytes, int iters, int warmup,
                       double *median_us, double *p99_us);

/* Stream: rank 0 writes `total` bytes in writes of `bytes` (<= buf_bytes,
 * into the same buffer again and again), at most 64 in flight, the last
 * with remote CQ data; rank 1 answers that with an 8-byte write. The time
 * runs from the first write to the answer; one untimed round first. On
 * rank 0 writes total / time in GB/s. Returns 0 on success. */
int floor_ofi_stream(floor_ofi_t *f, size_t bytes, size_t total, double *gbps);

void floor_ofi_close(floor_ofi_t *f);

#ifdef __cplusplus
}
#endif

#endif
