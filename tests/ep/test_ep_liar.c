/*
 * A lying peer in EP, end to end: built with a copy of the EP kernels in
 * which world rank 1 lies to every peer (EP_TEST_LIAR, src/ep/ep_kernels.c):
 * 1 a dispatch count past max_tokens, 2 dispatch headers naming a token
 * past max_tokens, 3 combine `where` words naming another expert's rows,
 * 4 every combine return signalled twice (what rank 1 sends itself stays
 * true). Every rank receives from rank 1 (the routing sends each token to
 * two ranks, every rank's experts get tokens from every rank), so each
 * other rank's step must fail, within the timeout, with GIN_ERR_REMOTE
 * saying what was wrong (modes 1-3 name rank 1; a surplus return cannot
 * say whose it is), or GIN_ERR_ABORTED from a rank that saw it first;
 * rank 1 itself, told no lie, may finish its step, but its communicator
 * must then be aborted by a peer within the timeout. At least one rank but
 * rank 1 must report the lie. Mode 4 runs up to four dispatch + combine
 * steps: a surplus return found at its token's check, or left in the
 * signal for a later combine of that buffer set to find, must be reported
 * by the end. Then
 * everything is released on the aborted communicator. Mode 3 skips where
 * rank 1 does not reach every peer by load/store, or GIN_EP_PULL=0: only
 * that combine sends `where` words. Run with ginrun -n N (N >= 3). Exit 0
 * pass, 1 fail, 77 skip.
 */
#include <stdint.h>
#include <time.h>

#include "gin/gin_ep.h"
#include "test_common.h"

#define T 8
#define H 128
#define K 2

/* What the receivers must say of each lie (with T = 8: a count of at
 * least max_tokens + 2, token 8 named, a row of another expert). */
static int says_lie(const char *msg) {
  switch (EP_TEST_LIAR) {
  case 1:
    return strstr(msg, "rank 1 announced") &&
           strstr(msg, "outside [0, max_tokens 8]");
  case 2: return strstr(msg, "rank 1's message for") && strstr(msg, "token 8");
  case 4:
    return strstr(msg, "EP combine receive: token") &&
           strstr(msg, "of its top-k slots are routed");
  default:
    return strstr(msg, "rank 1's reply for") &&
           strstr(msg, "which is not one of expert");
  }
}

/* Whether rank 1 reaches every other rank by load/store (the only path
 * whose combine sends `where` words) and GIN_EP_PULL leaves them on;
 * collective over world. */
static int where_words_sent(gin_comm_t world, int nranks) {
  gin_devcomm_t dc;
  TCHECK(gin_devcomm_create(world, NULL, &dc));
  int direct = 1;
  for (int r = 0; r < nranks && r < 8; r++)
    if (r != 1 && gin_route_path_((int)(dc.path_inline >> (8 * r)) & 0xff) !=
                      GIN_PATH_DIRECT)
      direct = 0;
  int *all = (int *)calloc((size_t)nranks, sizeof(int));
  TASSERT(all, "out of memory");
  TCHECK(gin_comm_allgather(world, &direct, all, sizeof direct));
  direct = all[1];
  free(all);
  TCHECK(gin_devcomm_destroy(world, &dc));
  /* GIN_EP_PULL as the library reads it: a whole number, else unset. */
  const char *pull = getenv("GIN_EP_PULL");
  char *end = NULL;
  long long v = pull && *pull ? strtoll(pull, &end, 0) : 1;
  return direct && !(end && *end == '\0' && v == 0);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void) {
  int rank, nranks;
  test_require_device();
  gin_comm_t world = test_world_init(&rank, &nranks, 3);
  if (nranks > T) { /* then some ranks would get nothing from rank 1 */
    printf("SKIP: at most %d ranks\n", T);
    gin_comm_destroy(world);
    return TEST_SKIP;
  }
  if (EP_TEST_LIAR == 3 && !where_words_sent(world, nranks)) {
    printf("SKIP: rank 1 does not reach every peer by load/store, or "
           "GIN_EP_PULL=0: its combine sends no `where` words to lie in\n");
    gin_comm_destroy(world);
    return TEST_SKIP;
  }
  /* The lie aborts this one; the world stays whole for the tally. */
  gin_comm_t comm = test_comm_fresh(world, rank, nranks);
  int E = 2 * nranks;
  gin_ep_config_t cfg = {T, H, K, E, 0};
  gin_ep_t ep;
  TCHECK(gin_ep_create(comm, &cfg, &ep));
  /* Token t to experts t and t + nranks (mod E = 2 x nranks): two
   * different ranks; over T = 8 tokens every rank gets tokens from every
   * rank (up to 8 ranks). */
  uint16_t hx[T * H];
  int32_t hidx[T * K];
  float hw[T * K];
  for (int i = 0; i < T * H; i++)
    hx[i] = gin_float_to_bf16((float)(i % 13) - 6.0f);
  for (int t = 0; t < T; t++) {
    hidx[t * K] = t % E;
    hidx[t * K + 1] = (t + nranks) % E;
    hw[t * K] = hw[t * K + 1] = 0.5f;
  }
  uint16_t *x, *out;
  int32_t *idx;
  float *w;
  TCHECK(gin_mem_alloc(sizeof hx, (void **)&x));
  TCHECK(gin_mem_alloc(sizeof hx, (void **)&out));
  TCHECK(gin_mem_alloc(sizeof hidx, (void **)&idx));
  TCHECK(gin_mem_alloc(sizeof hw, (void **)&w));
  TCHECK(gin_mem_copy(x, hx, sizeof hx));
  TCHECK(gin_mem_copy(idx, hidx, sizeof hidx));
  TCHECK(gin_mem_copy(w, hw, sizeof hw));
  TCHECK(gin_comm_barrier(comm));

  double t0 = now_ms();
  gin_ep_recv_t recv;
  gin_result_t rc = gin_ep_dispatch(ep, x, idx, T, &recv, NULL, GIN_EP_BOTH);
  if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
  if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(comm);
  if (EP_TEST_LIAR >= 3) {
    /* The dispatch is honest: it must succeed. The experts' outputs go
     * in the combine buffer (zero-copy: the `where` words carry mode 3's
     * lie). */
    TASSERT(rc == GIN_SUCCESS, "rank %d: honest dispatch failed: %s", rank,
            gin_last_error());
    TCHECK(gin_comm_barrier(world)); /* every rank's dispatch is done */
    uint16_t *y;
    TCHECK(gin_ep_combine_buffer(ep, &y));
    for (int step = 0; step < (EP_TEST_LIAR == 4 ? 4 : 1); step++) {
      if (step > 0)
        rc = gin_ep_dispatch(ep, x, idx, T, &recv, NULL, GIN_EP_BOTH);
      if (rc == GIN_SUCCESS)
        rc = gin_ep_combine(ep, y, idx, w, T, out, NULL, GIN_EP_BOTH);
      if (rc == GIN_SUCCESS) rc = gin_stream_synchronize(0);
      if (rc == GIN_SUCCESS) rc = gin_comm_get_async_error(comm);
      if (rc != GIN_SUCCESS) break;
    }
  }
  int64_t timeout = 60000;
  const char *env = getenv("GIN_TIMEOUT_MS");
  if (env) timeout = atoll(env);
  /* Rank 1 was told no lie: a peer that saw one must abort it. */
  while (rank == 1 && rc == GIN_SUCCESS && now_ms() - t0 < (double)timeout) {
    struct timespec nap = {0, 100000};
    nanosleep(&nap, NULL);
    rc = gin_comm_get_async_error(comm);
  }
  double ms = now_ms() - t0;
  const char *msg = gin_last_error();
  int saw = rc == GIN_ERR_REMOTE && says_lie(msg);
  printf("rank %d: %s after %.1f ms: %s\n", rank, gin_strerror(rc), ms, msg);
  TASSERT(saw || rc == GIN_ERR_ABORTED,
          "rank %d: wanted GIN_ERR_REMOTE reporting rank 1's lie or "
          "GIN_ERR_ABORTED, got %s: %s",
          rank, gin_strerror(rc), msg);
  TASSERT(ms < (double)timeout, "rank %d: took %.1f ms (timeout %lld ms)", rank,
          ms, (long long)timeout);

  /* Did any rank see the lie itself? */
  int *all = (int *)calloc((size_t)nranks, sizeof(int));
  TASSERT(all, "out of memory");
  TCHECK(gin_comm_allgather(world, &saw, all, sizeof saw));
  int seen = 0, others = 0;
  for (int r = 0; r < nranks; r++) {
    seen += all[r];
    others += r != 1 && all[r];
  }
  free(all);
  TASSERT(others > 0, "no rank but the liar itself reported its lie");

  /* Everything releases on the aborted communicator (gin_ep_destroy
   * says why it was not collective). */
  rc = gin_ep_destroy(ep);
  TASSERT(rc == GIN_SUCCESS || rc == GIN_ERR_ABORTED || rc == GIN_ERR_REMOTE,
          "rank %d: gin_ep_destroy: %s: %s", rank, gin_strerror(rc),
          gin_last_error());
  TCHECK(gin_comm_destroy(comm));
  TCHECK(gin_mem_free(x));
  TCHECK(gin_mem_free(out));
  TCHECK(gin_mem_free(idx));
  TCHECK(gin_mem_free(w));
  TCHECK(gin_comm_destroy(world));
  if (rank == 0)
    printf("test_ep_liar %d: passed (%d of %d ranks reported the lie)\n",
           EP_TEST_LIAR, seen, nranks);
  return 0;
}
