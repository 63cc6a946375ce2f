/*
 * Unique ids: creating one (random job secret + a bootstrap root serving
 * it) and its text form for the environment (GIN_UNIQUE_ID).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "base/base.h"
#include "base/net.h"
#include "comm/bootstrap.h"

GIN_PARAM_STR(param_root_addr, "ROOT_ADDR", "127.0.0.1",
              "address (or host name) the bootstrap root listens on and "
              "advertises in the unique id; set it to an address every host "
              "of a multi-host job can reach (unset: MASTER_ADDR where it is "
              "a non-loopback address of this host, as under torchrun, else "
              "127.0.0.1)")
GIN_PARAM_INT(param_root_port, "ROOT_PORT", 0,
              "TCP port of the bootstrap root; 0 picks a free port (with "
              "mpirun/srun/torchrun the port must be fixed: see "
              "gin_comm_init_from_env)")

static gin_result_t uid_random_secret(uint8_t secret[16]) {
  size_t got = 0;
  while (got < 16) {
    ssize_t n = getrandom(secret + got, 16 - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return GIN_ERROR(GIN_ERR_SYSTEM, "gin_get_unique_id: getrandom: %s",
                       strerror(errno));
    got += (size_t)n;
  }
  return GIN_SUCCESS;
}

GIN_PARAM_INT(param_root_timeout_ms, "ROOT_TIMEOUT_MS", 600000,
              "how long the bootstrap root made by gin_get_unique_id (and "
              "ginrun) waits for all ranks to join, in ms (at least "
              "GIN_TIMEOUT_MS)")

/* Whether MASTER_ADDR is set and its address (the first resolution, the
 * one the root would listen on) is a non-loopback interface address of
 * this machine: not another host's, nor loopback (a host name that
 * /etc/hosts maps to 127.0.1.1 stays on one host). */
static int uid_master_here(const char *m) {
  gin_net_addr_t a;
  const char *why;
  return m && *m && gin_net_resolve(m, 0, &a, &why) == 0 &&
         gin_net_addr_on_interface(&a);
}

/* Where the root listens: GIN_ROOT_ADDR; unset, MASTER_ADDR's address
 * where that is one of this machine's (torchrun names rank 0's host
 * there, which the job's ranks reach: a job id made through a
 * torch.distributed group whose rank 0 runs on that host then works
 * across hosts as is); else the default, 127.0.0.1 (one host). */
static const char *uid_root_addr(void) {
  const char *set = getenv("GIN_ROOT_ADDR");
  const char *master = getenv("MASTER_ADDR");
  if ((!set || !*set) && uid_master_here(master)) {
    GIN_INFO(INIT,
             "unique id: bootstrap root at MASTER_ADDR %s (GIN_ROOT_ADDR "
             "unset)",
             master);
    return master;
  }
  return param_root_addr();
}

gin_result_t gin_get_unique_id(int nranks, gin_unique_id_t *uid_out) {
  GIN_ARG_CHECK(uid_out, "gin_get_unique_id: uid_out is NULL");
  GIN_ARG_CHECK(nranks >= 1 && nranks <= GIN_MAX_RANKS,
                "gin_get_unique_id: nranks %d out of range [1, %d]", nranks,
                GIN_MAX_RANKS);
  int64_t port = param_root_port();
  GIN_ARG_CHECK(port >= 0 && port <= 65535,
                "GIN_ROOT_PORT=%lld out of range [0, 65535]", (long long)port);
  uint8_t secret[16];
  GIN_CHECK(uid_random_secret(secret));
  /* The root waits for ranks that may do long work (load a model) before
   * they join: its own bound, longer than the per-wait timeout. */
  int64_t wait = param_root_timeout_ms();
  if (wait < gin_timeout_ms()) wait = gin_timeout_ms();
  return gin_bs_root_start(nranks, uid_root_addr(), (int)port, secret, wait,
                           uid_out);
}

gin_result_t gin_unique_id_to_string(const gin_unique_id_t *uid, char *buf,
                                     size_t len) {
  static const char hex[] = "0123456789abcdef";
  GIN_ARG_CHECK(uid && buf, "gin_unique_id_to_string: NULL uid or buffer");
  GIN_ARG_CHECK(len >= 2 * GIN_UNIQUE_ID_BYTES + 1,
                "gin_unique_id_to_string: buffer of %zu bytes is too small "
                "(need %d)",
                len, 2 * GIN_UNIQUE_ID_BYTES + 1);
  for (int i = 0; i < GIN_UNIQUE_ID_BYTES; i++) {
    unsigned char c = (unsigned char)uid->bytes[i];
    buf[2 * i] = hex[c >> 4];
    buf[2 * i + 1] = hex[c & 15];
  }
  buf[2 * GIN_UNIQUE_ID_BYTES] = '\0';
  return GIN_SUCCESS;
}

int gin_hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

gin_result_t gin_unique_id_from_string(const char *str,
                                       gin_unique_id_t *uid_out) {
  GIN_ARG_CHECK(str && uid_out, "gin_unique_id_from_string: NULL string or "
                                "uid_out");
  size_t n = strnlen(str, 2 * GIN_UNIQUE_ID_BYTES + 1);
  GIN_ARG_CHECK(n == 2 * GIN_UNIQUE_ID_BYTES,
                "unique id string has the wrong length: %s%zu characters, "
                "expected %d hex digits",
                n > 2 * GIN_UNIQUE_ID_BYTES ? "more than " : "",
                n > 2 * GIN_UNIQUE_ID_BYTES ? n - 1 : n,
                2 * GIN_UNIQUE_ID_BYTES);
  gin_unique_id_t uid;
  for (size_t i = 0; i < n; i++) {
    int v = gin_hex_digit(str[i]);
    GIN_ARG_CHECK(v >= 0,
                  "unique id string: bad character 0x%02x at "
                  "position %zu (expected a hex digit)",
                  (unsigned char)str[i], i);
    if (i % 2 == 0)
      uid.bytes[i / 2] = (char)(v << 4);
    else
      uid.bytes[i / 2] = (char)(uid.bytes[i / 2] | v);
  }
  gin_bs_uid_t u;
  memcpy(&u, uid.bytes, sizeof u);
  GIN_ARG_CHECK(u.magic == GIN_BS_MAGIC,
                "unique id string: wrong magic "
                "0x%08x (expected 0x%08x): not a gin unique id",
                u.magic, GIN_BS_MAGIC);
  GIN_ARG_CHECK(u.version == GIN_BS_VERSION,
                "unique id string: version %u, "
                "this library speaks %d",
                u.version, GIN_BS_VERSION);
  GIN_ARG_CHECK(u.family == AF_INET || u.family == AF_INET6,
                "unique id string: bad address family %u", u.family);
  GIN_ARG_CHECK(u.port != 0, "unique id string: root port 0");
  GIN_ARG_CHECK(u.nranks >= 1 && u.nranks <= GIN_MAX_RANKS,
                "unique id string: nranks %d out of range [1, %d]",
                (int)u.nranks, GIN_MAX_RANKS);
  *uid_out = uid;
  return GIN_SUCCESS;
}
