/*
 * tcp transport: the wire format and the pure checks of what arrives (the
 * hello that opens a connection, the header of each operation). Exposed
 * for the unit tests and fuzzers; tcp.c is the only other user.
 *
 * Wire (all integers little endian, explicit sizes):
 *   hello (32 B): magic u32 "GINH", version u16, reserved u16 (0),
 *                 secret[16], rank i32, nranks i32
 *   header (72 B): the fields of gin_tcp_hdr_t at their struct offsets;
 *                 `bytes` of payload follow a PUT header.
 *   setup entry (gin_tcp_entry_bytes(nranks), all-gathered through the
 *                 bootstrap at init): status i32, family u16, port u16,
 *                 addr[16], then bit r % 8 of byte 24 + r / 8 set for each
 *                 rank r the sender uses tcp with, zero padding to 8 bytes.
 *
 * Layering: uses transport/job.h (the window table) and base/net.h
 * (addresses); used by tcp.c and tests.
 */
#ifndef GIN_TRANSPORT_TCP_H
#define GIN_TRANSPORT_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "base/net.h"
#include "transport/job.h"

#define GIN_TCP_HELLO_MAGIC 0x47494e48u /* "GINH" */
#define GIN_TCP_HDR_MAGIC 0x47494e54u   /* "GINT" */
#define GIN_TCP_VERSION 1
#define GIN_TCP_HELLO_BYTES 32
#define GIN_TCP_HDR_BYTES 72
#define GIN_TCP_MAX_CHUNK (1u << 20) /* the largest payload of one header */
#define GIN_TCP_ENTRY_HEAD 24 /* setup entry: status, family, port, addr */

enum {
  GIN_TCP_OP_PUT = 1,    /* payload to dst_win at dst_off, then the signal */
  GIN_TCP_OP_SIGNAL = 2, /* the signal alone */
  GIN_TCP_OP_BYE = 3     /* the sender destroyed its communicator */
};
enum { GIN_TCP_F_SIGNAL = 1 }; /* flags: a signal (and mode) follows */

/* One decoded hello. */
typedef struct gin_tcp_hello {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  uint8_t secret[16];
  int32_t rank;
  int32_t nranks;
} gin_tcp_hello_t;

/* One decoded header; the wire layout is this struct's, little endian. */
typedef struct gin_tcp_hdr {
  uint32_t magic;
  uint16_t version;
  uint8_t op;       /* GIN_TCP_OP_* */
  uint8_t flags;    /* GIN_TCP_F_* */
  uint32_t dst_win; /* window slot (PUT) */
  uint32_t dst_gen; /* its generation at the sender */
  uint64_t dst_off;
  uint64_t bytes;   /* payload that follows (PUT), <= GIN_TCP_MAX_CHUNK */
  uint32_t sig_win; /* signal window slot (F_SIGNAL) */
  uint32_t sig_gen;
  uint64_t sig_off; /* the 64-bit signal word */
  uint64_t sig_add;
  uint64_t mode_off; /* the 32-bit mode word, 0: none */
  uint32_t mode_bit;
  uint32_t reserved;
} gin_tcp_hdr_t;

_Static_assert(sizeof(gin_tcp_hello_t) == GIN_TCP_HELLO_BYTES,
               "tcp hello is 32 bytes");
_Static_assert(sizeof(gin_tcp_hdr_t) == GIN_TCP_HDR_BYTES,
               "tcp header is 72 bytes");

/* Writes hello h as GIN_TCP_HELLO_BYTES wire bytes to out. */
void gin_tcp_hello_encode(const gin_tcp_hello_t *h, uint8_t *out);

/* Checks the hello a connecting rank sent to rank `self` of an nranks job
 * with the given secret: length, magic, version, secret, job size, and a
 * rank below self (lower ranks connect) that `expect` allows (expect[r]
 * != 0; NULL: any). Pure (no logging). Returns GIN_SUCCESS and the sender's
 * rank in *rank_out, or GIN_ERR_PROTOCOL with what was wrong in why
 * (why_len bytes, may be 0); GIN_ERR_INVALID on NULL buf or secret. */
gin_result_t gin_tcp_hello_check(const void *buf, size_t len,
                                 const uint8_t secret[16], int self, int nranks,
                                 const uint8_t *expect, char *why,
                                 size_t why_len, int *rank_out);

/* Writes header h as GIN_TCP_HDR_BYTES wire bytes to out. */
void gin_tcp_hdr_encode(const gin_tcp_hdr_t *h, uint8_t *out);

/* Decodes the header in buf and checks it against the receiver's window
 * table wins[0, nwins) before anything is written: magic, version, op,
 * flags, reserved fields, the destination window (live, same generation)
 * and [dst_off, dst_off + bytes) inside it, the 8-byte aligned signal word
 * and 4-byte aligned mode word inside the signal window. Pure (reads the
 * table with atomic loads; no logging). Returns GIN_SUCCESS and the header
 * in *out; GIN_ERR_AGAIN if a window it names is not registered here yet
 * (the sender registered it first: try again later); GIN_ERR_PROTOCOL
 * with why otherwise; GIN_ERR_INVALID on NULL buf. */
gin_result_t gin_tcp_header_check(const void *buf, size_t len,
                                  const gin_win_slot_t *wins, uint32_t nwins,
                                  char *why, size_t why_len,
                                  gin_tcp_hdr_t *out);

/* Bytes of one setup entry in a job of nranks (>= 1) ranks: the head and a
 * bit per rank, rounded up to 8. */
size_t gin_tcp_entry_bytes(int nranks);

/* Writes one rank's setup entry, gin_tcp_entry_bytes(nranks) bytes, to out:
 * its setup result `status`, its listen address (NULL: zeros) and a bit
 * for every r in [0, nranks) with use[r] != 0 (use NULL: none); the rest
 * zero. */
void gin_tcp_entry_encode(int32_t status, const gin_net_addr_t *addr,
                          const uint8_t *use, int nranks, uint8_t *out);

/* Checks the nranks setup entries every rank received from the all-gather
 * (all, len bytes: nranks * gin_tcp_entry_bytes(nranks)). For each rank a
 * from 0 up: a's status is GIN_SUCCESS, then for each higher rank b, a
 * uses tcp with b exactly when b uses it with a, and where they do, b's
 * address (a connects to it) is AF_INET or AF_INET6 with a port other
 * than 0. The first failure in this order is reported, so that every rank
 * fails alike. Not looked at: a rank's bit for itself, bits for ranks past
 * nranks, the padding, and the address of a rank no lower rank connects
 * to. Pure (no I/O, no logging). Returns GIN_SUCCESS and, if addrs is not
 * NULL, every rank's address as sent in addrs[0, nranks); outputs are
 * written only on success. Otherwise, with what was wrong in why (why_len
 * bytes, may be 0): GIN_ERR_REMOTE, a rank's setup failed (its listening
 * socket); GIN_ERR_INVALID, tcp use not symmetric (configurations
 * differ); GIN_ERR_PROTOCOL, a wrong length or a bad address; also
 * GIN_ERR_INVALID on NULL all or nranks < 1. */
gin_result_t gin_tcp_entries_check(const void *all, size_t len, int nranks,
                                   char *why, size_t why_len,
                                   gin_net_addr_t *addrs);

#endif
