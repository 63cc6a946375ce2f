/*
 * gin_watch_msg_check (src/comm/watch_msg.h), case by case: what a peer
 * watch link may carry (a goodbye, a death, an abort) is accepted exactly
 * as encoded, anything else is refused. The fuzzer (tests/fuzz) checks
 * the invariants on arbitrary bytes; this names the cases.
 */
#define UNIT_CHECK_NO_GIN
#include <string.h>

#include "comm/watch_msg.h"
#include "unit_check.h"

typedef struct wcase {
  const char *name;
  gin_watch_msg_t m;
  int from, ok;
} wcase_t;

int main(void) {
  const int n = 4; /* ranks */
  const wcase_t cases[] = {
      {"goodbye", {GIN_WATCH_BYE, 0, 0, 1, 1}, 1, 1},
      {"goodbye for another rank", {GIN_WATCH_BYE, 0, 0, 2, 2}, 1, 0},
      {"goodbye with a cause", {GIN_WATCH_BYE, 1, 0, 1, 1}, 1, 0},
      {"death seen closed", {GIN_WATCH_DEAD, 1, 0, 3, 1}, 1, 1},
      {"death passed on", {GIN_WATCH_DEAD, 2, 110, 2, 0}, 1, 1},
      {"the sender dead", {GIN_WATCH_DEAD, 1, 0, 1, 0}, 1, 0},
      {"death seen by the dead", {GIN_WATCH_DEAD, 1, 0, 2, 2}, 1, 0},
      {"death, bad how", {GIN_WATCH_DEAD, 3, 0, 2, 0}, 1, 0},
      {"death out of range", {GIN_WATCH_DEAD, 1, 0, 4, 0}, 1, 0},
      {"abort by another rank", {GIN_WATCH_ABORT, 0, 0, 3, 1}, 1, 1},
      {"abort by the sender", {GIN_WATCH_ABORT, 0, 0, 1, 1}, 1, 1},
      {"abort in another's name", {GIN_WATCH_ABORT, 0, 0, 3, 2}, 1, 0},
      {"abort with a cause", {GIN_WATCH_ABORT, 1, 0, 3, 1}, 1, 0},
      {"abort out of range", {GIN_WATCH_ABORT, 0, 0, -1, 1}, 1, 0},
      {"unknown type", {7, 0, 0, 1, 1}, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const wcase_t *c = &cases[i];
    uint8_t b[GIN_WATCH_MSG_BYTES];
    gin_watch_msg_encode(&c->m, b);
    gin_watch_msg_t got;
    memset(&got, 0, sizeof got);
    int res = gin_watch_msg_check(b, sizeof b, n, c->from, &got);
    CHECK(res == (c->ok ? 0 : -1), "%s: check gave %d", c->name, res);
    if (c->ok && res == 0)
      CHECK(memcmp(&got, &c->m, sizeof got) == 0, "%s: decoded differently",
            c->name);
    CHECK(gin_watch_msg_check(b, sizeof b - 1, n, c->from, NULL) == -1,
          "%s: a truncated copy was accepted", c->name);
  }
  uint8_t b[GIN_WATCH_MSG_BYTES];
  gin_watch_msg_t ok = {GIN_WATCH_ABORT, 0, 0, 3, 1};
  gin_watch_msg_encode(&ok, b);
  b[0] ^= 1;
  CHECK(gin_watch_msg_check(b, sizeof b, n, 1, NULL) == -1, "bad magic taken");
  return failures ? 1 : 0;
}
