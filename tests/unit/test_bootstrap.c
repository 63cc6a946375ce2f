/*
 * Bootstrap: hello, reply, address table and collective header checks,
 * unique id strings, a 4-rank job (all-gather of
 * several sizes up to 1 MiB blocks, barriers) while bad clients knock on
 * the root, duplicate ranks, timeouts, size mismatches, IPv6, and
 * gin_bs_link (the peer watch's extra connections: answers and knocks
 * with a wrong secret, kind or rank refused, bounded by the timeout), and
 * gin_comm_init_from_env for each launcher (with gin_comm_init stubbed
 * here, so this test does not depend on comm.c).
 * Exit 0 pass, 1 fail, 77 skip.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/net.h"
#include "comm/bootstrap.h"
#include "gin/gin.h"

#include "test_common.h"
#include "unit_check.h"

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const uint8_t test_secret[16] = {1, 2,  3,  4,  5,  6,  7,  8,
                                        9, 10, 11, 12, 13, 14, 15, 16};

/* ------------------------------------------------------------ processes */

typedef int (*child_fn)(int rank, void *arg);

/* Runs fn(rank, arg) in a child (bounded by alarm); its exit code is 0 if
 * fn returned 0 and no CHECK failed. */
static pid_t spawn(child_fn fn, int rank, void *arg) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    failures = 0;
    alarm(60);
    int rc = fn(rank, arg);
    fflush(NULL);
    _exit(rc || failures ? 1 : 0);
  }
  CHECK(pid > 0, "fork: %s", strerror(errno));
  return pid;
}

static void wait_ok(pid_t pid, const char *what) {
  int st = 0;
  if (pid <= 0) return;
  CHECK(waitpid(pid, &st, 0) == pid, "waitpid for %s", what);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status 0x%x", what, st);
}

/* -------------------------------------------------------- wire helpers */

typedef struct hello_fields {
  uint32_t magic;
  uint16_t version, kind;
  uint8_t secret[16];
  int32_t rank, nranks;
  uint16_t family, port;
  uint8_t addr[16];
} hello_fields_t;

/* The documented wire format: 52 bytes, little endian. */
static void hello_encode(const hello_fields_t *f, uint8_t p[52]) {
  gin_le_put32(p, f->magic);
  gin_le_put16(p + 4, f->version);
  gin_le_put16(p + 6, f->kind);
  memcpy(p + 8, f->secret, 16);
  gin_le_put32(p + 24, (uint32_t)f->rank);
  gin_le_put32(p + 28, (uint32_t)f->nranks);
  gin_le_put16(p + 32, f->family);
  gin_le_put16(p + 34, f->port);
  memcpy(p + 36, f->addr, 16);
}

static hello_fields_t hello_valid(int kind, int rank, int nranks) {
  hello_fields_t f = {.magic = GIN_BS_MAGIC,
                      .version = GIN_BS_VERSION,
                      .kind = (uint16_t)kind,
                      .rank = rank,
                      .nranks = nranks,
                      .family = AF_INET,
                      .port = 4242,
                      .addr = {127, 0, 0, 1}};
  memcpy(f.secret, test_secret, 16);
  return f;
}

static gin_bs_uid_t uid_decode(const gin_unique_id_t *uid) {
  gin_bs_uid_t u;
  memcpy(&u, uid->bytes, sizeof u);
  return u;
}

/* Opens a blocking TCP connection to the root named by uid. */
static int root_connect(const gin_unique_id_t *uid) {
  gin_bs_uid_t u = uid_decode(uid);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(u.port)};
  memcpy(&sa.sin_addr, u.addr, 4);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    fd = -1;
  }
  CHECK(fd >= 0, "connect to the root: %s", strerror(errno));
  return fd;
}

/* Reads until EOF; returns the bytes read (up to cap kept in buf), or -1
 * if the peer did not close within ms. */
static int read_until_eof(int fd, uint8_t *buf, size_t cap, int ms) {
  size_t got = 0;
  uint64_t end = now_ms() + (uint64_t)ms;
  for (;;) {
    uint64_t t = now_ms();
    if (t >= end) return -1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)(end - t)) <= 0) continue;
    uint8_t tmp[256];
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return (int)got; /* EOF or reset: closed */
    for (ssize_t i = 0; i < n && got < cap; i++)
      buf[got++] = tmp[i];
  }
}

/* A TCP port that was free a moment ago. */
static int free_port(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sl) == 0 &&
      getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
    port = ntohs(sa.sin_port);
  if (fd >= 0) close(fd);
  CHECK(port > 0, "no free port");
  return port;
}

/* Whether a listener could bind 127.0.0.1:port now. */
static int port_bindable(int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, ok = 0;
  if (fd >= 0) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 1) == 0;
    close(fd);
  }
  return ok;
}

/* ----------------------------------------------------------- hello */

static void test_hello_check(void) {
  uint8_t b[64];
  gin_bs_hello_t out;
  hello_fields_t f = hello_valid(GIN_BS_HELLO_ROOT, 2, 4);
  hello_encode(&f, b);
  memset(&out, 0, sizeof out);
  CHECK(gin_bs_hello_check(b, 52, test_secret, 4, GIN_BS_HELLO_ROOT, &out) ==
            GIN_SUCCESS,
        "valid hello refused");
  CHECK(out.rank == 2 && out.nranks == 4 && out.port == 4242 &&
            out.family == AF_INET && out.addr[0] == 127 && out.addr[3] == 1 &&
            out.kind == GIN_BS_HELLO_ROOT &&
            memcmp(out.secret, test_secret, 16) == 0,
        "decoded fields wrong: rank %d nranks %d port %u", (int)out.rank,
        (int)out.nranks, out.port);
  CHECK(gin_bs_hello_check(b, 52, test_secret, 4, GIN_BS_HELLO_ROOT, NULL) ==
            GIN_SUCCESS,
        "valid hello refused with out NULL");

  /* Each kind of rejection; out must stay untouched. */
  struct {
    const char *what;
    hello_fields_t f;
    size_t len;
    int nranks, kind;
  } bad[12];
  int nb = 0;
#define BAD(name, field_edit, len_, nranks_, kind_)                            \
  do {                                                                         \
    bad[nb].what = name;                                                       \
    bad[nb].f = hello_valid(GIN_BS_HELLO_ROOT, 2, 4);                          \
    {                                                                          \
      hello_fields_t *h = &bad[nb].f;                                          \
      field_edit;                                                              \
      (void)h;                                                                 \
    }                                                                          \
    bad[nb].len = len_;                                                        \
    bad[nb].nranks = nranks_;                                                  \
    bad[nb].kind = kind_;                                                      \
    nb++;                                                                      \
  } while (0)
  BAD("short", (void)0, 51, 4, GIN_BS_HELLO_ROOT);
  BAD("long", (void)0, 53, 4, GIN_BS_HELLO_ROOT);
  BAD("magic", h->magic ^= 1, 52, 4, GIN_BS_HELLO_ROOT);
  BAD("version", h->version = GIN_BS_VERSION + 1, 52, 4, GIN_BS_HELLO_ROOT);
  BAD("kind", (void)0, 52, 4, GIN_BS_HELLO_RING);
  BAD("secret first", h->secret[0] ^= 0x80, 52, 4, GIN_BS_HELLO_ROOT);
  BAD("secret last", h->secret[15] ^= 1, 52, 4, GIN_BS_HELLO_ROOT);
  BAD("nranks", (void)0, 52, 5, GIN_BS_HELLO_ROOT);
  BAD("rank high", h->rank = 4, 52, 4, GIN_BS_HELLO_ROOT);
  BAD("rank negative", h->rank = -1, 52, 4, GIN_BS_HELLO_ROOT);
  BAD("family", h->family = 99, 52, 4, GIN_BS_HELLO_ROOT);
  BAD("port 0", h->port = 0, 52, 4, GIN_BS_HELLO_ROOT);
#undef BAD
  for (int i = 0; i < nb; i++) {
    memset(b, 0, sizeof b);
    hello_encode(&bad[i].f, b);
    memset(&out, 0xab, sizeof out);
    gin_result_t res = gin_bs_hello_check(b, bad[i].len, test_secret,
                                          bad[i].nranks, bad[i].kind, &out);
    CHECK(res == GIN_ERR_PROTOCOL, "bad hello (%s) gave %d", bad[i].what, res);
    CHECK(((uint8_t *)&out)[0] == 0xab && out.rank == (int32_t)0xabababab,
          "out written for a refused hello (%s)", bad[i].what);
  }
  /* A RING hello needs no listen address; a ROOT hello of a 1-rank job no
   * port. */
  f = hello_valid(GIN_BS_HELLO_RING, 3, 4);
  f.family = 0;
  f.port = 0;
  hello_encode(&f, b);
  CHECK(gin_bs_hello_check(b, 52, test_secret, 4, GIN_BS_HELLO_RING, &out) ==
                GIN_SUCCESS &&
            out.rank == 3,
        "ring hello without address");
  f = hello_valid(GIN_BS_HELLO_ROOT, 0, 1);
  f.port = 0;
  hello_encode(&f, b);
  CHECK(gin_bs_hello_check(b, 52, test_secret, 1, GIN_BS_HELLO_ROOT, &out) ==
            GIN_SUCCESS,
        "1-rank hello with port 0");
  CHECK(gin_bs_hello_check(NULL, 52, test_secret, 4, 1, &out) != GIN_SUCCESS,
        "NULL buffer accepted");
  CHECK(gin_bs_hello_check(b, 52, NULL, 1, 1, &out) != GIN_SUCCESS,
        "NULL secret accepted");

  /* Every single-bit flip of the checked header (rank 0 of 1) is refused,
   * and random bytes never pass. */
  f = hello_valid(GIN_BS_HELLO_ROOT, 0, 1);
  uint8_t good[52];
  hello_encode(&f, good);
  int accepted = 0;
  for (int bit = 0; bit < 32 * 8; bit++) {
    memcpy(b, good, 52);
    b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    accepted += gin_bs_hello_check(b, 52, test_secret, 1, GIN_BS_HELLO_ROOT,
                                   &out) == GIN_SUCCESS;
  }
  CHECK(accepted == 0, "%d bit flips of the header accepted", accepted);
  srand(12345);
  accepted = 0;
  for (int it = 0; it < 200000; it++) {
    size_t len = (size_t)(rand() % 64);
    for (size_t i = 0; i < len; i++)
      b[i] = (uint8_t)rand();
    if (it % 2) memcpy(b, good, 8); /* right magic, version and kind */
    accepted += gin_bs_hello_check(b, len, test_secret, 4, GIN_BS_HELLO_ROOT,
                                   &out) == GIN_SUCCESS;
  }
  CHECK(accepted == 0, "%d random hellos accepted", accepted);
}

/* The root's reply header and address table, and the all-gather's
 * header: what each check accepts and refuses (with a reason), outputs
 * untouched on refusal, and that the encoders write the documented
 * bytes. */
static void test_reply_table_coll_check(void) {
  uint8_t b[24 + 4 * 20 + 1], enc[sizeof b];
  char why[256];
  gin_bs_reply_t rep;
  /* Reply: OK for this job, TIMEOUT and REFUSED whatever their numbers. */
  memset(b, 0, sizeof b);
  gin_le_put32(b, GIN_BS_MAGIC);
  gin_le_put32(b + 8, 4);
  memset(&rep, 0xab, sizeof rep);
  CHECK(gin_bs_reply_check(b, 24, 4, why, sizeof why, &rep) == GIN_SUCCESS &&
            rep.status == GIN_BS_STATUS_OK && rep.nranks == 4 && rep.a == 0,
        "OK reply refused");
  gin_bs_reply_encode(&rep, enc);
  CHECK(memcmp(enc, b, 24) == 0, "reply re-encoded differs");
  gin_le_put32(b + 4, GIN_BS_STATUS_TIMEOUT);
  gin_le_put32(b + 8, 7);
  gin_le_put32(b + 12, 0x80000000u); /* joined: any value */
  CHECK(gin_bs_reply_check(b, 24, 4, NULL, 0, &rep) == GIN_SUCCESS &&
            rep.status == GIN_BS_STATUS_TIMEOUT && rep.a == INT32_MIN,
        "TIMEOUT reply refused");
  gin_le_put32(b + 4, GIN_BS_STATUS_REFUSED);
  CHECK(gin_bs_reply_check(b, 24, 4, NULL, 0, NULL) == GIN_SUCCESS,
        "REFUSED reply refused");
  struct {
    const char *what, *why;
    uint32_t magic, status;
    int32_t nranks;
    size_t len;
  } badr[] = {
      {"short", "reply of 23 bytes", GIN_BS_MAGIC, 0, 4, 23},
      {"long", "reply of 25 bytes", GIN_BS_MAGIC, 0, 4, 25},
      {"magic", "bad reply magic 0x47494e43", GIN_BS_MAGIC + 1, 0, 4, 24},
      {"OK, other size", "bad reply (status 0, 5 ranks)", GIN_BS_MAGIC, 0, 5,
       24},
      {"status", "bad reply (status 3, 4 ranks)", GIN_BS_MAGIC, 3, 4, 24},
  };
  for (size_t i = 0; i < sizeof badr / sizeof badr[0]; i++) {
    memset(b, 0, sizeof b);
    gin_le_put32(b, badr[i].magic);
    gin_le_put32(b + 4, badr[i].status);
    gin_le_put32(b + 8, (uint32_t)badr[i].nranks);
    memset(&rep, 0xab, sizeof rep);
    why[0] = '\0';
    CHECK(gin_bs_reply_check(b, badr[i].len, 4, why, sizeof why, &rep) ==
                  GIN_ERR_PROTOCOL &&
              rep.status == 0xababababu && strstr(why, badr[i].why),
          "bad reply (%s): why \"%s\"", badr[i].what, why);
  }
  CHECK(gin_bs_reply_check(NULL, 24, 4, NULL, 0, NULL) == GIN_ERR_INVALID,
        "NULL reply");

  /* Table of 3 ranks; this is rank 1 at 127.0.0.1:4001. */
  gin_net_addr_t want[3] = {{AF_INET, 4000, {127, 0, 0, 1}},
                            {AF_INET, 4001, {127, 0, 0, 1}},
                            {AF_INET6, 4002, {[15] = 1}}};
  gin_net_addr_t got[3], own = want[1];
  memset(b, 0, sizeof b);
  for (int r = 0; r < 3; r++) {
    gin_le_put16(b + 20 * r, want[r].family);
    gin_le_put16(b + 20 * r + 2, want[r].port);
    memcpy(b + 20 * r + 4, want[r].addr, 16);
  }
  gin_bs_table_encode(want, 3, enc);
  CHECK(memcmp(enc, b, 60) == 0, "table encoder differs from the format");
  memset(got, 0xab, sizeof got);
  CHECK(gin_bs_table_check(b, 60, 3, 1, &own, why, sizeof why, got) ==
                GIN_SUCCESS &&
            memcmp(got, want, sizeof got) == 0,
        "valid table refused or decoded wrong: %s", why);
  struct {
    const char *what, *why;
    int at, nranks, self;
    size_t len;
    uint16_t family, port;
  } badt[] = {
      {"short", "of 59 bytes, expected 60", -1, 3, 1, 59, 0, 0},
      {"long", "of 61 bytes, expected 60", -1, 3, 1, 61, 0, 0},
      {"size", "expected 80 (4 ranks)", -1, 4, 1, 60, 0, 0},
      {"family", "bad address of rank 2 in the table (family 99, port 4002)", 2,
       3, 1, 60, 99, 4002},
      {"port 0", "bad address of rank 0 in the table (family 2, port 0)", 0, 3,
       1, 60, AF_INET, 0},
      {"own port", "not the address it sent", 1, 3, 1, 60, AF_INET, 4011},
      {"own entry", "not the address it sent", -1, 3, 0, 60, 0, 0},
  };
  for (size_t i = 0; i < sizeof badt / sizeof badt[0]; i++) {
    uint8_t t[sizeof b];
    memcpy(t, b, sizeof t);
    if (badt[i].at >= 0) {
      gin_le_put16(t + 20 * badt[i].at, badt[i].family);
      gin_le_put16(t + 20 * badt[i].at + 2, badt[i].port);
    }
    memset(got, 0xab, sizeof got);
    why[0] = '\0';
    CHECK(gin_bs_table_check(t, badt[i].len, badt[i].nranks, badt[i].self, &own,
                             why, sizeof why, got) == GIN_ERR_PROTOCOL &&
              got[0].family == 0xabab && strstr(why, badt[i].why),
          "bad table (%s): why \"%s\"", badt[i].what, why);
  }
  /* One rank: port 0 is its (no listen socket), and the family is not
   * compared with its own. */
  gin_net_addr_t one = {AF_INET6, 0, {0}};
  memset(b, 0, 20);
  gin_le_put16(b, AF_INET);
  CHECK(gin_bs_table_check(b, 20, 1, 0, &one, NULL, 0, got) == GIN_SUCCESS &&
            got[0].family == AF_INET && got[0].port == 0,
        "1-rank table refused");
  CHECK(gin_bs_table_check(b, 20, 1, 1, &one, NULL, 0, NULL) ==
                GIN_ERR_INVALID &&
            gin_bs_table_check(b, 20, 0, 0, &one, NULL, 0, NULL) ==
                GIN_ERR_INVALID &&
            gin_bs_table_check(b, 20, 1, 0, NULL, NULL, 0, NULL) ==
                GIN_ERR_INVALID,
        "table check arguments");

  /* Collective header. */
  memset(b, 0, 16);
  gin_le_put32(b, 0x47494e41u);
  gin_le_put32(b + 4, 7);
  gin_le_put64(b + 8, 1u << 20);
  gin_bs_coll_encode(7, 1u << 20, enc);
  CHECK(memcmp(enc, b, 16) == 0, "collective encoder differs");
  CHECK(gin_bs_coll_check(b, 16, 7, 1u << 20, why, sizeof why) == GIN_SUCCESS,
        "collective header refused: %s", why);
  CHECK(gin_bs_coll_check(b, 16, 8, 1u << 20, why, sizeof why) ==
                GIN_ERR_PROTOCOL &&
            strcmp(why, "mismatch: the previous rank sent collective 7 of "
                        "1048576 bytes per rank (magic 0x47494e41), this "
                        "rank expects 8 of 1048576 bytes") == 0,
        "collective sequence: why \"%s\"", why);
  CHECK(gin_bs_coll_check(b, 16, 7, 1, NULL, 0) == GIN_ERR_PROTOCOL,
        "collective size");
  CHECK(gin_bs_coll_check(b, 15, 7, 1u << 20, why, 8) == GIN_ERR_PROTOCOL &&
            strlen(why) == 7,
        "short collective header: why \"%s\"", why);
  b[0] ^= 1;
  CHECK(gin_bs_coll_check(b, 16, 7, 1u << 20, NULL, 0) == GIN_ERR_PROTOCOL,
        "collective magic");
  CHECK(gin_bs_coll_check(NULL, 16, 7, 0, NULL, 0) == GIN_ERR_INVALID,
        "NULL collective header");
}

/* ------------------------------------------------------- unique ids */

static void test_uid_strings(void) {
  gin_unique_id_t uid, uid2, back;
  char s[2 * GIN_UNIQUE_ID_BYTES + 1], s2[sizeof s];
  CHECK(gin_get_unique_id(2, &uid) == GIN_SUCCESS, "gin_get_unique_id");
  CHECK(gin_get_unique_id(2, &uid2) == GIN_SUCCESS, "gin_get_unique_id");
  gin_bs_uid_t u = uid_decode(&uid), u2 = uid_decode(&uid2);
  CHECK(u.magic == GIN_BS_MAGIC && u.version == GIN_BS_VERSION &&
            (u.family == AF_INET || u.family == AF_INET6) && u.port != 0 &&
            u.nranks == 2,
        "uid contents: magic 0x%x family %u port %u "
        "nranks %d",
        u.magic, u.family, u.port, (int)u.nranks);
  CHECK(memcmp(u.secret, u2.secret, 16) != 0 && u.port != u2.port,
        "two unique ids share a secret or a port");
  CHECK(gin_get_unique_id(0, &uid2) == GIN_ERR_INVALID, "nranks 0");
  CHECK(gin_get_unique_id(GIN_MAX_RANKS + 1, &uid2) == GIN_ERR_INVALID,
        "nranks too large");
  CHECK(gin_get_unique_id(2, NULL) == GIN_ERR_INVALID, "NULL uid_out");

  CHECK(gin_unique_id_to_string(&uid, s, sizeof s) == GIN_SUCCESS, "to_string");
  CHECK(strlen(s) == 2 * GIN_UNIQUE_ID_BYTES &&
            strspn(s, "0123456789abcdef") == strlen(s),
        "string form: %s", s);
  CHECK(gin_unique_id_from_string(s, &back) == GIN_SUCCESS &&
            memcmp(&back, &uid, sizeof uid) == 0,
        "round trip");
  for (char *c = s; *c; c++)
    if (*c >= 'a') *c = (char)(*c - 'a' + 'A');
  memset(&back, 0, sizeof back);
  CHECK(gin_unique_id_from_string(s, &back) == GIN_SUCCESS &&
            memcmp(&back, &uid, sizeof uid) == 0,
        "upper-case round trip");
  CHECK(gin_unique_id_to_string(&uid, s2, sizeof s2 - 1) == GIN_ERR_INVALID,
        "short buffer accepted");

  gin_unique_id_to_string(&uid, s, sizeof s);
  memset(&back, 0x77, sizeof back);
  strcpy(s2, s);
  s2[255] = '\0';
  CHECK(gin_unique_id_from_string(s2, &back) == GIN_ERR_INVALID &&
            strstr(gin_last_error(), "length"),
        "255 characters");
  CHECK(gin_unique_id_from_string("", &back) == GIN_ERR_INVALID &&
            strstr(gin_last_error(), "length"),
        "empty string");
  char longer[300];
  snprintf(longer, sizeof longer, "%s00", s);
  CHECK(gin_unique_id_from_string(longer, &back) == GIN_ERR_INVALID &&
            strstr(gin_last_error(), "length"),
        "258 characters");
  strcpy(s2, s);
  s2[17] = 'g';
  CHECK(gin_unique_id_from_string(s2, &back) == GIN_ERR_INVALID &&
            strstr(gin_last_error(), "position 17"),
        "bad character");
  strcpy(s2, s);
  s2[0] = s2[0] == '0' ? '1' : '0';
  CHECK(gin_unique_id_from_string(s2, &back) == GIN_ERR_INVALID &&
            strstr(gin_last_error(), "magic"),
        "wrong magic");
  CHECK(gin_unique_id_from_string(NULL, &back) == GIN_ERR_INVALID, "NULL");
  CHECK(((uint8_t *)&back)[0] == 0x77, "uid written on failure");
}

/* --------------------------------------------------- a 4-rank job */

typedef struct job_arg {
  gin_unique_id_t uid;
  int nranks;
  int64_t timeout_ms;
  size_t bytes[2]; /* size-mismatch test: bytes per rank */
  int expect;      /* expected result of init or of the collective */
} job_arg_t;

static uint8_t pattern(int r, size_t size, size_t i, int round) {
  return (uint8_t)(r * 37 + (int)(i * 13) + (int)(size * 7) + (int)(i >> 8) +
                   round * 101);
}

static int rank_allgather(int rank, void *p) {
  job_arg_t *a = p;
  gin_bs_t *bs = NULL;
  gin_result_t res = gin_bs_init(&a->uid, rank, a->nranks, 20000, &bs);
  CHECK(res == GIN_SUCCESS, "rank %d: init: %d", rank, res);
  if (res) return 1;
  static const size_t sizes[] = {1, 7, 4099, 1 << 20, 0, 3};
  for (int round = 0; round < 2; round++) {
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      size_t sz = sizes[k], n = (size_t)a->nranks;
      uint8_t *buf = malloc(n * sz + 1);
      memset(buf, 0xee, n * sz + 1);
      for (size_t i = 0; i < sz; i++)
        buf[(size_t)rank * sz + i] = pattern(rank, sz, i, round);
      res = gin_bs_allgather(bs, buf, sz);
      CHECK(res == GIN_SUCCESS, "rank %d: allgather of %zu: %d", rank, sz, res);
      size_t wrong = 0, first = 0;
      for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < sz; i++)
          if (buf[r * sz + i] != pattern((int)r, sz, i, round) && !wrong++)
            first = r * sz + i;
      CHECK(wrong == 0,
            "rank %d: allgather of %zu: %zu wrong bytes, first "
            "at %zu",
            rank, sz, wrong, first);
      CHECK(buf[n * sz] == 0xee, "rank %d: wrote past the buffer", rank);
      free(buf);
      CHECK(gin_bs_barrier(bs) == GIN_SUCCESS, "rank %d: barrier", rank);
    }
  }
  gin_bs_destroy(bs);
  return 0;
}

static void test_job_with_intruders(void) {
  job_arg_t a = {.nranks = 4};
  CHECK(gin_get_unique_id(4, &a.uid) == GIN_SUCCESS, "gin_get_unique_id");
  gin_bs_uid_t u = uid_decode(&a.uid);
  uint8_t b[64];

  /* Before the real ranks: a silent client (it stays while they join),
   * garbage, a wrong secret, a wrong job size, a rank out of range, a
   * wrong protocol version and a short hello. The root answers the
   * refused ones, logs each with its reason, and keeps waiting. */
  /* The root (a thread of this process) logs each refusal with its
   * reason on stderr: to a file meanwhile, checked below (with the
   * default log level: GIN_DEBUG=NONE would fail the check). */
  char logpath[] = "/tmp/gin_bs_intrudersXXXXXX";
  int logfd = mkstemp(logpath), saved = dup(2);
  CHECK(logfd >= 0 && saved >= 0, "log file: %s", strerror(errno));
  fflush(stderr);
  dup2(logfd, 2);
  int silent = root_connect(&a.uid);
  hello_fields_t f = hello_valid(GIN_BS_HELLO_ROOT, 0, 4);
  memcpy(f.secret, u.secret, 16);
  hello_fields_t bad[5] = {f, f, f, f, f};
  memset(&bad[0], 0x5a, sizeof bad[0]);
  bad[1].secret[7] ^= 1;
  bad[2].nranks = 5;
  bad[3].rank = 4;
  bad[4].version = GIN_BS_VERSION + 1;
  for (int i = 0; i < 5; i++) {
    int fd = root_connect(&a.uid);
    hello_encode(&bad[i], b);
    CHECK(send(fd, b, 52, 0) == 52, "send hello %d", i);
    int n = read_until_eof(fd, b, sizeof b, 5000);
    CHECK(n == 24 && b[4] == 2, "intruder %d: %d reply bytes, status %d", i, n,
          n >= 5 ? b[4] : -1);
    close(fd);
  }
  int shorty = root_connect(&a.uid);
  hello_encode(&f, b);
  CHECK(send(shorty, b, 10, 0) == 10, "send short hello");
  shutdown(shorty, SHUT_WR);
  CHECK(read_until_eof(shorty, b, sizeof b, 5000) == 0, "short hello");
  close(shorty);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char logs[4096];
  ssize_t nl = pread(logfd, logs, sizeof logs - 1, 0);
  logs[nl > 0 ? nl : 0] = '\0';
  close(logfd);
  unlink(logpath);
  static const char *const reasons[] = {
      "bad magic",           "wrong job secret", "job size 5, expected 4",
      "rank 4 out of range", "protocol version", "short read"};
  for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
    CHECK(strstr(logs, reasons[i]) != NULL,
          "no log line with \"%s\" for its intruder; the root logged:\n%s",
          reasons[i], logs);

  /* While the ranks join: one more wrong secret (answered, or just closed
   * if the job completed first). */
  pid_t pid[4];
  for (int r = 0; r < 4; r++)
    pid[r] = spawn(rank_allgather, r, &a);
  int late = root_connect(&a.uid);
  hello_encode(&bad[1], b);
  CHECK(send(late, b, 52, 0) == 52, "send late hello");
  for (int r = 0; r < 4; r++)
    wait_ok(pid[r], "rank of the 4-rank job");
  int n = read_until_eof(late, b, sizeof b, 5000);
  CHECK(n == 0 || (n == 24 && b[4] == 2), "late intruder: %d bytes", n);
  CHECK(read_until_eof(silent, b, sizeof b, 5000) == 0, "silent client");
  close(late);
  close(silent);
}

static int rank_small_job(int rank, void *p);

/* A client that connects and says nothing is dropped after its hello
 * deadline while the root keeps waiting; the real ranks then join. */
static void test_silent_client(void) {
  job_arg_t a = {.nranks = 2};
  CHECK(gin_bs_root_start(2, "127.0.0.1", 0, test_secret, 20000, &a.uid) ==
            GIN_SUCCESS,
        "root_start");
  uint8_t b[8];
  uint64_t t0 = now_ms();
  int silent = root_connect(&a.uid);
  int n = read_until_eof(silent, b, sizeof b, 5000);
  uint64_t t = now_ms() - t0;
  CHECK(n == 0 && t >= 500 && t < 10000,
        "silent client: %d bytes, closed "
        "after %llu ms",
        n, (unsigned long long)t);
  close(silent);
  pid_t p0 = spawn(rank_small_job, 0, &a), p1 = spawn(rank_small_job, 1, &a);
  wait_ok(p0, "rank 0 after the silent client");
  wait_ok(p1, "rank 1 after the silent client");
}

/* A flood of connections before the real ranks: FLOOD clients (three
 * times the root's pending table), every fourth sending garbage, the
 * others nothing. The root answers or drops each (the oldest silent ones
 * first when its table is full), the real ranks then form the job, every
 * flood connection ends closed by the root, and the root leaves no
 * descriptor behind. */
#define FLOOD 192
static void test_flood(void) {
  int fds0 = test_fd_count();
  job_arg_t a = {.nranks = 2};
  CHECK(gin_bs_root_start(2, "127.0.0.1", 0, test_secret, 20000, &a.uid) ==
            GIN_SUCCESS,
        "root_start");
  int fd[FLOOD];
  uint8_t junk[52], b[64];
  memset(junk, 0x5a, sizeof junk);
  for (int i = 0; i < FLOOD; i++) {
    fd[i] = root_connect(&a.uid);
    if (i % 4 == 3 && fd[i] >= 0)
      CHECK(send(fd[i], junk, sizeof junk, MSG_NOSIGNAL) ==
                (ssize_t)sizeof junk,
            "flood %d: send", i);
  }
  uint64_t t0 = now_ms();
  pid_t p0 = spawn(rank_small_job, 0, &a), p1 = spawn(rank_small_job, 1, &a);
  wait_ok(p0, "rank 0 after the flood");
  wait_ok(p1, "rank 1 after the flood");
  uint64_t joined = now_ms() - t0;
  CHECK(joined < 10000, "the job took %llu ms to form after the flood",
        (unsigned long long)joined);
  int open_left = 0, answered = 0;
  for (int i = 0; i < FLOOD; i++) {
    if (fd[i] < 0) continue;
    int n = read_until_eof(fd[i], b, sizeof b, 5000);
    if (n < 0) open_left++;
    if (n == 24 && b[4] == 2) answered++; /* REFUSED */
    close(fd[i]);
  }
  CHECK(open_left == 0, "%d flood connections still open", open_left);
  /* The garbage ones are refused with an answer unless dropped first (or
   * closed unread once the job formed, if the root read the ranks first). */
  CHECK(answered <= FLOOD / 4, "%d refusals for %d garbage hellos", answered,
        FLOOD / 4);
  /* At most as many as before (an earlier test's root thread may still
   * have been closing its sockets when fds0 was taken). */
  int fds = test_fd_count();
  for (uint64_t end = now_ms() + 3000; fds > fds0 && now_ms() < end;) {
    usleep(20000);
    fds = test_fd_count();
  }
  CHECK(fds <= fds0, "descriptors: %d before the flood, %d after", fds0, fds);
}

/* The test plays the root, so it learns the ranks' listen addresses and
 * can knock on rank 0's before the ring forms: garbage, a wrong secret, a
 * valid hello from rank 1 (not rank 0's predecessor) and silence are all
 * refused, and the ring still forms. Also pins the table's wire format. */
static void test_ring_intruders(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sl) == 0 &&
            listen(lfd, 8) == 0 &&
            getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0,
        "fake root: %s", strerror(errno));
  gin_bs_uid_t u = {.magic = GIN_BS_MAGIC,
                    .version = GIN_BS_VERSION,
                    .family = AF_INET,
                    .port = ntohs(sa.sin_port),
                    .nranks = 3,
                    .addr = {127, 0, 0, 1}};
  memcpy(u.secret, test_secret, 16);
  job_arg_t a = {.nranks = 3};
  memcpy(a.uid.bytes, &u, sizeof u);
  pid_t pid[3];
  for (int r = 0; r < 3; r++)
    pid[r] = spawn(rank_small_job, r, &a);

  int fds[3] = {-1, -1, -1};
  uint16_t ports[3] = {0};
  uint8_t b[24 + 3 * 20];
  for (int i = 0; i < 3; i++) {
    int fd = accept(lfd, NULL, NULL);
    gin_bs_hello_t h;
    CHECK(recv(fd, b, 52, MSG_WAITALL) == 52 &&
              gin_bs_hello_check(b, 52, test_secret, 3, GIN_BS_HELLO_ROOT,
                                 &h) == GIN_SUCCESS &&
              fds[h.rank] < 0,
          "fake root: hello %d", i);
    fds[h.rank] = fd;
    ports[h.rank] = h.port;
  }
  struct sockaddr_in r0 = {.sin_family = AF_INET,
                           .sin_port = htons(ports[0]),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  hello_fields_t bad[3] = {hello_valid(GIN_BS_HELLO_RING, 1, 3),
                           hello_valid(GIN_BS_HELLO_RING, 1, 3),
                           hello_valid(GIN_BS_HELLO_RING, 1, 3)};
  memset(&bad[0], 0x5a, sizeof bad[0]);
  bad[1].secret[3] ^= 1;
  int knock[4];
  for (int i = 0; i < 4; i++) {
    knock[i] = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(knock[i], (struct sockaddr *)&r0, sizeof r0) == 0,
          "connect to rank 0: %s", strerror(errno));
    hello_encode(&bad[i < 3 ? i : 0], b);
    if (i < 3) CHECK(send(knock[i], b, 52, 0) == 52, "knock %d", i);
  }
  /* The table: reply header (OK) and each rank's listen address. */
  memset(b, 0, sizeof b);
  gin_le_put32(b, GIN_BS_MAGIC);
  gin_le_put32(b + 8, 3);
  for (int r = 0; r < 3; r++) {
    gin_le_put16(b + 24 + 20 * r, AF_INET);
    gin_le_put16(b + 26 + 20 * r, ports[r]);
    memcpy(b + 28 + 20 * r, (uint8_t[]){127, 0, 0, 1}, 4);
  }
  for (int r = 0; r < 3; r++) {
    CHECK(send(fds[r], b, sizeof b, 0) == (ssize_t)sizeof b, "table %d", r);
    close(fds[r]);
  }
  for (int r = 0; r < 3; r++)
    wait_ok(pid[r], "rank of the knocked-on ring");
  for (int i = 0; i < 4; i++) {
    CHECK(read_until_eof(knock[i], b, sizeof b, 5000) == 0,
          "knock %d not "
          "closed",
          i);
    close(knock[i]);
  }
  close(lfd);
}

/* ------------------------------------------ failures that must be bounded */

static int rank_expect_init(int rank, void *p) {
  job_arg_t *a = p;
  gin_bs_t *bs = NULL;
  uint64_t t0 = now_ms();
  gin_result_t res = gin_bs_init(&a->uid, rank, a->nranks, a->timeout_ms, &bs);
  uint64_t t = now_ms() - t0;
  CHECK(res == a->expect, "rank %d: init gave %d, expected %d", rank, res,
        a->expect);
  CHECK(bs == NULL, "bs written on failure");
  CHECK(t < (uint64_t)a->timeout_ms + 5000, "rank %d: init took %llu ms", rank,
        (unsigned long long)t);
  if (a->expect == GIN_ERR_TIMEOUT && a->nranks == 3)
    CHECK(strstr(gin_last_error(), "rank 2 did not join"), "message names the "
                                                           "missing rank");
  if (a->expect == GIN_ERR_PROTOCOL)
    CHECK(strstr(gin_last_error(), "already joined"), "message names the dup");
  return 0;
}

static void test_timeouts(void) {
  /* nranks 3, only 2 join: the root gives up after 1 s. */
  job_arg_t a = {.nranks = 3, .timeout_ms = 3000, .expect = GIN_ERR_TIMEOUT};
  CHECK(gin_bs_root_start(3, "127.0.0.1", 0, test_secret, 1000, &a.uid) ==
            GIN_SUCCESS,
        "root_start");
  uint64_t t0 = now_ms();
  pid_t p0 = spawn(rank_expect_init, 0, &a),
        p1 = spawn(rank_expect_init, 1, &a);
  wait_ok(p0, "rank 0 of the incomplete job");
  wait_ok(p1, "rank 1 of the incomplete job");
  uint64_t t = now_ms() - t0;
  CHECK(t >= 900 && t < 10000, "incomplete job ended after %llu ms",
        (unsigned long long)t);

  /* The rank's own (shorter) timeout while the root waits on. */
  job_arg_t b = {.nranks = 2, .timeout_ms = 500, .expect = GIN_ERR_TIMEOUT};
  CHECK(gin_bs_root_start(2, "127.0.0.1", 0, test_secret, 10000, &b.uid) ==
            GIN_SUCCESS,
        "root_start");
  wait_ok(spawn(rank_expect_init, 1, &b), "rank with a short timeout");

  /* Nobody listens at the root's address. */
  job_arg_t c = b;
  gin_bs_uid_t u = uid_decode(&c.uid);
  u.port = (uint16_t)free_port();
  memcpy(c.uid.bytes, &u, sizeof u);
  wait_ok(spawn(rank_expect_init, 0, &c), "rank without a root");

  /* Two processes claim rank 0: the second is refused, the first times
   * out with the job. */
  job_arg_t d = {.nranks = 2, .timeout_ms = 5000, .expect = GIN_ERR_TIMEOUT};
  CHECK(gin_bs_root_start(2, "127.0.0.1", 0, test_secret, 1500, &d.uid) ==
            GIN_SUCCESS,
        "root_start");
  job_arg_t d2 = d;
  d2.expect = GIN_ERR_PROTOCOL;
  pid_t first = spawn(rank_expect_init, 0, &d);
  usleep(300000);
  wait_ok(spawn(rank_expect_init, 0, &d2), "duplicate rank 0");
  wait_ok(first, "first rank 0");
}

static int rank_mismatch(int rank, void *p) {
  job_arg_t *a = p;
  gin_bs_t *bs = NULL;
  CHECK(gin_bs_init(&a->uid, rank, 2, 10000, &bs) == GIN_SUCCESS, "init");
  if (!bs) return 1;
  uint8_t buf[64] = {0};
  gin_result_t res = gin_bs_allgather(bs, buf, a->bytes[rank]);
  CHECK(res == GIN_ERR_PROTOCOL && strstr(gin_last_error(), "mismatch"),
        "rank %d: size mismatch gave %d", rank, res);
  CHECK(gin_bs_barrier(bs) == GIN_ERR_STATE, "rank %d: broken ring reused",
        rank);
  gin_bs_destroy(bs);
  return 0;
}

static void test_size_mismatch(void) {
  job_arg_t a = {.nranks = 2, .bytes = {8, 16}};
  CHECK(gin_get_unique_id(2, &a.uid) == GIN_SUCCESS, "gin_get_unique_id");
  pid_t p0 = spawn(rank_mismatch, 0, &a), p1 = spawn(rank_mismatch, 1, &a);
  wait_ok(p0, "rank 0 of the mismatched job");
  wait_ok(p1, "rank 1 of the mismatched job");
}

static void test_single_rank_and_args(void) {
  gin_unique_id_t uid;
  gin_bs_t *bs = NULL;
  CHECK(gin_get_unique_id(1, &uid) == GIN_SUCCESS, "gin_get_unique_id(1)");
  CHECK(gin_bs_init(&uid, 0, 2, 1000, &bs) == GIN_ERR_INVALID && !bs,
        "nranks differs from the uid");
  CHECK(gin_bs_init(&uid, 1, 1, 1000, &bs) == GIN_ERR_INVALID && !bs,
        "rank out of range");
  CHECK(gin_bs_init(NULL, 0, 1, 1000, &bs) == GIN_ERR_INVALID, "NULL uid");
  gin_unique_id_t junk;
  memset(&junk, 0, sizeof junk);
  CHECK(gin_bs_init(&junk, 0, 1, 1000, &bs) == GIN_ERR_INVALID && !bs,
        "zero uid");
  CHECK(gin_bs_init(&uid, 0, 1, 5000, &bs) == GIN_SUCCESS && bs,
        "single-rank init");
  if (!bs) return;
  char buf[16] = "abcdefghijklmno";
  CHECK(gin_bs_allgather(bs, buf, sizeof buf) == GIN_SUCCESS &&
            strcmp(buf, "abcdefghijklmno") == 0,
        "single-rank allgather");
  CHECK(gin_bs_allgather(bs, NULL, 4) == GIN_ERR_INVALID, "NULL buffer");
  CHECK(gin_bs_allgather(bs, buf, SIZE_MAX) == GIN_SUCCESS,
        "1 rank: any size is one block");
  CHECK(gin_bs_barrier(bs) == GIN_SUCCESS, "single-rank barrier");
  gin_bs_destroy(bs);
}

static int rank_small_job(int rank, void *p) {
  job_arg_t *a = p;
  gin_bs_t *bs = NULL;
  CHECK(gin_bs_init(&a->uid, rank, a->nranks, 10000, &bs) == GIN_SUCCESS,
        "rank %d: init", rank);
  if (!bs) return 1;
  int v[8] = {0};
  v[rank] = 100 + rank;
  CHECK(gin_bs_allgather(bs, v, sizeof v[0]) == GIN_SUCCESS, "allgather");
  for (int r = 0; r < a->nranks; r++)
    CHECK(v[r] == 100 + r, "rank %d: block %d is %d", rank, r, v[r]);
  gin_bs_destroy(bs);
  return 0;
}

static void test_ipv6(void) {
  job_arg_t a = {.nranks = 2};
  if (gin_bs_root_start(2, "::1", 0, test_secret, 10000, &a.uid) !=
      GIN_SUCCESS) {
    printf("test_bootstrap: no IPv6 loopback here; IPv6 part skipped\n");
    return;
  }
  CHECK(uid_decode(&a.uid).family == AF_INET6, "IPv6 uid family");
  pid_t p0 = spawn(rank_small_job, 0, &a), p1 = spawn(rank_small_job, 1, &a);
  wait_ok(p0, "IPv6 rank 0");
  wait_ok(p1, "IPv6 rank 1");
}

/* ------------------------------------------------------- gin_bs_link */

/* A 2-rank job of which the test plays the root and one rank (`fake`);
 * the real rank runs gin_bs_init and gin_bs_link in a child. */
typedef struct link_job {
  gin_unique_id_t uid;
  int real, fake;    /* the ranks */
  int timeout_ms;    /* the real rank's */
  gin_result_t want; /* what its gin_bs_link must return */
  const char *words; /* its message must contain (on failure) */
  int root_lfd, fake_lfd;
  uint16_t fake_port, real_port;
  int ring_in, ring_out; /* the fake's ring connections */
  int ready[2];          /* pipe: the real rank joined */
} link_job_t;

/* A blocking listening socket on 127.0.0.1 (any port); *port gets it. */
static int listen_loopback(uint16_t *port) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sl) == 0 &&
            listen(fd, 16) == 0 &&
            getsockname(fd, (struct sockaddr *)&sa, &sl) == 0,
        "listen: %s", strerror(errno));
  *port = ntohs(sa.sin_port);
  return fd;
}

static int connect_loopback(uint16_t port) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons(port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* Accepts one connection within 10 s, -1 if none came. */
static int accept_bounded(int lfd) {
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  return poll(&p, 1, 10000) == 1 ? accept(lfd, NULL, NULL) : -1;
}

/* Reads a whole hello within 10 s and checks it. */
static int hello_recv(int fd, int kind, int rank) {
  uint8_t b[GIN_BS_HELLO_BYTES];
  gin_bs_hello_t h;
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd >= 0 && recv(fd, b, sizeof b, MSG_WAITALL) == (ssize_t)sizeof b &&
         gin_bs_hello_check(b, sizeof b, test_secret, 2, kind, &h) ==
             GIN_SUCCESS &&
         h.rank == rank;
}

static void hello_send(int fd, hello_fields_t f) {
  uint8_t b[GIN_BS_HELLO_BYTES];
  hello_encode(&f, b);
  CHECK(send(fd, b, sizeof b, MSG_NOSIGNAL) == (ssize_t)sizeof b,
        "send a hello: %s", strerror(errno));
}

/* The real rank: joins, links to the fake, proves the link with a byte
 * each way and that a second gin_bs_link is refused. */
static int rank_link(int rank, void *p) {
  link_job_t *j = p;
  gin_bs_t *bs = NULL;
  CHECK(gin_bs_init(&j->uid, rank, 2, j->timeout_ms, &bs) == GIN_SUCCESS,
        "rank %d: init", rank);
  if (!bs) return 1;
  char one = 1;
  CHECK(write(j->ready[1], &one, 1) == 1, "rank %d: tell the test", rank);
  int peer = 1 - rank, fd = -7, fd2 = -7;
  uint64_t t0 = now_ms();
  gin_result_t res = gin_bs_link(bs, &peer, 1, &fd);
  uint64_t t = now_ms() - t0;
  CHECK(res == j->want, "rank %d: gin_bs_link gave %d, expected %d", rank, res,
        j->want);
  CHECK(t < (uint64_t)j->timeout_ms + 3000, "gin_bs_link took %llu ms",
        (unsigned long long)t);
  if (res == GIN_SUCCESS) {
    uint8_t b = (uint8_t)(0x40 + rank);
    CHECK(fd >= 0 && send(fd, &b, 1, MSG_NOSIGNAL) == 1, "link: send");
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    CHECK(poll(&pf, 1, 10000) == 1 && recv(fd, &b, 1, 0) == 1 &&
              b == 0x40 + peer,
          "link: the fake's byte");
    CHECK(gin_bs_link(bs, &peer, 1, &fd2) == GIN_ERR_INVALID &&
              strstr(gin_last_error(), "linked already"),
          "a second gin_bs_link");
    close(fd);
  } else {
    CHECK(fd == -1, "rank %d: fd %d written on failure", rank, fd);
    CHECK(j->words && strstr(gin_last_error(), j->words),
          "rank %d: message '%s' lacks '%s'", rank, gin_last_error(),
          j->words ? j->words : "");
  }
  gin_bs_destroy(bs);
  return 0;
}

/* Starts the real rank and plays the root and the fake rank until the
 * ring is formed. Returns the child's pid. */
static pid_t link_job_start(link_job_t *j) {
  j->root_lfd = j->fake_lfd = j->ring_in = j->ring_out = -1;
  uint16_t root_port = 0;
  j->root_lfd = listen_loopback(&root_port);
  j->fake_lfd = listen_loopback(&j->fake_port);
  gin_bs_uid_t u = {.magic = GIN_BS_MAGIC,
                    .version = GIN_BS_VERSION,
                    .family = AF_INET,
                    .port = root_port,
                    .nranks = 2,
                    .addr = {127, 0, 0, 1}};
  memcpy(u.secret, test_secret, 16);
  memcpy(j->uid.bytes, &u, sizeof u);
  CHECK(pipe(j->ready) == 0, "pipe: %s", strerror(errno));
  pid_t pid = spawn(rank_link, j->real, j);
  close(j->ready[1]);
  /* The root: the real rank's hello, then the table. */
  int rfd = accept_bounded(j->root_lfd);
  uint8_t b[24 + 2 * 20];
  gin_bs_hello_t h;
  CHECK(rfd >= 0 &&
            recv(rfd, b, GIN_BS_HELLO_BYTES, MSG_WAITALL) ==
                GIN_BS_HELLO_BYTES &&
            gin_bs_hello_check(b, GIN_BS_HELLO_BYTES, test_secret, 2,
                               GIN_BS_HELLO_ROOT, &h) == GIN_SUCCESS &&
            h.rank == j->real,
        "fake root: the real rank's hello");
  j->real_port = h.port;
  memset(b, 0, sizeof b);
  gin_le_put32(b, GIN_BS_MAGIC);
  gin_le_put32(b + 8, 2);
  for (int r = 0; r < 2; r++) {
    gin_le_put16(b + 24 + 20 * r, AF_INET);
    gin_le_put16(b + 26 + 20 * r, r == j->real ? j->real_port : j->fake_port);
    memcpy(b + 28 + 20 * r, (uint8_t[]){127, 0, 0, 1}, 4);
  }
  CHECK(rfd >= 0 && send(rfd, b, sizeof b, 0) == (ssize_t)sizeof b,
        "fake root: the table");
  if (rfd >= 0) close(rfd);
  /* The ring: the real rank connects to the fake, the fake to it. */
  j->ring_in = accept_bounded(j->fake_lfd);
  CHECK(hello_recv(j->ring_in, GIN_BS_HELLO_RING, j->real),
        "the real rank's ring hello");
  j->ring_out = connect_loopback(j->real_port);
  CHECK(j->ring_out >= 0, "connect to the real rank");
  hello_send(j->ring_out, hello_valid(GIN_BS_HELLO_RING, j->fake, 2));
  /* Knocks from here on reach gin_bs_link, not the ring's acceptor. */
  struct pollfd pf = {.fd = j->ready[0], .events = POLLIN};
  char one = 0;
  CHECK(poll(&pf, 1, 10000) == 1 && read(j->ready[0], &one, 1) == 1,
        "the real rank did not join");
  return pid;
}

static void link_job_end(link_job_t *j, pid_t pid, const char *what) {
  wait_ok(pid, what);
  int fds[5] = {j->root_lfd, j->fake_lfd, j->ring_in, j->ring_out, j->ready[0]};
  for (int i = 0; i < 5; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/* The real rank links to a higher one (the fake), which answers. */
static void link_answer_case(const char *name, hello_fields_t answer,
                             int close_instead, gin_result_t want,
                             const char *words) {
  link_job_t j = {
      .real = 0, .fake = 1, .timeout_ms = 10000, .want = want, .words = words};
  pid_t pid = link_job_start(&j);
  int fd = accept_bounded(j.fake_lfd);
  CHECK(hello_recv(fd, GIN_BS_HELLO_LINK, 0), "%s: the link hello", name);
  if (close_instead) {
    close(fd);
    fd = -1;
  } else {
    hello_send(fd, answer);
  }
  if (want == GIN_SUCCESS) {
    uint8_t b = 0x41;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    CHECK(send(fd, &b, 1, MSG_NOSIGNAL) == 1 && poll(&pf, 1, 10000) == 1 &&
              recv(fd, &b, 1, 0) == 1 && b == 0x40,
          "%s: a byte each way", name);
  }
  link_job_end(&j, pid, name);
  if (fd >= 0) close(fd);
}

static void test_link(void) {
  /* Connecting side: a valid answer links; an answer with the wrong
   * secret, from the wrong rank, of the wrong kind, or none, fails. */
  hello_fields_t ok = hello_valid(GIN_BS_HELLO_LINK, 1, 2), bad = ok;
  link_answer_case("valid answer", ok, 0, GIN_SUCCESS, NULL);
  bad.secret[9] ^= 0x10;
  link_answer_case("answer with a wrong secret", bad, 0, GIN_ERR_PROTOCOL,
                   "not a valid answer");
  bad = ok;
  bad.rank = 0;
  link_answer_case("answer from the wrong rank", bad, 0, GIN_ERR_PROTOCOL,
                   "not a valid answer");
  bad = ok;
  bad.kind = GIN_BS_HELLO_RING;
  link_answer_case("answer of the ring kind", bad, 0, GIN_ERR_PROTOCOL,
                   "not a valid answer");
  link_answer_case("no answer", ok, 1, GIN_ERR_REMOTE, "closed by the peer");

  /* Accepting side: the real rank 1 waits for rank 0's link. Garbage, a
   * wrong secret, the ring kind, a rank that is not a lower peer and a
   * rank out of range are refused at once (closed, no answer); a silent
   * connection waits; then the fake's valid hello is answered and linked,
   * and the silent one is closed. */
  link_job_t j = {.real = 1, .fake = 0, .timeout_ms = 10000};
  pid_t pid = link_job_start(&j);
  hello_fields_t knocks[5];
  for (int i = 0; i < 5; i++)
    knocks[i] = hello_valid(GIN_BS_HELLO_LINK, 0, 2);
  memset(&knocks[0], 0x5a, sizeof knocks[0]);
  knocks[1].secret[0] ^= 1;
  knocks[2].kind = GIN_BS_HELLO_RING;
  knocks[3].rank = 1;
  knocks[4].rank = 2;
  int kfd[5], silent = connect_loopback(j.real_port);
  for (int i = 0; i < 5; i++) {
    kfd[i] = connect_loopback(j.real_port);
    CHECK(kfd[i] >= 0, "knock %d: connect", i);
    if (kfd[i] >= 0) hello_send(kfd[i], knocks[i]);
  }
  uint8_t b[64];
  for (int i = 0; i < 5; i++) {
    CHECK(kfd[i] >= 0 && read_until_eof(kfd[i], b, sizeof b, 5000) == 0,
          "knock %d: not refused without an answer", i);
    if (kfd[i] >= 0) close(kfd[i]);
  }
  struct pollfd pf = {.fd = silent, .events = POLLIN};
  CHECK(silent >= 0 && poll(&pf, 1, 100) == 0,
        "the silent connection was dropped before its hello deadline");
  int fd = connect_loopback(j.real_port);
  CHECK(fd >= 0, "connect the link");
  hello_send(fd, hello_valid(GIN_BS_HELLO_LINK, 0, 2));
  CHECK(hello_recv(fd, GIN_BS_HELLO_LINK, 1), "the real rank's answer");
  b[0] = 0x40;
  pf = (struct pollfd){.fd = fd, .events = POLLIN};
  CHECK(send(fd, b, 1, MSG_NOSIGNAL) == 1 && poll(&pf, 1, 10000) == 1 &&
            recv(fd, b, 1, 0) == 1 && b[0] == 0x41,
        "accepted link: a byte each way");
  CHECK(read_until_eof(silent, b, sizeof b, 5000) == 0,
        "the silent connection not closed after the link");
  link_job_end(&j, pid, "accepting rank");
  close(fd);
  if (silent >= 0) close(silent);
  /* The listening socket closed with the link: nobody listens there. */
  int late = connect_loopback(j.real_port);
  CHECK(late < 0, "the real rank's port still accepts after gin_bs_link");
  if (late >= 0) close(late);

  /* Nobody links: bounded by the timeout, naming the missing rank. */
  link_job_t t = {.real = 1,
                  .fake = 0,
                  .timeout_ms = 1500,
                  .want = GIN_ERR_TIMEOUT,
                  .words = "no link from rank 0"};
  pid = link_job_start(&t);
  link_job_end(&t, pid, "rank nobody links to");
}

/* -------------------------------------------- gin_comm_init_from_env */

/* Stands in for comm.c: records what it was given and proves the uid
 * works by joining and all-gathering it. */
static struct {
  int called, rank, nranks, same_uid;
  gin_unique_id_t uid;
} stub;
static char stub_comm;

gin_result_t gin_comm_init_built_(gin_comm_t *comm_out, int nranks, int rank,
                                  const gin_unique_id_t *uid,
                                  const gin_config_t *cfg,
                                  const gin_build_t_ *build) {
  (void)build;
  stub.called = 1;
  stub.rank = rank;
  stub.nranks = nranks;
  stub.uid = *uid;
  gin_bs_t *bs;
  gin_result_t res = gin_bs_init(uid, rank, nranks, 10000, &bs);
  if (res != GIN_SUCCESS) return res;
  size_t sz = sizeof *uid;
  char *all = malloc(sz * (size_t)nranks);
  memcpy(all + sz * (size_t)rank, uid, sz);
  res = gin_bs_allgather(bs, all, sz);
  stub.same_uid = res == GIN_SUCCESS;
  for (int r = 0; r < nranks; r++)
    stub.same_uid &= memcmp(all + sz * (size_t)r, uid, sz) == 0;
  free(all);
  gin_bs_destroy(bs);
  if (res == GIN_SUCCESS) *comm_out = (gin_comm_t)(void *)&stub_comm;
  return res;
}

static const char *const launcher_vars[] = {"GIN_RANK",
                                            "GIN_NRANKS",
                                            "GIN_UNIQUE_ID",
                                            "GIN_ROOT_ADDR",
                                            "GIN_ROOT_PORT",
                                            "GIN_JOB_SECRET",
                                            "OMPI_COMM_WORLD_RANK",
                                            "OMPI_COMM_WORLD_SIZE",
                                            "OMPI_COMM_WORLD_LOCAL_SIZE",
                                            "OMPI_MCA_ess_base_jobid",
                                            "PMIX_NAMESPACE",
                                            "OMPI_MCA_orte_ess_jobid",
                                            "SLURM_PROCID",
                                            "SLURM_NTASKS",
                                            "SLURM_JOB_ID",
                                            "SLURM_STEP_ID",
                                            "SLURM_NNODES",
                                            "SLURM_STEP_NUM_NODES",
                                            "RANK",
                                            "WORLD_SIZE",
                                            "LOCAL_WORLD_SIZE",
                                            "MASTER_ADDR",
                                            "MASTER_PORT",
                                            "TORCHELASTIC_RUN_ID"};

/* A launcher scenario: "NAME=VALUE" pairs, %d replaced by the rank. */
typedef struct env_case {
  const char *name;
  const char *vars[8];
  gin_result_t expect;
  const char *msg; /* expected in the error message */
  int port;        /* expected uid port, 0: any in [20000, 60000), -1: any */
  int nranks;      /* the job's size */
  const uint8_t *secret;      /* expected secret, NULL: any */
  const gin_unique_id_t *uid; /* expected uid, NULL: any */
} env_case_t;

static int rank_env(int rank, void *p) {
  const env_case_t *c = p;
  for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++)
    unsetenv(launcher_vars[i]);
  for (int i = 0; i < 8 && c->vars[i]; i++) {
    char kv[600];
    snprintf(kv, sizeof kv, c->vars[i], rank);
    char *eq = strchr(kv, '=');
    *eq = '\0';
    setenv(kv, eq + 1, 1);
  }
  gin_comm_t comm = NULL;
  gin_result_t res = gin_comm_init_from_env(&comm, NULL);
  CHECK(res == c->expect, "%s, rank %d: got %d, expected %d", c->name, rank,
        res, c->expect);
  if (c->expect != GIN_SUCCESS) {
    CHECK(!stub.called && comm == NULL, "%s: comm init reached", c->name);
    CHECK(strstr(gin_last_error(), c->msg), "%s: message lacks \"%s\"", c->name,
          c->msg);
    return 0;
  }
  gin_bs_uid_t u = uid_decode(&stub.uid);
  CHECK(stub.called && stub.rank == rank && stub.nranks == c->nranks &&
            stub.same_uid && comm == (gin_comm_t)(void *)&stub_comm,
        "%s, rank %d: comm init saw rank %d, same uid %d", c->name, rank,
        stub.rank, stub.same_uid);
  if (c->port > 0)
    CHECK(u.port == c->port, "%s: port %u, expected %d", c->name, u.port,
          c->port);
  else if (c->port == 0)
    CHECK(u.port >= 20000 && u.port < 60000, "%s: derived port %u", c->name,
          u.port);
  if (c->secret)
    CHECK(memcmp(u.secret, c->secret, 16) == 0, "%s: secret", c->name);
  if (c->uid)
    CHECK(memcmp(&stub.uid, c->uid, sizeof *c->uid) == 0, "%s: uid", c->name);
  return 0;
}

static void run_env_case(const env_case_t *c) {
  pid_t pid[4];
  for (int r = 0; r < c->nranks; r++)
    pid[r] = spawn(rank_env, r, (void *)c);
  for (int r = 0; r < c->nranks; r++)
    wait_ok(pid[r], c->name);
}

static void test_env(void) {
  char jobid[96], port[32], mport[32], uidvar[300];
  /* A job id whose derived port is free now: the port is derived, not
   * chosen, so a leftover socket in TIME_WAIT there would fail the bind. */
  for (int k = 0; k < 50; k++) {
    char id[48], full[64];
    snprintf(id, sizeof id, "t%d.%llu.%d", (int)getpid(),
             (unsigned long long)now_ms(), k);
    snprintf(full, sizeof full, "ompi:%s", id);
    snprintf(jobid, sizeof jobid, "OMPI_MCA_ess_base_jobid=%s", id);
    if (port_bindable(gin_env_derived_port(full))) break;
  }
  env_case_t ompi = {
      .name = "Open MPI, derived port",
      .vars = {"OMPI_COMM_WORLD_RANK=%d", "OMPI_COMM_WORLD_SIZE=3", jobid},
      .nranks = 3};
  run_env_case(&ompi);

  static const uint8_t hex_secret[16] = {
      0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb};
  int p = free_port();
  snprintf(port, sizeof port, "GIN_ROOT_PORT=%d", p);
  env_case_t slurm = {
      .name = "Slurm, GIN_ROOT_PORT and hex secret",
      .vars = {"SLURM_PROCID=%d", "SLURM_NTASKS=2", "SLURM_JOB_ID=77",
               "SLURM_STEP_ID=0", port,
               "GIN_JOB_SECRET=deadbeef000102030405060708090A0B"},
      .port = p,
      .nranks = 2,
      .secret = hex_secret};
  run_env_case(&slurm);

  p = free_port();
  snprintf(mport, sizeof mport, "MASTER_PORT=%d", p - 1);
  env_case_t torch = {.name = "torchrun, MASTER_PORT+1",
                      .vars = {"RANK=%d", "WORLD_SIZE=2",
                               "MASTER_ADDR=127.0.0.1", mport,
                               "TORCHELASTIC_RUN_ID=none"},
                      .port = p,
                      .nranks = 2};
  run_env_case(&torch);

  /* ginrun wins over another launcher's variables. */
  gin_unique_id_t uid;
  CHECK(gin_get_unique_id(2, &uid) == GIN_SUCCESS, "gin_get_unique_id");
  strcpy(uidvar, "GIN_UNIQUE_ID=");
  gin_unique_id_to_string(&uid, uidvar + strlen(uidvar),
                          sizeof uidvar - strlen(uidvar));
  env_case_t ginrun = {.name = "ginrun over Open MPI",
                       .vars = {"GIN_RANK=%d", "GIN_NRANKS=2", uidvar,
                                "OMPI_COMM_WORLD_RANK=0",
                                "OMPI_COMM_WORLD_SIZE=5"},
                       .port = uid_decode(&uid).port,
                       .nranks = 2,
                       .uid = &uid};
  run_env_case(&ginrun);

  /* No launcher at all: a job of one rank on a fresh unique id. */
  env_case_t alone = {.name = "no launcher", .port = -1, .nranks = 1};
  run_env_case(&alone);
  /* A Slurm allocation's shell (no step: no SLURM_PROCID) is no launcher. */
  env_case_t salloc = {.name = "Slurm allocation shell",
                       .vars = {"SLURM_NTASKS=4", "SLURM_JOB_ID=7"},
                       .port = -1,
                       .nranks = 1};
  run_env_case(&salloc);

  static const env_case_t bad[] = {
#define BAD(name_, msg_, ...)                                                  \
  {.name = name_,                                                              \
   .vars = {__VA_ARGS__},                                                      \
   .expect = GIN_ERR_INVALID,                                                  \
   .msg = msg_,                                                                \
   .nranks = 1}
      BAD("rank too large", "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_RANK=5",
          "OMPI_COMM_WORLD_SIZE=2"),
      BAD("rank not a number", "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_RANK=1x", "OMPI_COMM_WORLD_SIZE=2"),
      BAD("size missing", "OMPI_COMM_WORLD_SIZE is not set",
          "OMPI_COMM_WORLD_RANK=0"),
      BAD("ginrun without uid", "GIN_UNIQUE_ID", "GIN_RANK=0", "GIN_NRANKS=1"),
      BAD("ginrun bad uid",
          "GIN_UNIQUE_ID: unique id string has the wrong "
          "length",
          "GIN_RANK=0", "GIN_NRANKS=1", "GIN_UNIQUE_ID=zz"),
      BAD("torchrun port", "MASTER_PORT", "RANK=0", "WORLD_SIZE=1",
          "MASTER_PORT=65535"),
      BAD("no job id", "GIN_ROOT_PORT", "SLURM_PROCID=0", "SLURM_NTASKS=1"),
      BAD("root port 0", "GIN_ROOT_PORT", "SLURM_PROCID=0", "SLURM_NTASKS=1",
          "GIN_ROOT_PORT=0"),
#undef BAD
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    run_env_case(&bad[i]);
  CHECK(gin_comm_init_from_env(NULL, NULL) == GIN_ERR_INVALID, "NULL comm");
}

int main(void) {
  alarm(150);
  signal(SIGPIPE, SIG_IGN);
  test_hello_check();
  test_reply_table_coll_check();
  test_uid_strings();
  test_single_rank_and_args();
  test_job_with_intruders();
  test_silent_client();
  test_flood();
  test_ring_intruders();
  test_timeouts();
  test_size_mismatch();
  test_ipv6();
  test_link();
  test_env();
  if (failures) {
    fprintf(stderr, "test_bootstrap: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_bootstrap: all passed\n");
  return 0;
}
