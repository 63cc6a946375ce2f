/*
 * Helpers for test programs written once for both targets: result checks,
 * exit codes (0 pass, 1 fail, 77 skip), deterministic patterns shared by
 * device and host code.
 */
#ifndef GIN_TEST_COMMON_H
#define GIN_TEST_COMMON_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"

#define TEST_SKIP 77

#define TCHECK(call)                                                           \
  do {                                                                         \
    gin_result_t r_ = (call);                                                  \
    if (r_ != GIN_SUCCESS) {                                                   \
      fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, \
              gin_strerror(r_), gin_last_error());                             \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define TASSERT(cond, ...)                                                     \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* splitmix64: deterministic pseudo-random numbers on both targets. */
GIN_HD_FN uint64_t test_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Byte i of the payload rank s sends in round k (tag separates tests). */
GIN_HD_FN unsigned char test_byte(int tag, int s, int k, size_t i) {
  return (unsigned char)(test_mix(((uint64_t)tag << 56) ^ ((uint64_t)s << 40) ^
                                  ((uint64_t)k << 32) ^ (i >> 3)) >>
                         ((i & 7) * 8));
}

/* A field of /proc/self/status in bytes (VmRSS, RssAnon), -1 if absent
 * (host code: the soak and EP soak's memory samples). */
static inline long long test_status_bytes(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t n = strlen(field);
  long long kb = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':' &&
        sscanf(line + n + 1, "%lld", &kb) == 1)
      break;
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

/* Open descriptors of this process, -1 if /proc is not there. */
static inline int test_fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  int n = 0;
  if (!d) return -1;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the directory's own fd */
}

/* Skips (exit 77) on the cuda target when no GPU is present. */
#if GIN_ARCH_CUDA
static inline void test_require_device(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("SKIP: no CUDA device\n");
    exit(TEST_SKIP);
  }
}
#else
static inline void test_require_device(void) {}
#endif

/* gin memory of `bytes` (16 for 0, so that every array has an address);
 * the test fails where none can be had. */
static inline void *test_dev_alloc(size_t bytes) {
  void *p = NULL;
  TCHECK(gin_mem_alloc(bytes ? bytes : 16, &p));
  return p;
}

/* The world communicator from the environment, its rank and size; skips
 * (exit 77, after destroying it) when fewer than min_ranks. */
static inline gin_comm_t test_world_init(int *rank, int *nranks,
                                         int min_ranks) {
  gin_comm_t world;
  TCHECK(gin_comm_init_from_env(&world, NULL));
  TCHECK(gin_comm_rank(world, rank));
  TCHECK(gin_comm_size(world, nranks));
  if (*nranks < min_ranks) {
    printf("SKIP: needs %d ranks\n", min_ranks);
    gin_comm_destroy(world);
    exit(TEST_SKIP);
  }
  return world;
}

/* A fresh communicator over the same ranks as `world` (rank 0's unique
 * id, all-gathered): for a test that aborts or breaks one. */
static inline gin_comm_t test_comm_fresh(gin_comm_t world, int rank,
                                         int nranks) {
  gin_unique_id_t *ids = (gin_unique_id_t *)calloc((size_t)nranks, sizeof *ids);
  TASSERT(ids, "out of memory");
  if (rank == 0) TCHECK(gin_get_unique_id(nranks, &ids[0]));
  TCHECK(gin_comm_allgather(world, &ids[rank], ids, sizeof *ids));
  gin_comm_t c = NULL;
  TCHECK(gin_comm_init(&c, nranks, rank, &ids[0], NULL));
  free(ids);
  return c;
}

/* Threads per block for a coop kind on this target. */
static inline int test_block_threads(gin_coop_t coop) {
#if GIN_ARCH_CUDA
  return coop == GIN_COOP_THREAD ? 1 : coop == GIN_COOP_WARP ? 32 : 128;
#else
  return 1;
#endif
}

static inline const char *test_coop_name(gin_coop_t c) {
  return c == GIN_COOP_THREAD ? "thread"
         : c == GIN_COOP_WARP ? "warp"
                              : "block";
}

#endif
