/*
 * Windows: collective, symmetric registration of gin_mem_alloc memory.
 * Each slot of the table has a host mirror and a device copy
 * (gin_dev_window_t + a base pointer per rank) that kernels read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

GIN_PARAM_INT(param_max_windows, "MAX_WINDOWS", 64,
              "window table slots per communicator (device communicators use "
              "one each)")

gin_result_t gin_window_init_(gin_comm_t c) {
  int64_t m = param_max_windows();
  if (m < 4 || m > 65536)
    return GIN_ERROR(GIN_ERR_INVALID, "GIN_MAX_WINDOWS=%lld outside [4, 65536]",
                     (long long)m);
  c->max_windows = (uint32_t)m;
  size_t n = (size_t)c->nranks;
  c->wins = (gin_win_slot_t *)calloc(m, sizeof *c->wins);
  if (!c->wins) return GIN_ERROR(GIN_ERR_NOMEM, "window table");
  for (uint32_t i = 0; i < c->max_windows; i++) {
    gin_win_slot_t *w = &c->wins[i];
    w->gen = 1;
    w->bases = (char **)calloc(n, sizeof(char *));
    w->hbases = (char **)calloc(n, sizeof(char *));
    w->import_ptr = (void **)calloc(n, sizeof(void *));
    w->import_cookie = (void **)calloc(n, sizeof(void *));
    w->import_size = (size_t *)calloc(n, sizeof(size_t));
    if (!w->bases || !w->hbases || !w->import_ptr || !w->import_cookie ||
        !w->import_size)
      return GIN_ERROR(GIN_ERR_NOMEM, "window table");
  }
  GIN_CHECK(gin_arch_dev_alloc(sizeof(gin_dev_window_t) * (size_t)m,
                               (void **)&c->wins_dev));
  GIN_CHECK(gin_arch_dev_alloc(sizeof(char *) * (size_t)m * n,
                               (void **)&c->bases_dev));
  /* Device entries start retired with their generation, base tables set. */
  gin_dev_window_t *tab = (gin_dev_window_t *)calloc(m, sizeof *tab);
  if (!tab) return GIN_ERROR(GIN_ERR_NOMEM, "window table");
  for (uint32_t i = 0; i < c->max_windows; i++) {
    tab[i].state = c->wins[i].gen;
    tab[i].base = c->bases_dev + (size_t)i * n;
  }
  gin_result_t res =
      gin_arch_copy(c->wins_dev, tab, sizeof(gin_dev_window_t) * (size_t)m);
  free(tab);
  return res;
}

/* Writes slot i's host mirror to the device copy. */
static gin_result_t slot_publish(gin_comm_t c, uint32_t i) {
  gin_win_slot_t *w = &c->wins[i];
  size_t n = (size_t)c->nranks;
  GIN_CHECK(gin_arch_copy(c->bases_dev + (size_t)i * n, w->bases,
                          n * sizeof(char *)));
  gin_dev_window_t d;
  memset(&d, 0, sizeof d);
  d.size = w->size;
  d.state = w->gen | (w->live ? GIN_DEV_WINDOW_LIVE : 0);
  d.base = c->bases_dev + (size_t)i * n;
  return gin_arch_copy(&c->wins_dev[i], &d, sizeof d);
}

static void slot_unmap(gin_comm_t c, gin_win_slot_t *w) {
  for (int r = 0; r < c->nranks; r++) {
    uint64_t t0 = gin_now_ns();
    if (w->import_ptr[r] && w->host_kind)
      gin_arch_hostmem_unimport(w->import_ptr[r], w->import_size[r],
                                w->import_cookie[r]);
    else if (w->import_ptr[r])
      gin_arch_shm_unimport(w->import_ptr[r], w->import_size[r],
                            w->import_cookie[r]);
    /* Whose view is slow to release (a dead rank's under MPS can be:
     * docs/RELIABILITY.md). */
    uint64_t ns = gin_now_ns() - t0;
    if (ns > GIN_SLOW_RELEASE_NS)
      GIN_WARN(WINDOW,
               "rank %d: releasing rank %d's view of a window took "
               "%.1f ms",
               c->rank, r, (double)ns / 1e6);
    w->import_ptr[r] = NULL;
    w->bases[r] = NULL;
    w->hbases[r] = NULL;
  }
}

/* Maps every load/store peer's part of a registration into this rank. */
static gin_result_t slot_map(gin_comm_t c, gin_win_slot_t *w,
                             const gin_win_rec_t *recs) {
  for (int r = 0; r < c->nranks; r++) {
    if (r == c->rank) {
      w->bases[r] = (char *)w->ptr;
      w->hbases[r] = (char *)w->hptr;
    } else if (c->path_mapped[r]) {
      void *p = NULL, *dev = NULL;
      gin_result_t res =
          w->host_kind
              ? gin_arch_hostmem_import(&recs[r].handle, recs[r].alloc_size, &p,
                                        &dev, &w->import_cookie[r])
              : gin_arch_shm_import(&recs[r].handle, recs[r].alloc_size, &p,
                                    &w->import_cookie[r]);
      if (res != GIN_SUCCESS) {
        slot_unmap(c, w);
        return GIN_ERROR(res, "window: rank %d cannot map rank %d's window: %s",
                         c->rank, r, gin_last_error());
      }
      w->import_ptr[r] = p;
      w->import_size[r] = recs[r].alloc_size;
      if (w->host_kind) {
        w->bases[r] = (char *)dev + recs[r].offset;
        w->hbases[r] = (char *)p + recs[r].offset;
      } else {
        w->bases[r] = (char *)p + recs[r].offset;
      }
    }
  }
  return GIN_SUCCESS;
}

gin_result_t gin_window_register_(gin_comm_t c, void *ptr, size_t size,
                                  int internal, const gin_win_mem_t *hostmem,
                                  gin_window_t *win_out) {
  /* What every rank says about it: the wire records, then (checked) the
   * decoded ones. */
  size_t n = (size_t)c->nranks;
  uint8_t *wire = (uint8_t *)calloc(n, GIN_WIN_REC_BYTES);
  gin_win_rec_t *recs = (gin_win_rec_t *)calloc(n, sizeof *recs);
  if (!wire || !recs) {
    free(wire);
    free(recs);
    return GIN_ERROR(GIN_ERR_NOMEM, "window registration");
  }
  gin_win_rec_t mine, *me = &mine;
  memset(me, 0, sizeof *me);
  gin_alloc_info_t info;
  uint32_t slot = 0;
  while (slot < c->max_windows && c->wins[slot].live)
    slot++;
  me->slot = slot;
  me->size = size;
  if (!ptr || size == 0)
    me->status = GIN_ERROR(GIN_ERR_INVALID, "gin_window_register: rank %d: %s",
                           c->rank, !ptr ? "ptr is NULL" : "size is 0");
  else if (slot == c->max_windows)
    me->status = GIN_ERROR(GIN_ERR_AGAIN,
                           "gin_window_register: rank %d: all %u window slots "
                           "in use (GIN_MAX_WINDOWS)",
                           c->rank, c->max_windows);
  else if (hostmem) {
    me->host_kind = 1;
    me->offset = (uint64_t)((char *)ptr - (char *)hostmem->dev);
    me->alloc_size = hostmem->size;
    me->handle = hostmem->handle;
  } else if ((me->status = gin_mem_lookup_(ptr, size, &info)) == GIN_SUCCESS) {
    me->offset = (uint64_t)((char *)ptr - (char *)info.base);
    me->alloc_size = info.size;
    me->handle = info.handle;
  }
  gin_result_t local = me->status;
  /* Everyone exchanges, also a rank that failed, so all fail together. */
  gin_win_rec_encode(me, wire + (size_t)c->rank * GIN_WIN_REC_BYTES);
  gin_result_t res = gin_bs_allgather(c->bs, wire, GIN_WIN_REC_BYTES);
  if (res == GIN_SUCCESS) res = local;
  if (res == GIN_SUCCESS) {
    /* Every rank agreed, and each part lies inside what it maps. */
    char why[256];
    res = gin_win_recs_check(wire, n * GIN_WIN_REC_BYTES, c->nranks,
                             c->max_windows, why, sizeof why, recs);
    if (res != GIN_SUCCESS) res = GIN_ERROR(res, "%s", why);
  }
  free(wire);
  gin_win_slot_t *w = &c->wins[slot];
  if (res == GIN_SUCCESS) {
    w->ptr = ptr;
    w->size = size;
    w->internal = internal;
    w->host_kind = hostmem != NULL;
    w->hptr = hostmem ? (char *)hostmem->host + me->offset : NULL;
    res = slot_map(c, w, recs);
    /* Collective (every rank reaches it: slot_map fails on one rank only
     * for local reasons, which its transports' exchange then carries). */
    gin_result_t t = gin_proxy_window(c->proxy, slot, 1);
    if (res == GIN_SUCCESS && t != GIN_SUCCESS) {
      res = t;
      slot_unmap(c, w);
    }
    if (res != GIN_SUCCESS) (void)gin_proxy_window(c->proxy, slot, 0);
  }
  if (res == GIN_SUCCESS) {
    /* Proxy threads read the slot concurrently: live last, with release. */
    __atomic_store_n(&w->live, 1, __ATOMIC_RELEASE);
    res = slot_publish(c, slot);
    if (res != GIN_SUCCESS) {
      __atomic_store_n(&w->live, 0, __ATOMIC_RELEASE);
      (void)gin_proxy_window(c->proxy, slot, 0);
      slot_unmap(c, w);
    }
  }
  free(recs);
  if (res != GIN_SUCCESS) return res;
  if (!hostmem) gin_mem_ref_(info.base, +1);
  GIN_INFO(WINDOW, "rank %d: window %u (gen %u) %zu bytes at %p", c->rank, slot,
           w->gen, size, ptr);
  win_out->idx = slot;
  win_out->gen = w->gen;
  win_out->size = size;
  win_out->local = w->bases[c->rank];
  for (int i = 0; i < GIN_INLINE_PEERS; i++)
    win_out->peer[i] = i < c->nranks ? w->bases[i] : NULL;
  return GIN_SUCCESS;
}

gin_result_t gin_window_register(gin_comm_t comm, void *ptr, size_t size,
                                 gin_window_t *win_out) {
  GIN_CHECK(gin_comm_check_(comm, "gin_window_register"));
  if (!win_out) {
    /* Still take part (as a rank with a NULL ptr), so the other ranks
     * fail now instead of waiting for this one until the timeout. */
    gin_window_t ignored;
    gin_window_register_(comm, NULL, size, 0, NULL, &ignored);
    return GIN_ERROR(GIN_ERR_INVALID, "gin_window_register: win_out is NULL");
  }
  return gin_window_register_(comm, ptr, size, 0, NULL, win_out);
}

static gin_result_t slot_retire(gin_comm_t c, uint32_t i) {
  gin_win_slot_t *w = &c->wins[i];
  gin_alloc_info_t info;
  if (!w->host_kind && gin_mem_lookup_(w->ptr, w->size, &info) == GIN_SUCCESS)
    gin_mem_ref_(info.base, -1);
  __atomic_store_n(&w->live, 0, __ATOMIC_RELEASE);
  (void)gin_proxy_window(c->proxy, i, 0); /* local: nothing to fail */
  slot_unmap(c, w);
  uint32_t gen = w->gen + 1;
  __atomic_store_n(&w->gen, gen ? gen : 1, __ATOMIC_RELEASE);
  w->ptr = NULL;
  w->hptr = NULL;
  w->host_kind = 0;
  w->size = 0;
  return slot_publish(c, i);
}

gin_result_t gin_window_deregister_(gin_comm_t c, gin_window_t win,
                                    int internal) {
  gin_result_t local = GIN_SUCCESS;
  if (win.idx >= c->max_windows || !c->wins[win.idx].live ||
      c->wins[win.idx].gen != win.gen || c->wins[win.idx].internal != internal)
    local = GIN_ERROR(GIN_ERR_INVALID,
                      "gin_window_deregister: rank %d: {idx %u, gen %u} is not "
                      "a live window (deregistered twice?)",
                      c->rank, win.idx, win.gen);
  /* Descriptors kernels posted before may still name this window. */
  if (local == GIN_SUCCESS) local = gin_proxy_quiesce(c->proxy, 0);
  /* Collective: nobody unmaps while a peer may still be registering. */
  int first = -1;
  int32_t word = 0;
  gin_result_t res = gin_comm_statuses_(c, local, &first, &word);
  if (res != GIN_SUCCESS && local == GIN_SUCCESS && gin_comm_aborted_by_(c)) {
    /* Aborted (a rank died): no collective step is left to take, and this
     * rank's views are its own. Release the window here, so its memory
     * can be freed, and report why the communicator is unusable. */
    slot_retire(c, win.idx);
    return res;
  }
  if (res == GIN_SUCCESS) res = local;
  if (res == GIN_SUCCESS && first >= 0)
    res = GIN_ERROR(GIN_ERR_INVALID,
                    "gin_window_deregister: rank %d passed a handle that is "
                    "not a live window",
                    first);
  if (res != GIN_SUCCESS) return res;
  return slot_retire(c, win.idx);
}

gin_result_t gin_window_deregister(gin_comm_t comm, gin_window_t win) {
  GIN_CHECK(gin_comm_check_live_(comm, "gin_window_deregister"));
  return gin_window_deregister_(comm, win, 0);
}

void gin_window_fini_(gin_comm_t c) {
  if (!c->wins) return;
  for (uint32_t i = 0; i < c->max_windows; i++) {
    gin_win_slot_t *w = &c->wins[i];
    if (w->live) slot_retire(c, i);
    free(w->bases);
    free(w->hbases);
    free(w->import_ptr);
    free(w->import_cookie);
    free(w->import_size);
  }
  free(c->wins);
  c->wins = NULL;
  gin_arch_dev_free(c->wins_dev);
  gin_arch_dev_free(c->bases_dev);
}
