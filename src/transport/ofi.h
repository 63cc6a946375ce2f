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
 *   write token: the remote CQ data of an RMA write, which stands in the
 *            sender's message sequence: the sender's rank and the
 *            write's sequence number, in 8 bytes (rank << 32 | seq) where
 *            the provider carries 8, else in 4 (rank << 20 | seq's low 20
 *            bits; jobs of at most 4096 ranks), the receiver taking the
 *            sequence number nearest the one it expects next.
 *   window key (GIN_OFI_KEY_BYTES): status u32 (1: registered for RMA
 *            writes, 0: not), generation u32, address u64 (the base
 *            writes add their offset to), key u64.
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

#define GIN_OFI_KEY_BYTES 24
/* Ranks a 4-byte write token can name. */
#define GIN_OFI_TOKEN4_RANKS 4096

/* The remote CQ data of rank's write with sequence number seq, in a
 * provider's cq_data_bytes (4 or 8; rank < GIN_OFI_TOKEN4_RANKS for 4). */
uint64_t gin_ofi_token_encode(int rank, uint32_t seq, size_t cq_data_bytes);

/* Decodes write token `data` that rank `self` of an nranks job received,
 * with cq_data_bytes as in gin_ofi_token_encode; next_seq(arg, rank)
 * gives the sequence number expected next from a rank, which a 4-byte
 * token's 20 bits are widened around. Checks the sender as
 * gin_ofi_prefix_check does. Pure. Returns GIN_SUCCESS with *rank_out and
 * *seq_out, or GIN_ERR_PROTOCOL with what was wrong in why;
 * GIN_ERR_INVALID on NULL use or next_seq. */
gin_result_t gin_ofi_token_decode(uint64_t data, size_t cq_data_bytes, int self,
                                  int nranks, const uint8_t *use,
                                  uint32_t (*next_seq)(void *arg, int rank),
                                  void *arg, char *why, size_t why_len,
                                  int *rank_out, uint32_t *seq_out);

/* One rank's window key as GIN_OFI_KEY_BYTES wire bytes. */
void gin_ofi_key_encode(uint32_t status, uint32_t gen, uint64_t addr,
                        uint64_t key, uint8_t *out);
/* Decodes one window key; 0 where its status is not 1 (the rank did not
 * register the window for writes). Pure. */
int gin_ofi_key_decode(const uint8_t *in, uint32_t *gen, uint64_t *addr,
                       uint64_t *key);

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

/* The transport's settings (ofi_params.c, read by ofi.c): GIN_OFI_PROVIDER,
 * GIN_OFI_RMA, GIN_OFI_RMA_MIN. */
const char *gin_ofi_param_provider(void);
int64_t gin_ofi_param_rma(void);
int64_t gin_ofi_param_rma_min(void);

#endif
