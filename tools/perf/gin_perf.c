/*
 * gin-perf: microbenchmarks of the device API between two ranks, with the
 * machine's floors and the host-initiated baseline measured in the same
 * run, so every figure is a ratio.
 *
 *   ginrun -n 2 gin_perf_cuda [TEST] [options]
 *
 * The path follows GIN_BACKEND / GIN_TRANSPORT. Absolute times count only
 * on a GPU; on the host target this is a smoke test. `gin_perf --help`
 * lists tests and options; README.md documents them.
 */
#include <string.h>

#include "perf/peer_common.h"
#include "perf/perf.h"

static const char *const tests[] = {
    "all",  "pingpong", "sigpp",  "ladder",   "barrier",   "bw", "bibw",
    "rate", "ring",     "floors", "baseline", "floorscan", NULL};

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: ginrun -n 2 gin_perf_{cuda,host} [TEST] [options]\n"
      "tests:\n"
      "  all       floors, pingpong, sigpp, barrier, bw, bibw, rate,\n"
      "            baseline (the default)\n"
      "  pingpong  put+signal round trip, per size, issued by -g\n"
      "  sigpp     signal-only round trip\n"
      "  ladder    the 8-byte round trip built up from the raw floor\n"
      "  barrier   gin_barrier latency (world team, -g)\n"
      "  bw, bibw  put bandwidth, one direction or both at once\n"
      "  rate      8-byte puts per second, every thread issuing\n"
      "  ring      proxy ring alone (GIN_BACKEND=proxy GIN_TRANSPORT=null)\n"
      "  floors    the machine's floors only (GPU and CPU side)\n"
      "  baseline  host-initiated ping-pong (launch, copy, notify)\n"
      "  floorscan the raw floor with its flag in each line of 4 KiB and\n"
      "            on a signal word, twice; the 8 B put round trip\n"
      "options:\n"
      "  -b MIN -e MAX -f FACTOR   sizes (bytes), default 8 .. 1 MiB x 2\n"
      "  -n ITERS -w WARMUP        iterations, default 1000 and 100\n"
      "  -g thread|warp|block      who issues (pingpong, sigpp, barrier)\n"
      "  -c CONTEXTS               contexts (default: blocks, at most 64)\n"
      "  --blocks B --threads T    grid of bw/rate/ring (default: one block\n"
      "                            per SM, 128 threads for rate)\n"
      "  --reps R                  timed repetitions of bw/rate (5)\n"
      "  --launches L              pingpong, sigpp, L > 1: L kernels a size,\n"
      "                            each after a raw floor kernel; medians of\n"
      "                            the launches' medians (the upper one for\n"
      "                            even L), ratio to the floors' (1: one\n"
      "                            kernel, the floor measured once)\n"
      "  --floors                  also the CPU floors (TCP, shared memory)\n"
      "  --raw                     bw, rate: also the same copies or\n"
      "                            8-byte stores by a kernel with no library\n"
      "                            call (bw_raw, rate_raw rows)\n"
      "  --csv FILE --json FILE    results, besides the table\n");
}

static void parse(int argc, char **argv, perf_opts_t *o) {
  PEER_OPTS_INIT(o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc, known = 0;
    for (int t = 0; tests[t]; t++)
      if (!strcmp(a, tests[t])) o->test = tests[t], known = 1;
    if (known) continue;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--floors")) {
      o->floors = 1;
    } else if (!strcmp(a, "--raw")) {
      o->raw = 1;
    } else if (!has) {
      fprintf(stderr, "gin-perf: unknown test or option without value: %s\n",
              a);
      usage(stderr);
      exit(2);
    } else if (PEER_OPTS_SET_VALUED(o, a, argv[i + 1])) {
      i++;
    } else if (!strcmp(a, "--json")) {
      o->json = argv[++i];
    } else if (!strcmp(a, "-g")) {
      const char *v = argv[++i];
      if (!strcmp(v, "thread"))
        o->coop = GIN_COOP_THREAD;
      else if (!strcmp(v, "warp"))
        o->coop = GIN_COOP_WARP;
      else if (!strcmp(v, "block"))
        o->coop = GIN_COOP_BLOCK;
      else {
        fprintf(stderr, "gin-perf: -g %s: want thread, warp or block\n", v);
        exit(2);
      }
    } else {
      fprintf(stderr, "gin-perf: unknown option %s\n", a);
      usage(stderr);
      exit(2);
    }
  }
  if (o->blocks <= 0) o->blocks = perf_default_blocks();
  if (o->b < 1 || o->e < o->b || o->f <= 1 || o->iters < 1 ||
      o->iters > PERF_MAX_SAMPLES || o->warmup < 0 || o->threads < 1 ||
      o->threads > 1024 || o->reps < 1 || o->contexts < 0 || o->contexts > 64 ||
      o->launches < 1 || o->launches > PEER_MAX_LAUNCHES) {
    fprintf(stderr,
            "gin-perf: need 1 <= -b <= -e, -f > 1, 1 <= -n <= %d, "
            "-w >= 0, 1 <= --threads <= 1024, --reps >= 1, "
            "0 <= -c <= 64, 1 <= --launches <= %d\n",
            PERF_MAX_SAMPLES, PEER_MAX_LAUNCHES);
    exit(2);
  }
}

/* "direct", "proxy-ipc", ... as the settings ask (auto when unset). */
static const char *path_name(void) {
  static char buf[64];
  const char *b = getenv("GIN_BACKEND"), *t = getenv("GIN_TRANSPORT");
  if (!b || !*b) b = "auto";
  if (!strcmp(b, "proxy"))
    snprintf(buf, sizeof buf, "proxy-%s", t && *t ? t : "auto");
  else
    snprintf(buf, sizeof buf, "%s", b);
  return buf;
}

int main(int argc, char **argv) {
  perf_env_t env;
  memset(&env, 0, sizeof env);
  parse(argc, argv, &env.o);
  perf_opts_t *o = &env.o;
  if (!perf_have_device()) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  int n;
  PERF_CHECK(gin_comm_init_from_env(&env.comm, NULL));
  PERF_CHECK(gin_comm_rank(env.comm, &env.rank));
  PERF_CHECK(gin_comm_size(env.comm, &n));
  if (n != 2) {
    if (env.rank == 0) fprintf(stderr, "gin-perf: run with 2 ranks\n");
    return 2;
  }
  env.path = path_name();
  size_t rate_bytes = PEER_RATE_BYTES(o->blocks, o->threads, o->iters);
  /* Room for distinct destinations of bw's puts (peer_bw_bytes). */
  size_t bw_bytes = peer_bw_bytes(o->blocks, o->e, perf_bw_budget());
  env.win_bytes = PERF_DATA + (bw_bytes > rate_bytes ? bw_bytes : rate_bytes);
  PERF_CHECK(gin_mem_alloc(env.win_bytes, &env.mem));
  PERF_CHECK(gin_mem_alloc(env.win_bytes, &env.copy_dst));
  /* Per-iteration samples, then two totals, then the ladder's send times,
   * then the SM a latency kernel's coop ran on. */
  PERF_CHECK(gin_mem_alloc(sizeof(uint64_t) * (size_t)(2 * o->iters + 3),
                           (void **)&env.samples));
  PERF_CHECK(gin_window_register(env.comm, env.mem, env.win_bytes, &env.win));
  gin_devcomm_reqs_t reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.contexts = o->contexts ? o->contexts : o->blocks < 64 ? o->blocks : 64;
  PERF_CHECK(gin_devcomm_create(env.comm, &reqs, &env.dc));
  perf_report_open(&env);
  perf_note(&env,
            "gin-perf, %s target, 2 ranks, path %s, %d iterations "
            "(+%d warm-up), %d contexts",
            perf_target_name(), env.path, o->iters, o->warmup, env.dc.nctx);
  if (!strcmp(perf_target_name(), "host"))
    perf_note(&env, "host target: a smoke test of the code paths; CPU "
                    "threads stand in for GPU blocks, so these are not GPU "
                    "figures (docs/PERFORMANCE.md has those)");

  const char *t = o->test;
  int all = !strcmp(t, "all");
  if (all || o->floors || !strcmp(t, "floors")) perf_floors_gpu(&env);
  if (o->floors || !strcmp(t, "floors")) perf_floors_cpu(&env);
  if (all || !strcmp(t, "pingpong")) perf_pingpong(&env);
  if (all || !strcmp(t, "sigpp")) perf_sigpp(&env);
  if (!strcmp(t, "ladder")) perf_ladder(&env);
  if (!strcmp(t, "floorscan")) perf_floorscan(&env);
  if (all || !strcmp(t, "barrier")) perf_barrier(&env);
  if (all || !strcmp(t, "bw")) perf_bw(&env, 0);
  if (all || !strcmp(t, "bibw")) perf_bw(&env, 1);
  if (all || !strcmp(t, "rate")) perf_rate(&env);
  if (!strcmp(t, "ring")) perf_ring(&env);
  if (all || !strcmp(t, "baseline")) perf_baseline(&env);

  perf_report_close(&env);
  perf_floors_close(&env);
  PERF_CHECK(gin_comm_barrier(env.comm));
  PERF_CHECK(gin_devcomm_destroy(env.comm, &env.dc));
  PERF_CHECK(gin_window_deregister(env.comm, env.win));
  PERF_CHECK(gin_mem_free(env.samples));
  PERF_CHECK(gin_mem_free(env.copy_dst));
  PERF_CHECK(gin_mem_free(env.mem));
  PERF_CHECK(gin_comm_destroy(env.comm));
  return 0;
}
