/*
 * ofi transport: the wire format of its messages' prefix and of the setup
 * entries all-gathered at init, and the pure checks of what arrives.
 * Exposed for the unit tests and fuzzers; ofi.c and ofi_wire.c are the
 * only other users. No libfabric here: these build everywhere.
 *
 * Wire (all integers little endian, explicit sizes):
 *   message: prefix (16 B: magic u32 "GINO", version u16, reserved u16
 *            (0), rank i32 (the sender), seq u32 (the sender's count of
 *            messages to this receiver, from 0, wrapping)), then an
 *            operation header of tcp.h (72 B), then its payload.
 *   setup entry (gin_ofi_entry_bytes(nranks)): status i32, name length
 *            u32, the endpoint's name (fi_getname, GIN_OFI_NAME_MAX bytes,
 *            zero after the name), then bit r % 8 of byte r / 8 set for
 *            each rank r the sender uses ofi with, zero padding to 8.
 *
 * Layering: uses base/net.h (little endian helpers, why texts); used by
 * ofi.c and tests.
 */
#ifndef GIN_TRANSPORT_OFI_H
#define GIN_TRANSPORT_OFI_H

#include <stddef.h>
#include <stdint.h>

#include "gin/gin.h"

#define GIN_OFI_MAGIC 0x47494e4fu /* "GINO" */
#define GIN_OFI_VERSION 1
#define GIN_OFI_PREFIX_BYTES 16
#define GIN_OFI_NAME_MAX 240
#define GIN_OFI_ENTRY_HEAD (8 + GIN_OFI_NAME_MAX)

typedef struct gin_ofi_prefix {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  int32_t rank;
  uint32_t seq;
} gin_ofi_prefix_t;

_Static_assert(sizeof(gin_ofi_prefix_t) == GIN_OFI_PREFIX_BYTES,
               "ofi prefix is 16 bytes");

/* Writes p as GIN_OFI_PREFIX_BYTES wire bytes to out. */
void gin_ofi_prefix_encode(const gin_ofi_prefix_t *p, uint8_t *out);

/* Checks the prefix of a message of len bytes that rank `self` of an
 * nranks job received: at least `least` bytes in all, magic, version,
 * reserved, and a sender other than self that use marks (use[r] != 0).
 * Pure. Returns GIN_SUCCESS and the prefix in *out, or GIN_ERR_PROTOCOL
 * with what was wrong in why (why_len bytes, may be 0); GIN_ERR_INVALID
 * on NULL buf or use. */
gin_result_t gin_ofi_prefix_check(const void *buf, size_t len, size_t least,
                                  int self, int nranks, const uint8_t *use,
                                  char *why, size_t why_len,
                                  gin_ofi_prefix_t *out);

/* Bytes of one setup entry in a job of nranks (>= 1) ranks. */
size_t gin_ofi_entry_bytes(int nranks);

/* Writes one rank's setup entry to out: its setup result, its endpoint's
 * name (name_len <= GIN_OFI_NAME_MAX bytes; NULL or 0: none) and a bit for
 * every r with use[r] != 0 (use NULL: none); the rest zero. */
void gin_ofi_entry_encode(int32_t status, const void *name, size_t name_len,
                          const uint8_t *use, int nranks, uint8_t *out);

/* Checks the nranks entries every rank received (all, len bytes). For each
 * rank a from 0 up: its status is GIN_SUCCESS, its name length at most
 * GIN_OFI_NAME_MAX, then for each higher rank b, a uses ofi with b exactly
 * when b uses it with a, and where they do both have a name. The first
 * failure in this order is reported, so that every rank fails alike.
 * Pure. Returns GIN_SUCCESS; else with what was wrong in why:
 * GIN_ERR_REMOTE (a rank's setup failed), GIN_ERR_INVALID (use not
 * symmetric: the ranks' settings differ; also NULL all or nranks < 1),
 * GIN_ERR_PROTOCOL (a wrong length or name). */
gin_result_t gin_ofi_entries_check(const void *all, size_t len, int nranks,
                                   char *why, size_t why_len);

/* Rank r's name in checked entries: its bytes and length. */
const uint8_t *gin_ofi_entry_name(const void *all, int nranks, int r,
                                  size_t *len_out);

#endif
