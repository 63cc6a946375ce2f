/*
 * Socket helpers shared by the bootstrap and the tcp transport: net.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

int gin_net_poll_timeout_ms(uint64_t deadline_ns) {
  uint64_t now = gin_now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999999) / 1000000;
  return ms > 1000000000 ? 1000000000 : (int)ms;
}

gin_result_t gin_net_set_nodelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    return GIN_ERR_SYSTEM;
  return GIN_SUCCESS;
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
