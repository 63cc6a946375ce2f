/*
 * Bootstrap: out-of-band TCP network among the ranks of one job, used to
 * exchange handles (all-gather) and to synchronise (barrier) at setup.
 *
 * The unique id carries the root's address, port and a random 128-bit job
 * secret. Every connection (rank -> root, rank -> rank) opens with a fixed
 * hello that carries magic, protocol version, the secret, and the sender's
 * rank and job size; anything else is refused with a log line. Every step
 * is bounded by the timeout given at init (GIN_TIMEOUT_MS). Each message
 * read from a socket (hello, the root's reply and address table, the
 * collective header) goes through a pure check function declared here,
 * which the fuzzers (tests/fuzz) drive directly.
 */
#ifndef GIN_BOOTSTRAP_H
#define GIN_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/net.h"
#include "gin/gin.h"

#define GIN_BS_MAGIC 0x47494e42u /* "GINB" */
#define GIN_BS_VERSION 1

/* The unique id's contents (inside gin_unique_id_t.bytes). */
typedef struct gin_bs_uid {
  uint32_t magic;
  uint16_t version;
  uint16_t family;  /* AF_INET or AF_INET6 */
  uint8_t addr[16]; /* network byte order */
  uint16_t port;    /* host byte order */
  uint16_t pad_;
  int32_t nranks;
  uint8_t secret[16];
} gin_bs_uid_t;

/* The hello every connection starts with (fixed size, little endian). */
typedef struct gin_bs_hello {
  uint32_t magic;
  uint16_t version;
  uint16_t kind; /* GIN_BS_HELLO_* */
  uint8_t secret[16];
  int32_t rank;
  int32_t nranks;
  uint16_t family; /* the sender's listen address, for the root */
  uint16_t port;
  uint8_t addr[16];
} gin_bs_hello_t;

enum { GIN_BS_HELLO_ROOT = 1, GIN_BS_HELLO_RING = 2, GIN_BS_HELLO_LINK = 3 };
#define GIN_BS_HELLO_BYTES 52 /* a hello on the wire */

/* Writes hello h as GIN_BS_HELLO_BYTES wire bytes to p (little endian;
 * addr copied as is). Pure; thread safe. Exposed for the fuzzers' seed
 * corpus and round-trip check; the bootstrap is the only other user. */
void gin_bs_hello_encode(const gin_bs_hello_t *h, uint8_t *p);

/* Checks a received hello against the job (secret, magic, version, rank
 * range, size). Pure function of the bytes: fuzzed. */
gin_result_t gin_bs_hello_check(const void *buf, size_t len,
                                const uint8_t secret[16], int nranks, int kind,
                                gin_bs_hello_t *out);

/* The root's reply to a rank's hello (GIN_BS_REPLY_BYTES, little endian:
 * magic u32, status u32, nranks i32, a, b, c i32). OK is followed by the
 * address table: nranks entries of GIN_BS_ENTRY_BYTES (family u16, port
 * u16, addr[16] in network order), the ranks' listen addresses. */
enum {
  GIN_BS_STATUS_OK = 0,      /* the table follows; a, b, c unused (0) */
  GIN_BS_STATUS_TIMEOUT = 1, /* a ranks joined, b the first missing, c ms */
  GIN_BS_STATUS_REFUSED = 2  /* a why the hello was refused, b its rank */
};
#define GIN_BS_REPLY_BYTES 24
#define GIN_BS_ENTRY_BYTES 20

typedef struct gin_bs_reply {
  uint32_t status; /* GIN_BS_STATUS_* */
  int32_t nranks;  /* the root's job size */
  int32_t a, b, c; /* by status, see above */
} gin_bs_reply_t;

/* Writes reply r as GIN_BS_REPLY_BYTES wire bytes to p (magic
 * GIN_BS_MAGIC). Pure; thread safe. The root's encoder; exposed for the
 * fuzzers' seed corpus and round-trip check. */
void gin_bs_reply_encode(const gin_bs_reply_t *r, uint8_t *p);

/* Checks the root's reply to a rank of a job of nranks, as received (len
 * bytes at buf): GIN_SUCCESS and the reply in *out (if out is not NULL)
 * when it is GIN_BS_REPLY_BYTES long with the magic, and either OK for a
 * job of nranks or TIMEOUT or REFUSED (their a, b, c and nranks are the
 * root's numbers, any values: the caller only reports them). Otherwise
 * GIN_ERR_PROTOCOL with what was wrong in why (why_len bytes, may be 0;
 * NUL-terminated when why_len > 0) and *out untouched; GIN_ERR_INVALID on
 * a NULL buf. Pure: no I/O, no logging; thread safe. Fuzzed
 * (tests/fuzz/fuzz_bs_reply.c). */
gin_result_t gin_bs_reply_check(const void *buf, size_t len, int nranks,
                                char *why, size_t why_len, gin_bs_reply_t *out);

/* Writes the address table of addrs[0, nranks) to p: nranks *
 * GIN_BS_ENTRY_BYTES bytes. Pure; thread safe. The root's encoder; exposed
 * for the fuzzers. */
void gin_bs_table_encode(const gin_net_addr_t *addrs, int nranks, uint8_t *p);

/* Checks the address table that follows an OK reply, as received by rank
 * self (in [0, nranks), nranks >= 1) that sent listen address *own in its
 * hello: GIN_SUCCESS and the nranks addresses in addrs_out[0, nranks) (if
 * addrs_out is not NULL) when it is exactly nranks * GIN_BS_ENTRY_BYTES
 * long, every entry is AF_INET or AF_INET6 with a port (port 0 only in a
 * job of one rank), and entry self has own's port and addr (the family is
 * not compared; addr's 16 bytes are taken as they are, for either family).
 * Otherwise GIN_ERR_PROTOCOL with what was wrong in why (as for
 * gin_bs_reply_check) and addrs_out untouched; GIN_ERR_INVALID on a NULL
 * buf or own, or self / nranks out of range. Reads only buf[0, len). Pure:
 * no I/O, no logging; thread safe. Fuzzed (tests/fuzz/fuzz_bs_reply.c). */
gin_result_t gin_bs_table_check(const void *buf, size_t len, int nranks,
                                int self, const gin_net_addr_t *own, char *why,
                                size_t why_len, gin_net_addr_t *addrs_out);

/* The header of each all-gather (GIN_BS_COLL_BYTES, little endian): magic
 * u32 GIN_BS_COLL_MAGIC, the collective's sequence number u32, the bytes
 * per rank u64. Each rank sends it to the next before the data. */
#define GIN_BS_COLL_MAGIC 0x47494e41u /* "GINA" */
#define GIN_BS_COLL_BYTES 16

/* Writes the header of collective seq of `bytes` per rank to p
 * (GIN_BS_COLL_BYTES). Pure; thread safe. */
void gin_bs_coll_encode(uint32_t seq, uint64_t bytes, uint8_t *p);

/* Checks the header received from the previous rank against this rank's
 * collective seq of `bytes` per rank: GIN_SUCCESS when it is
 * GIN_BS_COLL_BYTES long with the magic, seq and bytes; otherwise
 * GIN_ERR_PROTOCOL with the mismatch in why (why_len bytes, may be 0;
 * NUL-terminated when why_len > 0); GIN_ERR_INVALID on a NULL buf. Pure:
 * no I/O, no logging; thread safe. Fuzzed (tests/fuzz/fuzz_bs_coll.c). */
gin_result_t gin_bs_coll_check(const void *buf, size_t len, uint32_t seq,
                               uint64_t bytes, char *why, size_t why_len);

/* Starts a root that serves one job of nranks ranks on addr:port (port 0:
 * any free port) with the given secret, in a detached thread. Writes the
 * uid describing it. The thread exits once all ranks were served or after
 * timeout_ms. */
gin_result_t gin_bs_root_start(int nranks, const char *addr, int port,
                               const uint8_t secret[16], int64_t timeout_ms,
                               gin_unique_id_t *uid_out);

/* The root port the mpirun/srun/torchrun conventions derive from a job id
 * (as gin_comm_init_from_env forms it, e.g. "ompi:<jobid>") when no port
 * is set: in [20000, 60000). */
int gin_env_derived_port(const char *jobid);

typedef struct gin_bs gin_bs_t;

/* Joins the job: registers with the root, gets every rank's address,
 * connects the ring. Bounded by timeout_ms. */
gin_result_t gin_bs_init(const gin_unique_id_t *uid, int rank, int nranks,
                         int64_t timeout_ms, gin_bs_t **bs_out);
/* In-place all-gather: buf holds nranks blocks of `bytes`; block `rank` is
 * this rank's contribution. With an abort check set (gin_bs_set_abort) it
 * stops within ~20 ms once the check reports an error, and a broken ring
 * is reported as the check's error when it explains it. */
gin_result_t gin_bs_allgather(gin_bs_t *bs, void *buf, size_t bytes);
gin_result_t gin_bs_barrier(gin_bs_t *bs);
void gin_bs_destroy(gin_bs_t *bs);

/* The owner's abort state, for the collectives: returns GIN_SUCCESS while
 * the owner is not aborted, else the error (recorded, message naming the
 * cause). settle_ms > 0: wait that long for a cause to appear (a broken
 * ring is often a dead rank that the owner's watcher is about to name). */
typedef gin_result_t (*gin_bs_abort_fn)(void *arg, int settle_ms);
/* Sets the abort check of bs's collectives (fn NULL: none). Call before
 * the collectives run, from the thread that runs them. */
void gin_bs_set_abort(gin_bs_t *bs, gin_bs_abort_fn fn, void *arg);

/* Opens one more connection to each rank of peers[0..n) (each listed
 * once, not this rank; the relation must be symmetric: rank a lists b iff
 * b lists a): connects to the higher ranks, accepts the lower ones, each
 * authenticated with the job secret both ways (hello kind LINK). Writes
 * the non-blocking fds to fds_out in the order of peers. Then closes the
 * listening socket: at most once per bootstrap, and only once every rank
 * has its ring (call it after a collective). Bounded by the timeout. */
gin_result_t gin_bs_link(gin_bs_t *bs, const int *peers, int n, int *fds_out);
/* Closes the listening socket where no gin_bs_link will follow (the peer
 * watch is off): left open, it would take connections nobody accepts,
 * reads or logs until the job ends. */
void gin_bs_unlisten(gin_bs_t *bs);

#endif
