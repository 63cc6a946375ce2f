/*
 * Types shared by the host API and device code (both targets), as a
 * kernel sees them: paths, actions, teams, and the window and device
 * communicator handles with what a kernel may read of them. Their full
 * definitions (plain C structs passed by value to kernels, every pointer
 * valid in the address space of the device that runs the kernel) are in
 * impl/types.h.
 */
#ifndef GIN_DEVICE_TYPES_H
#define GIN_DEVICE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define GIN_STATIC_ASSERT(c, m) static_assert(c, m)
#define GIN_ALIGNAS(n) alignas(n)
#define GIN_ALIGNOF(t) alignof(t)
#else
#define GIN_STATIC_ASSERT(c, m) _Static_assert(c, m)
#define GIN_ALIGNAS(n) _Alignas(n)
#define GIN_ALIGNOF(t) _Alignof(t)
#endif

#define GIN_MAX_RANKS 1024

/* Peers whose signal pointers and paths a devcomm, and whose window
 * bases a window handle, carries by value: a put to one of them reads
 * them from the kernel's parameters (constant cache, which acquires do
 * not invalidate) instead of device tables. */
#define GIN_INLINE_PEERS 8

/* Paths a peer can be reached by (device code switches on this). */
enum {
  GIN_PATH_NONE = 0,   /* not reachable from this rank (yet) */
  GIN_PATH_SELF = 1,   /* this rank */
  GIN_PATH_DIRECT = 2, /* peer window mapped: load/store */
  GIN_PATH_PROXY = 3   /* descriptors to the CPU proxy through a ring */
};
/* Flag in a devcomm's path_inline byte: the peer runs on this very GPU,
 * so GPU-scope ordering reaches it (a release at system scope costs a
 * system-wide memory barrier; measured by gin-perf's ladder). */
#define GIN_PATH_NEAR 0x80

/* What happens at the target once a put's payload has landed. */
typedef enum gin_remote_kind {
  GIN_REMOTE_NONE = 0,
  GIN_REMOTE_SIGNAL_INC = 1, /* signal += 1 */
  GIN_REMOTE_SIGNAL_ADD = 2  /* signal += value */
} gin_remote_kind_t;
/* What happens locally once a put's source has been consumed. */
typedef enum gin_local_kind {
  GIN_LOCAL_NONE = 0,
  GIN_LOCAL_COUNTER_INC = 1 /* counter += 1 when the source is reusable */
} gin_local_kind_t;

/* Team: a set of world ranks. ranks == NULL means ranks 0..size-1. */
typedef struct gin_team {
  int size;
  int rank;         /* this rank's index in the team, -1 if not a member */
  int id;           /* 0 world, 1 lsa */
  const int *ranks; /* team index -> world rank (device memory) */
} gin_team_t;

#define GIN_TEAM_WORLD 0
#define GIN_TEAM_LSA 1
#define GIN_NUM_TEAMS 2

/* A registered window (gin_window_register): a handle kernels pass to
 * gin_put and gin_window_peer_ptr, valid on the rank that registered it.
 * Opaque: its fields are gin's (impl/types.h). */
typedef struct gin_window gin_window_t;

/* A device communicator (gin_devcomm_create), passed by value to kernels.
 * A kernel may read dc->rank and dc->nranks (this rank, the job's size),
 * dc->lsa_rank and dc->lsa_size (its place in the lsa team), and
 * dc->nctx, nsignals, ncounters and nbarriers (what the communicator
 * was created with); every other field is gin's (impl/types.h) and
 * changes between releases. */
typedef struct gin_devcomm gin_devcomm_t;

/* The definitions, internals included, for the compiler. */
#include "gin/device/impl/types.h"

#endif
