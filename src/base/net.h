/*
 * Socket helpers shared by the bootstrap (src/comm) and the tcp transport
 * (src/transport): an IPv4 / IPv6 address with its port, its conversions
 * to and from struct sockaddr and text, and the poll timeout that is left
 * before a deadline. Host side only. Part of the base layer: it includes
 * nothing from arch/, proxy/ or transport/.
 */
#ifndef GIN_BASE_NET_H
#define GIN_BASE_NET_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "gin/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An IPv4 or IPv6 address and port. Not a wire format: the bootstrap and
 * the tcp transport encode these fields one by one (little endian), never
 * the struct's bytes. */
typedef struct gin_net_addr {
  uint16_t family;  /* AF_INET or AF_INET6 */
  uint16_t port;    /* host byte order */
  uint8_t addr[16]; /* network byte order; AF_INET uses the first 4 */
} gin_net_addr_t;

/* Fills *ss_out (zeroed first) with the socket address of a: a
 * sockaddr_in6 when a->family is AF_INET6, else a sockaddr_in (AF_INET,
 * the first 4 bytes of a->addr). Returns the length to pass to bind() or
 * connect() with it. Cannot fail. Thread safe: writes only *ss_out. */
socklen_t gin_net_addr_to_sockaddr(const gin_net_addr_t *a,
                                   struct sockaddr_storage *ss_out);

/* Converts sa (an AF_INET or AF_INET6 socket address, as from accept(),
 * getsockname() or getaddrinfo()) into *addr_out, the bytes past the
 * address zeroed. Returns GIN_SUCCESS, or GIN_ERR_UNSUPPORTED for any
 * other family, with *addr_out untouched. Records and logs nothing.
 * Thread safe: writes only *addr_out. */
gin_result_t gin_net_addr_from_sockaddr(const struct sockaddr *sa,
                                        gin_net_addr_t *addr_out);

/* Writes a as text into buf (len bytes, truncated to fit, always
 * terminated when len > 0): "1.2.3.4:port", or "[v6]:port" for AF_INET6;
 * a family other than AF_INET6 is printed as IPv4. Returns buf, so that it
 * can stand in a log call's arguments. Thread safe: writes only buf. */
const char *gin_net_addr_str(const gin_net_addr_t *a, char *buf, size_t len);

/* The local address this host sends from to reach `to` (an AF_INET or
 * AF_INET6 address: the route's source, found by a UDP connect, which
 * sends nothing) into *out, port 0. Returns GIN_SUCCESS, or
 * GIN_ERR_SYSTEM with errno set where no route leads there; records and
 * logs nothing. Thread safe: writes only *out. */
gin_result_t gin_net_route_source(const gin_net_addr_t *to,
                                  gin_net_addr_t *out);

/* Resolves host (a numeric address or a name; "[v6]" accepted) to its
 * first IPv4 or IPv6 address, with port, into *out. Returns 0, or -1 with
 * *why saying why (getaddrinfo's words, "empty or too long", "no IPv4 or
 * IPv6 address"). Thread safe. */
int gin_net_resolve(const char *host, int port, gin_net_addr_t *out,
                    const char **why);

/* Whether a (port ignored) is the address of one of this machine's
 * interfaces other than loopback ones. Thread safe. */
int gin_net_addr_on_interface(const gin_net_addr_t *a);

/* Whether a is a loopback address (127/8, ::1) or an IPv6 link-local one
 * (fe80::/10: reachable only through the interface it names, which a
 * peer on another host cannot). Thread safe. */
int gin_net_addr_local_only(const gin_net_addr_t *a);

/* Milliseconds from now until deadline_ns (a gin_now_ns() time), rounded
 * up and capped at 10^9, to pass as poll()'s timeout; 0 once the deadline
 * has passed. Thread safe. */
int gin_net_poll_timeout_ms(uint64_t deadline_ns);

/* Sets TCP_NODELAY on the TCP socket fd and, where the kernel has the
 * option (Linux 6.15), caps its retransmission timeout at 1 s, so a
 * connection resumes within about a second of a link's return. Returns
 * GIN_SUCCESS, or GIN_ERR_SYSTEM with errno set where TCP_NODELAY fails;
 * records and logs nothing (the callers treat it as best effort). Thread
 * safe. */
gin_result_t gin_net_tune(int fd);

/* The one set of socket calls the bootstrap and the tcp transport share,
 * with one retry rule. */

/* Opens a non-blocking, close-on-exec listening socket on *a (port 0:
 * any free one), SO_REUSEADDR set; writes the address it is bound to into
 * *bound (may be a). Returns the fd, or -1 with errno set. */
int gin_net_listen(const gin_net_addr_t *a, gin_net_addr_t *bound);

/* Connects to a before deadline_ns (a gin_now_ns() time), retrying every
 * 20 ms what a peer slow to listen answers (refused, unreachable, timed
 * out, ...) and giving up at once where no retry can help (EAFNOSUPPORT,
 * EPROTONOSUPPORT, EINVAL, EACCES, EPERM). Returns a non-blocking,
 * close-on-exec fd tuned by gin_net_tune, or -1 with *err_out the last errno
 * (ETIMEDOUT at the deadline). */
int gin_net_connect(const gin_net_addr_t *a, uint64_t deadline_ns,
                    int *err_out);

/* Whether err only says "not now" (EAGAIN, EWOULDBLOCK, EINTR). */
static inline int gin_net_again(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

/* Whether gin_net_connect retries error err (what a peer that does not
 * listen yet answers): such a failure at the deadline is a timeout. */
int gin_net_retryable(int err);

/* gin_net_io_all's results besides 0 (done) and a positive errno. */
enum { GIN_NET_IO_TIMEOUT = -1, GIN_NET_IO_EOF = -2 };

/* Sends (dir_send) or receives exactly len bytes on the non-blocking fd
 * before deadline_ns: 0, GIN_NET_IO_TIMEOUT, GIN_NET_IO_EOF (the peer
 * closed while receiving) or a positive errno. Never raises SIGPIPE. */
int gin_net_io_all(int fd, void *buf, size_t len, int dir_send,
                   uint64_t deadline_ns);

/* For the pure checks of wire messages: formats what was wrong into
 * buf[0, len) (nothing when buf is NULL or len is 0; NUL-terminated
 * otherwise) and returns res. No logging; thread safe. */
gin_result_t gin_net_why(char *buf, size_t len, gin_result_t res,
                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif
/* Little-endian encoding of wire fields, independent of the host order.
 * On a little-endian host each is one unaligned load or store (memcpy):
 * the byte loops cost the tcp header ~300 instructions to encode and ~700
 * to decode and check (docs/PERFORMANCE.md, "Design figures"). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ &&    \
    !defined(GIN_LE_PORTABLE) /* the byte loops, for a test on any host */
#define GIN_LE_FIELD(bits)                                                     \
  static inline void gin_le_put##bits(uint8_t *p, uint##bits##_t v) {          \
    memcpy(p, &v, sizeof v);                                                   \
  }                                                                            \
  static inline uint##bits##_t gin_le_get##bits(const uint8_t *p) {            \
    uint##bits##_t v;                                                          \
    memcpy(&v, p, sizeof v);                                                   \
    return v;                                                                  \
  }
#else
#define GIN_LE_FIELD(bits)                                                     \
  static inline void gin_le_put##bits(uint8_t *p, uint##bits##_t v) {          \
    for (unsigned i = 0; i < (bits) / 8; i++)                                  \
      p[i] = (uint8_t)(v >> (8 * i));                                          \
  }                                                                            \
  static inline uint##bits##_t gin_le_get##bits(const uint8_t *p) {            \
    uint##bits##_t v = 0;                                                      \
    for (unsigned i = 0; i < (bits) / 8; i++)                                  \
      v |= (uint##bits##_t)((uint##bits##_t)p[i] << (8 * i));                  \
    return v;                                                                  \
  }
#endif
GIN_LE_FIELD(16)
GIN_LE_FIELD(32)
GIN_LE_FIELD(64)
#undef GIN_LE_FIELD

#endif
