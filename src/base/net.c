/*
 * Socket helpers shared by the bootstrap and the tcp transport: net.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/net.h"

socklen_t gin_net_addr_to_sockaddr(const gin_net_addr_t *a,
                                   struct sockaddr_storage *ss_out) {
  memset(ss_out, 0, sizeof *ss_out);
  if (a->family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss_out;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a->port);
    memcpy(&s6->sin6_addr, a->addr, 16);
    return sizeof *s6;
  }
  struct sockaddr_in *s4 = (struct sockaddr_in *)ss_out;
  s4->sin_family = AF_INET;
  s4->sin_port = htons(a->port);
  memcpy(&s4->sin_addr, a->addr, 4);
  return sizeof *s4;
}

gin_result_t gin_net_addr_from_sockaddr(const struct sockaddr *sa,
                                        gin_net_addr_t *addr_out) {
  gin_net_addr_t a;
  memset(&a, 0, sizeof a);
  if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
    a.port = ntohs(s6->sin6_port);
    memcpy(a.addr, &s6->sin6_addr, 16);
  } else if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
    a.port = ntohs(s4->sin_port);
    memcpy(a.addr, &s4->sin_addr, 4);
  } else {
    return GIN_ERR_UNSUPPORTED;
  }
  a.family = sa->sa_family;
  *addr_out = a;
  return GIN_SUCCESS;
}

const char *gin_net_addr_str(const gin_net_addr_t *a, char *buf, size_t len) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int v6 = a->family == AF_INET6;
  inet_ntop(v6 ? AF_INET6 : AF_INET, a->addr, ip, sizeof ip);
  snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", ip, a->port);
  return buf;
}

gin_result_t gin_net_route_source(const gin_net_addr_t *to,
                                  gin_net_addr_t *out) {
  struct sockaddr_storage ss;
  socklen_t sl = gin_net_addr_to_sockaddr(to, &ss);
  if (to->family != AF_INET && to->family != AF_INET6) {
    errno = EAFNOSUPPORT;
    return GIN_ERR_SYSTEM;
  }
  int fd = socket(to->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return GIN_ERR_SYSTEM;
  gin_result_t res = GIN_ERR_SYSTEM;
  if (connect(fd, (struct sockaddr *)&ss, sl) == 0) {
    sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
      res = gin_net_addr_from_sockaddr((struct sockaddr *)&ss, out);
    if (res != GIN_SUCCESS) res = GIN_ERR_SYSTEM;
  }
  int err = errno;
  close(fd);
  errno = err;
  if (res == GIN_SUCCESS) out->port = 0;
  return res;
}

int gin_net_addr_local_only(const gin_net_addr_t *a) {
  static const uint8_t v6_loop[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                      0, 0, 0, 0, 0, 0, 0, 1};
  if (a->family == AF_INET6)
    return !memcmp(a->addr, v6_loop, 16) ||
           (a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80);
  return a->addr[0] == 127;
}

int gin_net_poll_timeout_ms(uint64_t deadline_ns) {
  uint64_t now = gin_now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999999) / 1000000;
  return ms > 1000000000 ? 1000000000 : (int)ms;
}

/* Linux 6.15's cap on a connection's retransmission timeout (<linux/tcp.h>
 * of older systems lacks the name; older kernels refuse the option). */
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif
#define NET_RTO_MAX_MS 1000 /* the smallest cap the kernel takes */

gin_result_t gin_net_tune(int fd) {
  int one = 1, rto_max = NET_RTO_MAX_MS;
  /* Segments lost while a link is down are retried with a doubling
   * timeout: after a 1 s outage the next retry can come seconds after the
   * link is back. Capped, every connection retries at least once a
   * second, so traffic resumes within about a second of the link's
   * return. Best effort: kernels before 6.15 keep their backoff. */
  setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &rto_max, sizeof rto_max);
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    return GIN_ERR_SYSTEM;
  return GIN_SUCCESS;
}

int gin_net_resolve(const char *host, int port, gin_net_addr_t *out,
                    const char **why) {
  char name[256];
  size_t n = strlen(host);
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']') host++, n -= 2;
  *why = "empty or too long";
  if (n == 0 || n >= sizeof name) return -1;
  memcpy(name, host, n);
  name[n] = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(name, NULL, &hints, &res), found = -1;
  *why = rc ? gai_strerror(rc) : "no IPv4 or IPv6 address";
  for (struct addrinfo *ai = rc ? NULL : res; ai && found < 0; ai = ai->ai_next)
    found =
        gin_net_addr_from_sockaddr(ai->ai_addr, out) == GIN_SUCCESS ? 0 : -1;
  if (res) freeaddrinfo(res);
  out->port = (uint16_t)port;
  return found;
}

int gin_net_addr_on_interface(const gin_net_addr_t *a) {
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) != 0) return 0;
  int found = 0;
  for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
    gin_net_addr_t b;
    found = i->ifa_addr && !(i->ifa_flags & IFF_LOOPBACK) &&
            (i->ifa_addr->sa_family == AF_INET ||
             i->ifa_addr->sa_family == AF_INET6) &&
            gin_net_addr_from_sockaddr(i->ifa_addr, &b) == GIN_SUCCESS &&
            b.family == a->family &&
            !memcmp(b.addr, a->addr, a->family == AF_INET ? 4 : 16);
  }
  freeifaddrs(ifs);
  return found;
}

gin_result_t gin_net_why(char *buf, size_t len, gin_result_t res,
                         const char *fmt, ...) {
  if (buf && len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
  }
  return res;
}

#define NET_RETRY_MS 20 /* pause between connection attempts */

int gin_net_listen(const gin_net_addr_t *a, gin_net_addr_t *bound) {
  struct sockaddr_storage ss;
  socklen_t sl = gin_net_addr_to_sockaddr(a, &ss);
  int one = 1,
      fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, sl) == 0 && listen(fd, SOMAXCONN) == 0 &&
      getsockname(fd, (struct sockaddr *)&ss, &(socklen_t){sizeof ss}) == 0 &&
      gin_net_addr_from_sockaddr((struct sockaddr *)&ss, bound) == GIN_SUCCESS)
    return fd;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

int gin_net_retryable(int err) {
  return err != EAFNOSUPPORT && err != EINVAL && err != EACCES &&
         err != EPERM && err != EPROTONOSUPPORT;
}

int gin_net_connect(const gin_net_addr_t *a, uint64_t deadline_ns,
                    int *err_out) {
  struct sockaddr_storage ss;
  socklen_t sl = gin_net_addr_to_sockaddr(a, &ss);
  int err;
  for (;;) {
    int fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *err_out = errno;
      return -1;
    }
    gin_net_tune(fd);
    if (connect(fd, (struct sockaddr *)&ss, sl) == 0) return fd;
    err = errno;
    if (err == EINPROGRESS) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      int n = poll(&p, 1, gin_net_poll_timeout_ms(deadline_ns));
      if (n > 0 &&
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
                     &(socklen_t){sizeof err}) == 0 &&
          err == 0)
        return fd;
      err = n == 0 ? ETIMEDOUT : n < 0 ? errno : err;
    }
    close(fd);
    int left = gin_net_poll_timeout_ms(deadline_ns);
    if (!gin_net_retryable(err) || left == 0) break;
    int ms = left < NET_RETRY_MS ? left : NET_RETRY_MS;
    nanosleep(&(struct timespec){0, (long)ms * 1000000L}, NULL);
  }
  *err_out = err;
  return -1;
}

int gin_net_io_all(int fd, void *buf, size_t len, int dir_send,
                   uint64_t deadline_ns) {
  for (size_t done = 0; done < len;) {
    char *p = (char *)buf + done;
    ssize_t n = dir_send ? send(fd, p, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                         : recv(fd, p, len - done, MSG_DONTWAIT);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n == 0 && !dir_send) return GIN_NET_IO_EOF;
    if (n < 0 && !gin_net_again(errno)) return errno;
    struct pollfd pfd = {.fd = fd, .events = dir_send ? POLLOUT : POLLIN};
    int left = gin_net_poll_timeout_ms(deadline_ns);
    if (left == 0) return GIN_NET_IO_TIMEOUT;
    if (poll(&pfd, 1, left) < 0 && errno != EINTR) return errno;
  }
  return 0;
}
