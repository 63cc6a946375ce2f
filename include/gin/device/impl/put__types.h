/* The actions a put or signal carries (gin/device/put.h). Internal. */
#ifndef GIN_DEVICE_IMPL_PUT_TYPES_H
#define GIN_DEVICE_IMPL_PUT_TYPES_H

#include <stdint.h>

/* A signal is used either with INC or with ADD between two resets. Each
 * update marks its kind at the target (checks builds): the direct update
 * that finds the other kind marked fails with GIN_ERR_INVALID at its
 * sender (once it is out); where proxied updates are marked, a wait on a
 * signal that saw both kinds fails at the target. */
typedef struct gin_remote {
  int kind;
  int signal;
  uint64_t value;
} gin_remote_t;

typedef struct gin_local {
  int kind;
  int counter;
} gin_local_t;

/* The kind of update a signal took since its reset, marked at the target
 * (checks builds). */
#define GIN_SIGMODE_INC 1u
#define GIN_SIGMODE_ADD 2u

#endif
