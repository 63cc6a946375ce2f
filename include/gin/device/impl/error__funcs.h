/* Bodies of gin/device/error.h. Internal. */
#ifndef GIN_DEVICE_IMPL_ERROR_FUNCS_H
#define GIN_DEVICE_IMPL_ERROR_FUNCS_H

#include "gin/device/impl/check__funcs.h"

GIN_DEVICE_FN int gin_record_error(const gin_devcomm_t *dc, int code, int kind,
                                   int64_t peer, int64_t id, uint64_t expected,
                                   uint64_t seen, uint64_t a0, uint64_t a1) {
  if (kind == GIN_DEVERR_USER) {
    if (code >= 0 || code < GIN_ERR_INTERNAL) code = GIN_ERR_INTERNAL;
    expected = (uint64_t)(int64_t)code;
  }
  return gin_dev_fail_(dc, code, kind, peer, id, expected, seen, a0, a1);
}

#endif
