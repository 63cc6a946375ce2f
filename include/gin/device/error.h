/* Errors a kernel finds itself. Part of the device API
 * (gin/device/gin_device.h says what every call promises). */
#ifndef GIN_DEVICE_ERROR_H
#define GIN_DEVICE_ERROR_H

#include "gin/device/arch.h"
#include "gin/device/types.h"

/* Records an error a kernel found, as gin's own calls record theirs: this
 * rank's first error is kept (later ones are dropped), the communicator
 * is aborted (this rank's and its load/store peers' waits stop), and
 * `code` (a gin_result_t error; another value becomes GIN_ERR_INTERNAL)
 * is returned for the kernel to pass up; the host's
 * gin_comm_get_async_error then fails naming this rank. `kind`:
 * GIN_DEVERR_USER for a program's own errors: the host fails with `code`
 * and says "rank 2: a kernel reported error 7 (peer 1; values 4, 0, 9)"
 * (id, then peer, seen, a0, a1; `expected` is not kept for it). gin's
 * own layers pass kinds the host words for them (src/comm/comm.c). */
GIN_DEVICE_FN int gin_record_error(const gin_devcomm_t *dc, int code, int kind,
                                   int64_t peer, int64_t id, uint64_t expected,
                                   uint64_t seen, uint64_t a0, uint64_t a1);

#include "gin/device/impl/error__funcs.h"

#endif
