/*
 * The records every rank all-gathers over the bootstrap ring and then
 * trusts: the peer record of gin_comm_init (comm.c) and the registration
 * record of gin_window_register (window.c). Their wire layout, encoders
 * and the pure checks of what arrives (no I/O, no logging, no allocation;
 * thread safe), in records.c: comm.c, window.c, the unit test
 * (tests/unit/test_records.c) and the fuzzers (tests/fuzz/
 * fuzz_comm_peer.c, fuzz_window_reg.c) use them.
 *
 * The bootstrap authenticates every rank (the job secret), so these bytes
 * come from ranks of this job; the checks guard against a rank of another
 * build or a corrupted record making the receiver read or map out of
 * bounds. Both layouts are little endian at fixed offsets: on the little
 * endian hosts gin runs on, byte for byte the structs below.
 *
 * Opaque, not checked here: a peer record's device identity and control
 * page handle, and a registration's memory handle. Their layout belongs to
 * the target (src/arch); the target's import checks what it can when it
 * maps them (memfd: magic, fd, size; CUDA: magic, size; the CUDA IPC
 * handle itself only the driver can judge).
 *
 * Layering: comm; includes arch/arch.h (the opaque types), base/net.h and
 * gin/gin.h.
 */
#ifndef GIN_COMM_RECORDS_H
#define GIN_COMM_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "base/net.h"
#include "gin/gin.h"

/* ------------------------------------------------------- peer records */

#define GIN_HOSTID_BYTES 96

/* What every rank tells every other at init. */
typedef struct gin_peer_info {
  char hostid[GIN_HOSTID_BYTES]; /* text, NUL-terminated, zeros after */
  int32_t pid;
  int32_t rank;
  int32_t watch; /* GIN_WATCH of this rank (watched only if all have it) */
  int32_t pad_;
  gin_arch_devinfo_t dev;
  gin_arch_handle_t ctrl; /* control page */
} gin_peer_info_t;

/* Wire (little endian), GIN_PEER_REC_BYTES a rank: hostid [0, 96) (text,
 * NUL-terminated, zeros after the NUL), pid i32 at 96, rank i32 at 100,
 * watch i32 at 104 (0 or 1), zero u32 at 108, the device identity (opaque,
 * 64 bytes) at 112, the control page's handle (opaque, 80 bytes) at 176. */
#define GIN_PEER_REC_BYTES 256
enum {
  GIN_PEER_REC_PID = 96,
  GIN_PEER_REC_RANK = 100,
  GIN_PEER_REC_WATCH = 104,
  GIN_PEER_REC_PAD = 108,
  GIN_PEER_REC_DEV = 112,
  GIN_PEER_REC_CTRL = 176
};
_Static_assert(sizeof(gin_peer_info_t) == GIN_PEER_REC_BYTES &&
                   offsetof(gin_peer_info_t, pid) == GIN_PEER_REC_PID &&
                   offsetof(gin_peer_info_t, rank) == GIN_PEER_REC_RANK &&
                   offsetof(gin_peer_info_t, watch) == GIN_PEER_REC_WATCH &&
                   offsetof(gin_peer_info_t, dev) == GIN_PEER_REC_DEV &&
                   offsetof(gin_peer_info_t, ctrl) == GIN_PEER_REC_CTRL &&
                   GIN_PEER_REC_CTRL + GIN_ARCH_HANDLE_BYTES ==
                       GIN_PEER_REC_BYTES,
               "the peer record's wire layout is the struct's");

/* Writes p as GIN_PEER_REC_BYTES wire bytes to out: the host id up to its
 * NUL (at most GIN_HOSTID_BYTES bytes), zeros after it; the padding
 * field as 0 whatever p->pad_ holds. Pure; thread safe. */
void gin_peer_rec_encode(const gin_peer_info_t *p, uint8_t *out);

/* Checks the nranks peer records a rank received from gin_comm_init's
 * all-gather (all, len bytes: nranks * GIN_PEER_REC_BYTES). First every
 * slot r names rank r (in rank order), then for each rank in order: its
 * host id is NUL-terminated within GIN_HOSTID_BYTES with zeros after the
 * NUL (death reports print it as a string), its pid is above 0, its watch
 * flag is 0 or 1 and its padding field 0. The device identity and the
 * control page handle are opaque (see the top). Pure (no I/O, no logging).
 * Returns GIN_SUCCESS and, if out is not NULL, the records decoded into
 * out[0, nranks) (pad_ 0); outputs are written only on success. Otherwise
 * GIN_ERR_PROTOCOL with what was wrong in why (why_len bytes, may be 0;
 * the caller prefixes "gin_comm_init: "), or GIN_ERR_INVALID on NULL all
 * or nranks < 1. Fuzzed (tests/fuzz/fuzz_comm_peer.c). */
gin_result_t gin_peer_recs_check(const void *all, size_t len, int nranks,
                                 char *why, size_t why_len,
                                 gin_peer_info_t *out);

/* ----------------------------------------------- registration records */

/* What every rank says about a window registration. */
typedef struct gin_win_rec {
  int32_t status; /* GIN_SUCCESS or the local error */
  uint32_t slot;
  uint32_t host_kind;
  uint32_t pad_;
  uint64_t size;
  uint64_t offset; /* of ptr inside its allocation */
  uint64_t alloc_size;
  gin_arch_handle_t handle;
} gin_win_rec_t;

/* Wire (little endian), GIN_WIN_REC_BYTES a rank: status i32 at 0, slot
 * u32 at 4, host_kind u32 at 8 (0 or 1), zero u32 at 12, size u64 at 16,
 * offset u64 at 24, alloc_size u64 at 32, the memory handle (opaque, 80
 * bytes) at 40. */
#define GIN_WIN_REC_BYTES 120
enum {
  GIN_WIN_REC_SLOT = 4,
  GIN_WIN_REC_KIND = 8,
  GIN_WIN_REC_PAD = 12,
  GIN_WIN_REC_SIZE = 16,
  GIN_WIN_REC_OFFSET = 24,
  GIN_WIN_REC_ALLOC = 32,
  GIN_WIN_REC_HANDLE = 40
};
_Static_assert(sizeof(gin_win_rec_t) == GIN_WIN_REC_BYTES &&
                   offsetof(gin_win_rec_t, slot) == GIN_WIN_REC_SLOT &&
                   offsetof(gin_win_rec_t, host_kind) == GIN_WIN_REC_KIND &&
                   offsetof(gin_win_rec_t, size) == GIN_WIN_REC_SIZE &&
                   offsetof(gin_win_rec_t, offset) == GIN_WIN_REC_OFFSET &&
                   offsetof(gin_win_rec_t, alloc_size) == GIN_WIN_REC_ALLOC &&
                   offsetof(gin_win_rec_t, handle) == GIN_WIN_REC_HANDLE,
               "the registration record's wire layout is the struct's");

/* Writes r as GIN_WIN_REC_BYTES wire bytes to out (the padding field as 0
 * whatever r->pad_ holds). Pure; thread safe. */
void gin_win_rec_encode(const gin_win_rec_t *r, uint8_t *out);

/* Checks the nranks registration records a rank received from
 * gin_window_register's all-gather (all, len bytes: nranks *
 * GIN_WIN_REC_BYTES) against a window table of max_windows slots. In this
 * order, the first failure reported (every rank fails alike):
 *   - every rank's status GIN_SUCCESS (rank order): else GIN_ERR_INVALID,
 *     "rank r failed its part" with the status's name;
 *   - for each rank r from 1 up, rank 0's size, then slot, then memory kind:
 *     GIN_ERR_INVALID for size or slot, GIN_ERR_INTERNAL for the kind;
 *   - for each rank in order: memory kind 0 or 1, padding 0, slot below
 *     max_windows, size above 0, and [offset, offset + size) inside
 *     [0, alloc_size) (the receiver maps alloc_size bytes of the handle and
 *     gives kernels and proxies offset + size of them): GIN_ERR_PROTOCOL.
 * The memory handle is opaque (see the top). Pure (no I/O, no logging).
 * Returns GIN_SUCCESS and, if out is not NULL, the records decoded into
 * out[0, nranks) (pad_ 0); outputs are written only on success. Otherwise
 * the code above with the whole message in why (why_len bytes, may be 0;
 * it names gin_window_register), or GIN_ERR_INVALID on NULL all or
 * nranks < 1, or GIN_ERR_PROTOCOL on a wrong length. Fuzzed
 * (tests/fuzz/fuzz_window_reg.c). */
gin_result_t gin_win_recs_check(const void *all, size_t len, int nranks,
                                uint32_t max_windows, char *why, size_t why_len,
                                gin_win_rec_t *out);

#endif
