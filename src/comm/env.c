/*
 * gin_comm_init_from_env: rank, size and job id from the launcher's
 * environment (ginrun, Open MPI, Slurm, torchrun), then gin_comm_init; a
 * process started without a launcher is a job of one rank.
 *
 * With ginrun the unique id travels in GIN_UNIQUE_ID. With the other
 * launchers there is no channel to pass it, so every rank computes the same
 * one: the root's address and port and a job secret from the environment
 * (or derived from the launcher's job id), and rank 0 starts the root on
 * exactly that address and port.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/base.h"
#include "base/net.h"
#include "comm/bootstrap.h"
#include "comm/build.h"

GIN_PARAM_STR(param_job_secret, "JOB_SECRET", "",
              "job secret for jobs started by mpirun, srun or torchrun: 32 "
              "hex digits, or any string (hashed); default: derived from the "
              "launcher's job id, which is not secret")

/* Derived ports: [ENV_PORT_MIN, +ENV_PORT_SPAN), below Linux's ephemeral
 * range (32768 up), where an outgoing connection's local port could hold
 * it (seen in CI: "cannot listen on 127.0.0.1:53332: Address already in
 * use" while other tests had connections open). */
#define ENV_PORT_MIN 20000
#define ENV_PORT_SPAN 12000

/* A job as the launcher describes it. */
typedef struct env_job {
  const char *launcher;
  int rank, nranks;
  int multi_node;  /* the launcher says ranks span hosts */
  int port_offset; /* added to MASTER_PORT (torchrun: +1) */
  char jobid[512]; /* launcher's job id, "" if none */
} env_job_t;

static const char *env_get(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* Reads integer variable `name` in [lo, hi] into *out. */
static gin_result_t env_int(const char *name, long lo, long hi,
                            const char *launcher, long *out) {
  const char *v = env_get(name);
  if (!v)
    return GIN_ERROR(GIN_ERR_INVALID, "%s is not set (needed with %s)", name,
                     launcher);
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end != '\0')
    return GIN_ERROR(GIN_ERR_INVALID, "%s=\"%s\" is not an integer", name, v);
  if (x < lo || x > hi)
    return GIN_ERROR(GIN_ERR_INVALID, "%s=%ld is out of range [%ld, %ld]", name,
                     x, lo, hi);
  *out = x;
  return GIN_SUCCESS;
}

/* Reads rank and size from the named variables. */
static gin_result_t env_rank_size(env_job_t *job, const char *rank_var,
                                  const char *size_var) {
  long n, r;
  GIN_CHECK(env_int(size_var, 1, GIN_MAX_RANKS, job->launcher, &n));
  GIN_CHECK(env_int(rank_var, 0, n - 1, job->launcher, &r));
  job->rank = (int)r;
  job->nranks = (int)n;
  return GIN_SUCCESS;
}

static int env_less(const char *var, int nranks) {
  const char *v = env_get(var);
  return v && atoi(v) > 0 && atoi(v) < nranks;
}

/* Detects the launcher; fills rank, size and job id. */
static gin_result_t env_detect(env_job_t *job) {
  const char *v;
  if (env_get("OMPI_COMM_WORLD_RANK") || env_get("OMPI_COMM_WORLD_SIZE")) {
    job->launcher = "Open MPI";
    GIN_CHECK(
        env_rank_size(job, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"));
    if ((v = env_get("OMPI_MCA_ess_base_jobid")) ||
        (v = env_get("PMIX_NAMESPACE")) ||
        (v = env_get("OMPI_MCA_orte_ess_jobid")))
      snprintf(job->jobid, sizeof job->jobid, "ompi:%s", v);
    job->multi_node = env_less("OMPI_COMM_WORLD_LOCAL_SIZE", job->nranks);
  } else if (env_get("SLURM_PROCID")) {
    /* (SLURM_NTASKS alone is an allocation's shell, not a step's task.) */
    job->launcher = "Slurm";
    GIN_CHECK(env_rank_size(job, "SLURM_PROCID", "SLURM_NTASKS"));
    if ((v = env_get("SLURM_JOB_ID"))) {
      const char *step = env_get("SLURM_STEP_ID");
      snprintf(job->jobid, sizeof job->jobid, "slurm:%s.%s", v,
               step ? step : "");
    }
    v = env_get("SLURM_STEP_NUM_NODES");
    if (!v) v = env_get("SLURM_NNODES");
    job->multi_node = v && atoi(v) > 1;
  } else if (env_get("RANK") || env_get("WORLD_SIZE")) {
    job->launcher = "torchrun";
    GIN_CHECK(env_rank_size(job, "RANK", "WORLD_SIZE"));
    const char *id = env_get("TORCHELASTIC_RUN_ID");
    const char *ma = env_get("MASTER_ADDR"), *mp = env_get("MASTER_PORT");
    if (id || (ma && mp))
      snprintf(job->jobid, sizeof job->jobid, "torchrun:%s:%s:%s", id ? id : "",
               ma ? ma : "", mp ? mp : "");
    /* torch's own store listens on MASTER_PORT: the root takes the next. */
    job->port_offset = 1;
    job->multi_node = env_less("LOCAL_WORLD_SIZE", job->nranks);
  } else {
    /* No launcher: a job of one rank (launcher stays NULL). */
    job->rank = 0;
    job->nranks = 1;
  }
  return GIN_SUCCESS;
}

/* FNV-1a, then a splitmix64 finaliser so nearby ids spread. */
static uint64_t env_hash(const char *s, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

int gin_env_derived_port(const char *jobid) {
  return ENV_PORT_MIN + (int)(env_hash(jobid, 0) % ENV_PORT_SPAN);
}

static void env_hash16(const char *s, uint8_t out[16]) {
  uint64_t a = env_hash(s, 0x67696e2d73656372ull), b = env_hash(s, a);
  for (int i = 0; i < 8; i++) {
    out[i] = (uint8_t)(a >> (8 * i));
    out[8 + i] = (uint8_t)(b >> (8 * i));
  }
}

/* The root's port: GIN_ROOT_PORT, else MASTER_PORT (+offset), else derived
 * from the job id. */
static gin_result_t env_port(const env_job_t *job, int *port_out) {
  long p;
  if (env_get("GIN_ROOT_PORT")) {
    GIN_CHECK(env_int("GIN_ROOT_PORT", 1, 65535, job->launcher, &p));
  } else if (env_get("MASTER_PORT")) {
    GIN_CHECK(
        env_int("MASTER_PORT", 1, 65535 - job->port_offset, job->launcher, &p));
    p += job->port_offset;
  } else if (job->jobid[0]) {
    p = gin_env_derived_port(job->jobid);
  } else {
    return GIN_ERROR(GIN_ERR_INVALID,
                     "gin_comm_init_from_env: %s gives no "
                     "job id to derive the bootstrap port from: set "
                     "GIN_ROOT_PORT (and GIN_JOB_SECRET) on every rank",
                     job->launcher);
  }
  *port_out = (int)p;
  return GIN_SUCCESS;
}

/* The job secret: GIN_JOB_SECRET (32 hex digits taken as is, anything else
 * hashed), else a hash of the job id (or of the root's address). */
static void env_secret(const env_job_t *job, const char *addr, int port,
                       uint8_t secret[16]) {
  const char *s = param_job_secret();
  if (s && *s) {
    int ok = strlen(s) == 32;
    for (int i = 0; ok && i < 32; i++) {
      int v = gin_hex_digit(s[i]);
      if (!(ok = v >= 0)) break;
      if (i % 2 == 0)
        secret[i / 2] = (uint8_t)(v << 4);
      else
        secret[i / 2] = (uint8_t)(secret[i / 2] | v);
    }
    if (!ok) env_hash16(s, secret);
    return;
  }
  char buf[600];
  if (job->jobid[0])
    snprintf(buf, sizeof buf, "%s", job->jobid);
  else
    snprintf(buf, sizeof buf, "%s:%s:%d", job->launcher, addr, port);
  env_hash16(buf, secret);
}

/* The unique id every rank other than 0 builds for itself. */
static gin_result_t env_uid_build(const char *addr, int port,
                                  const uint8_t secret[16], int nranks,
                                  gin_unique_id_t *uid_out) {
  gin_net_addr_t a;
  const char *why;
  if (gin_net_resolve(addr, port, &a, &why) != 0)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "cannot resolve the root address \"%s\": %s", addr, why);
  gin_bs_uid_t u = {.magic = GIN_BS_MAGIC,
                    .version = GIN_BS_VERSION,
                    .port = (uint16_t)port,
                    .nranks = nranks,
                    .family = a.family};
  memcpy(u.addr, a.addr, a.family == AF_INET ? 4 : 16);
  memcpy(u.secret, secret, 16);
  gin_unique_id_t uid;
  memset(&uid, 0, sizeof uid);
  memcpy(uid.bytes, &u, sizeof u);
  *uid_out = uid;
  return GIN_SUCCESS;
}

/* ginrun: everything is in the environment. */
static gin_result_t env_ginrun(env_job_t *job, gin_unique_id_t *uid) {
  job->launcher = "ginrun";
  GIN_CHECK(env_rank_size(job, "GIN_RANK", "GIN_NRANKS"));
  const char *s = env_get("GIN_UNIQUE_ID");
  if (!s)
    return GIN_ERROR(GIN_ERR_INVALID, "GIN_UNIQUE_ID is not set (needed "
                                      "with ginrun)");
  gin_result_t res = gin_unique_id_from_string(s, uid);
  if (res != GIN_SUCCESS) {
    return GIN_ERROR(res, "GIN_UNIQUE_ID: %s", gin_last_error());
  }
  return GIN_SUCCESS;
}

gin_result_t gin_comm_init_from_env_built_(gin_comm_t *comm_out,
                                           const gin_config_t *cfg,
                                           const gin_build_t_ *build) {
  GIN_CHECK(gin_build_check_(build, "gin_comm_init_from_env"));
  GIN_ARG_CHECK(comm_out, "gin_comm_init_from_env: comm_out is NULL");
  GIN_CHECK(gin_config_check_(cfg, "gin_comm_init_from_env"));
  env_job_t job = {0};
  gin_unique_id_t uid;
  int64_t timeout = gin_timeout_ms();
  if (cfg && cfg->size >= offsetof(gin_config_t, timeout_ms) + sizeof(int) &&
      cfg->timeout_ms > 0)
    timeout = cfg->timeout_ms;

  if (env_get("GIN_RANK") || env_get("GIN_NRANKS") ||
      env_get("GIN_UNIQUE_ID")) {
    GIN_CHECK(env_ginrun(&job, &uid));
    GIN_INFO(ENV, "launcher ginrun: rank %d of %d", job.rank, job.nranks);
    return gin_comm_init_built_(comm_out, job.nranks, job.rank, &uid, cfg,
                                build);
  }

  GIN_CHECK(env_detect(&job));
  if (!job.launcher) {
    /* Started on its own, as an MPI program runs without mpirun. */
    GIN_WARN(ENV, "no launcher found (ginrun: GIN_RANK, GIN_NRANKS, "
                  "GIN_UNIQUE_ID; mpirun: OMPI_COMM_WORLD_RANK/SIZE; srun: "
                  "SLURM_PROCID, SLURM_NTASKS; torchrun: RANK, WORLD_SIZE): "
                  "running as a job of one rank");
    GIN_CHECK(gin_get_unique_id(1, &uid));
    return gin_comm_init_built_(comm_out, 1, 0, &uid, cfg, build);
  }
  const char *addr = env_get("GIN_ROOT_ADDR");
  if (!addr) addr = env_get("MASTER_ADDR");
  if (!addr) addr = "127.0.0.1";
  int port = 0;
  uint8_t secret[16];
  GIN_CHECK(env_port(&job, &port));
  env_secret(&job, addr, port, secret);
  if (job.multi_node && (!strcmp(addr, "127.0.0.1") || !strcmp(addr, "::1")))
    GIN_WARN(ENV,
             "%s job spans several hosts but the bootstrap root is on "
             "%s: set GIN_ROOT_ADDR (or MASTER_ADDR) to rank 0's address",
             job.launcher, addr);
  GIN_INFO(ENV, "launcher %s: rank %d of %d, bootstrap root %s port %d%s%s",
           job.launcher, job.rank, job.nranks, addr, port,
           job.jobid[0] ? ", job id " : "", job.jobid);
  if (job.rank == 0)
    GIN_CHECK(gin_bs_root_start(job.nranks, addr, port, secret, timeout, &uid));
  else
    GIN_CHECK(env_uid_build(addr, port, secret, job.nranks, &uid));
  return gin_comm_init_built_(comm_out, job.nranks, job.rank, &uid, cfg, build);
}
