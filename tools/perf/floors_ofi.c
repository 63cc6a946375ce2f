/* gin-perf's libfabric floors (floors_ofi.h). */
#define _GNU_SOURCE
#include "perf/floors_ofi.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OFI_API FI_VERSION(1, 9)
#define FO_INFLIGHT 64 /* writes in flight (stream) */
#define FO_NAME_MAX 256

struct floor_ofi {
  int rank;
  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_cq *cq;
  struct fid_av *av;
  struct fid_ep *ep;
  struct fid_mr *mr;
  void *desc;
  char *buf;
  size_t buf_bytes;
  fi_addr_t peer;
  uint64_t peer_addr, peer_key; /* where the peer's buffer is, its key */
  struct fi_context2 ctx[FO_INFLIGHT + 1];
  uint64_t next_ctx;         /* writes issued */
  uint64_t tx_done, rx_data; /* completions seen: own writes, the peer's */
};

/* What each rank tells the other. */
typedef struct fo_rec {
  char name[FO_NAME_MAX];
  uint64_t ok, name_len, addr, key;
} fo_rec_t;

static uint64_t fo_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int fo_fail(const char *what, int rc) {
  fprintf(stderr, "gin-perf: libfabric floor: %s: %s\n", what,
          fi_strerror(rc < 0 ? -rc : rc));
  return -1;
}

/* Reads what the queue holds into the counters; -1 on a completion
 * error. */
static int fo_progress(floor_ofi_t *f) {
  struct fi_cq_data_entry e[16];
  ssize_t n = fi_cq_read(f->cq, e, 16);
  if (n == -FI_EAGAIN) return 0;
  if (n == -FI_EAVAIL) {
    struct fi_cq_err_entry err;
    memset(&err, 0, sizeof err);
    fi_cq_readerr(f->cq, &err, 0);
    fprintf(stderr, "gin-perf: libfabric floor: completion error: %s\n",
            fi_cq_strerror(f->cq, err.prov_errno, err.err_data, NULL, 0));
    return -1;
  }
  if (n < 0) return fo_fail("fi_cq_read", (int)n);
  for (ssize_t i = 0; i < n; i++) {
    if (e[i].flags & FI_REMOTE_CQ_DATA)
      f->rx_data++;
    else
      f->tx_done++;
  }
  return 0;
}

/* Polls until *count >= want, bounded; -1 on error or timeout. */
static int fo_wait(floor_ofi_t *f, const uint64_t *count, uint64_t want,
                   const char *what) {
  uint64_t t0 = 0;
  for (unsigned i = 0; *count < want; i++) {
    if (fo_progress(f) != 0) return -1;
    if ((i & 255) == 255) {
      uint64_t now = fo_now_ns();
      if (!t0) t0 = now;
      if (now - t0 > (uint64_t)FLOOR_OFI_TIMEOUT_MS * 1000000ull) {
        fprintf(stderr, "gin-perf: libfabric floor: no %s within %d ms\n", what,
                FLOOR_OFI_TIMEOUT_MS);
        return -1;
      }
      sched_yield();
    }
  }
  return 0;
}

/* One write of `bytes` from the start of this rank's buffer into the
 * peer's, with remote CQ data when `data`; retried while the provider
 * has no room. */
static int fo_write(floor_ofi_t *f, size_t bytes, int data) {
  /* At most FO_INFLIGHT of this rank's writes outstanding (a context
   * each, reused once its write completed). */
  if (f->next_ctx - f->tx_done >= FO_INFLIGHT &&
      fo_wait(f, &f->tx_done, f->next_ctx - FO_INFLIGHT + 1,
              "write completion") != 0)
    return -1;
  struct fi_context2 *c = &f->ctx[f->next_ctx++ % (FO_INFLIGHT + 1)];
  uint64_t t0 = 0;
  for (unsigned i = 0;; i++) {
    ssize_t rc = data ? fi_writedata(f->ep, f->buf, bytes, f->desc, 1, f->peer,
                                     f->peer_addr, f->peer_key, c)
                      : fi_write(f->ep, f->buf, bytes, f->desc, f->peer,
                                 f->peer_addr, f->peer_key, c);
    if (rc == 0) return 0;
    if (rc != -FI_EAGAIN) return fo_fail("fi_write", (int)rc);
    if (fo_progress(f) != 0) return -1;
    if ((i & 255) == 255) {
      uint64_t now = fo_now_ns();
      if (!t0) t0 = now;
      if (now - t0 > (uint64_t)FLOOR_OFI_TIMEOUT_MS * 1000000ull) {
        fprintf(stderr, "gin-perf: libfabric floor: no room to write\n");
        return -1;
      }
    }
  }
}

static struct fi_info *fo_hints(void) {
  struct fi_info *h = fi_allocinfo();
  if (!h) return NULL;
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                            FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  h->tx_attr->size = 256;
  h->rx_attr->size = 256;
  /* As gin's transport: GIN_OFI_PROVIDER, else libfabric's FI_PROVIDER. */
  const char *prov = getenv("GIN_OFI_PROVIDER");
  if (prov && *prov) h->fabric_attr->prov_name = strdup(prov);
  return h;
}

/* Opens this rank's side into f and fills *mine; returns the step that
 * failed, or NULL. */
static const char *fo_open_local(floor_ofi_t *f, fo_rec_t *mine, int *rcp) {
  struct fi_info *h = fo_hints();
  int rc = h ? fi_getinfo(OFI_API, NULL, NULL, 0, h, &f->info) : -FI_ENOMEM;
  if (h) fi_freeinfo(h);
  *rcp = rc;
  if (rc != 0)
    return "no provider with RMA writes on a reliable datagram endpoint "
           "(GIN_OFI_PROVIDER, FI_PROVIDER)";
  struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA,
                           .wait_obj = FI_WAIT_NONE,
                           .size = 2 * FO_INFLIGHT + 64};
  struct fi_av_attr ava = {.type = FI_AV_TABLE};
  size_t name_len = sizeof mine->name;
  const char *step = "fi_fabric";
  if ((rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)) ||
      (step = "fi_domain",
       rc = fi_domain(f->fabric, f->info, &f->domain, NULL)) ||
      (step = "fi_cq_open", rc = fi_cq_open(f->domain, &cqa, &f->cq, NULL)) ||
      (step = "fi_av_open", rc = fi_av_open(f->domain, &ava, &f->av, NULL)) ||
      (step = "fi_endpoint",
       rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)) ||
      (step = "fi_ep_bind", rc = fi_ep_bind(f->ep, &f->av->fid, 0)) ||
      (step = "fi_ep_bind",
       rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)) ||
      (step = "fi_enable", rc = fi_enable(f->ep)) ||
      (step = "fi_getname",
       rc = fi_getname(&f->ep->fid, mine->name, &name_len))) {
    *rcp = rc;
    return step;
  }
  *rcp = -FI_ENOMEM;
  f->buf = (char *)aligned_alloc(4096, (f->buf_bytes + 4095) & ~(size_t)4095);
  if (!f->buf) return "buffer";
  memset(f->buf, 0, f->buf_bytes);
  uint64_t mr_mode = (uint64_t)f->info->domain_attr->mr_mode;
  step = "fi_mr_reg";
  if ((rc = fi_mr_reg(f->domain, f->buf, f->buf_bytes,
                      FI_WRITE | FI_REMOTE_WRITE, 0, 0, 0, &f->mr, NULL)) ||
      ((mr_mode & FI_MR_ENDPOINT) &&
       ((step = "fi_mr_bind", rc = fi_mr_bind(f->mr, &f->ep->fid, 0)) ||
        (step = "fi_mr_enable", rc = fi_mr_enable(f->mr))))) {
    *rcp = rc;
    return step;
  }
  f->desc = fi_mr_desc(f->mr);
  mine->name_len = name_len;
  mine->key = fi_mr_key(f->mr);
  mine->addr = mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)f->buf : 0;
  mine->ok = 1;
  return NULL;
}

int floor_ofi_open(int rank, size_t buf_bytes, floor_ofi_allgather_t ag,
                   void *actx, floor_ofi_t **out, char *prov, size_t prov_len) {
  *out = NULL;
  floor_ofi_t *f = (floor_ofi_t *)calloc(1, sizeof *f);
  fo_rec_t mine, both[2];
  memset(&mine, 0, sizeof mine);
  const char *step = "memory";
  int rc = -FI_ENOMEM;
  if (f) {
    f->rank = rank;
    f->buf_bytes = buf_bytes < 8 ? 8 : buf_bytes;
    step = fo_open_local(f, &mine, &rc);
  }
  /* Both ranks exchange, also one that failed, so neither waits for the
   * other. */
  if (ag(actx, &mine, both, sizeof mine) != 0) {
    floor_ofi_close(f);
    return fo_fail("the exchange of addresses", FI_EIO);
  }
  const fo_rec_t *p = &both[1 - rank];
  if (!step && !p->ok) {
    step = "the other rank's side (its message says why)";
    rc = -FI_EOTHER;
  }
  if (!step && fi_av_insert(f->av, p->name, 1, &f->peer, 0, NULL) != 1) {
    step = "fi_av_insert";
    rc = -FI_EINVAL;
  }
  if (step) {
    fo_fail(step, rc);
    floor_ofi_close(f);
    return -1;
  }
  f->peer_addr = p->addr;
  f->peer_key = p->key;
  snprintf(prov, prov_len, "%s", f->info->fabric_attr->prov_name);
  *out = f;
  return 0;
}

static int fo_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int floor_ofi_pingpong(floor_ofi_t *f, size_t bytes, int iters, int warmup,
                       double *median_us, double *p99_us) {
  if (bytes < 1 || bytes > f->buf_bytes || iters < 1 || warmup < 0)
    return fo_fail("ping-pong arguments", FI_EINVAL);
  double *t = (double *)malloc(sizeof(double) * (size_t)iters);
  if (!t) return fo_fail("memory", FI_ENOMEM);
  int rc = 0;
  for (int i = 0; i < warmup + iters && rc == 0; i++) {
    uint64_t t0 = fo_now_ns();
    if (f->rank == 0) {
      rc = fo_write(f, bytes, 1);
      if (rc == 0) rc = fo_wait(f, &f->rx_data, f->rx_data + 1, "pong");
    } else {
      rc = fo_wait(f, &f->rx_data, f->rx_data + 1, "ping");
      if (rc == 0) rc = fo_write(f, bytes, 1);
    }
    if (i >= warmup) t[i - warmup] = (double)(fo_now_ns() - t0) / 1000.0;
  }
  /* Every write of this rank completed before the next test. */
  if (rc == 0) rc = fo_wait(f, &f->tx_done, f->next_ctx, "write completion");
  if (rc == 0 && f->rank == 0) {
    qsort(t, (size_t)iters, sizeof *t, fo_cmp);
    *median_us = t[iters / 2];
    *p99_us = t[(size_t)((iters - 1) * 0.99)];
  }
  free(t);
  return rc;
}

int floor_ofi_stream(floor_ofi_t *f, size_t bytes, size_t total, double *gbps) {
  if (bytes < 1 || bytes > f->buf_bytes || total < bytes)
    return fo_fail("stream arguments", FI_EINVAL);
  size_t n = (total + bytes - 1) / bytes;
  int rc = 0;
  for (int round = 0; round < 2 && rc == 0; round++) {
    uint64_t t0 = fo_now_ns();
    if (f->rank == 0) {
      for (size_t i = 0; i < n && rc == 0; i++)
        rc = fo_write(f, bytes, i == n - 1);
      if (rc == 0) rc = fo_wait(f, &f->rx_data, f->rx_data + 1, "answer");
      double s = (double)(fo_now_ns() - t0) / 1e9;
      if (rc == 0 && round == 1) *gbps = (double)(n * bytes) / s / 1e9;
    } else {
      rc = fo_wait(f, &f->rx_data, f->rx_data + 1, "last write");
      if (rc == 0) rc = fo_write(f, 8, 1);
    }
    if (rc == 0) rc = fo_wait(f, &f->tx_done, f->next_ctx, "write completion");
  }
  return rc;
}

void floor_ofi_close(floor_ofi_t *f) {
  if (!f) return;
  if (f->ep) fi_close(&f->ep->fid);
  if (f->mr) fi_close(&f->mr->fid);
  if (f->av) fi_close(&f->av->fid);
  if (f->cq) fi_close(&f->cq->fid);
  if (f->domain) fi_close(&f->domain->fid);
  if (f->fabric) fi_close(&f->fabric->fid);
  if (f->info) fi_freeinfo(f->info);
  free(f->buf);
  free(f);
}
