/* Where a peer is and how this rank reaches it: a window's base at a
 * rank, the route (path and nearness), a rank's signals, whether the path
 * is served, and the abort gate on direct writes. Internal. */
#ifndef GIN_DEVICE_IMPL_ROUTE_FUNCS_H
#define GIN_DEVICE_IMPL_ROUTE_FUNCS_H

#include "gin/device/impl/check__funcs.h"

/* Rank w's base of window `win` (checked by gin_dev_window_live_): from the
 * handle for the first GIN_INLINE_PEERS ranks (no load at all: the
 * handle sits in the kernel's parameters), others with one load from
 * the flat table, not through the window entry. The handle's bases were
 * written with its generation, which the checks compare with the
 * table's. */
GIN_DEVICE_FN char *gin_dev_base_(const gin_devcomm_t *dc, gin_window_t win,
                                  int w) {
  /* A select, not win.peer[w]: indexing a by-value struct with a run-time
   * index makes the compiler copy it to local memory; this compiles to a
   * few compares and constant-bank loads. */
  GIN_STATIC_ASSERT(GIN_INLINE_PEERS == 8, "one select per inline peer");
  char *in = w == 0   ? win.peer[0]
             : w == 1 ? win.peer[1]
             : w == 2 ? win.peer[2]
             : w == 3 ? win.peer[3]
             : w == 4 ? win.peer[4]
             : w == 5 ? win.peer[5]
             : w == 6 ? win.peer[6]
             : w == 7 ? win.peer[7]
                      : NULL;
  if (in) return in;
  return (char *)gin_ro_ptr(
      (void *const *)&dc
          ->win_bases[(size_t)win.idx * (size_t)dc->nranks + (size_t)w]);
}
/* The route to world rank w: its GIN_PATH_*, with GIN_PATH_NEAR where w
 * runs on this GPU (known for the first GIN_INLINE_PEERS, by value;
 * others are read from the table and treated as far). A call decodes it
 * once and hands it on. */
GIN_DEVICE_FN int gin_dev_route_(const gin_devcomm_t *dc, int w) {
  if (w < GIN_INLINE_PEERS) return (int)((dc->path_inline >> (8 * w)) & 0xff);
  return gin_ro_u8(&dc->path[w]);
}
/* A route's GIN_PATH_*. */
GIN_HD_FN int gin_route_path_(int route) { return route & ~GIN_PATH_NEAR; }
/* Whether the route is one the coop's own stores serve (direct or this
 * rank): one test on a put's way, the rest out of its line. */
GIN_HD_FN int gin_route_direct_(int route) {
  unsigned p = (unsigned)gin_route_path_(route);
  return p - GIN_PATH_SELF <= GIN_PATH_DIRECT - GIN_PATH_SELF;
}
/* The path to world rank w. */
GIN_DEVICE_FN int gin_dev_path_(const gin_devcomm_t *dc, int w) {
  return gin_route_path_(gin_dev_route_(dc, w));
}
/* Rank w's signal array (by value for the first GIN_INLINE_PEERS; the
 * unrolled select keeps every parameter offset constant). */
GIN_DEVICE_FN uint64_t *gin_dev_peer_sig_(const gin_devcomm_t *dc, int w) {
  if (w < GIN_INLINE_PEERS) return dc->peer_sig_inline[w];
  return (uint64_t *)gin_ro_ptr((void *const *)&dc->peer_signals[w]);
}

GIN_DEVICE_FN int gin_dev_path_ok_(const gin_devcomm_t *dc, int w, int route) {
  switch (gin_route_path_(route)) {
  case GIN_PATH_SELF:
  case GIN_PATH_DIRECT: return GIN_SUCCESS;
  case GIN_PATH_PROXY:
    if (dc->rings) return GIN_SUCCESS;
    break; /* no rings: no proxy */
  default: break;
  }
  return gin_dev_fail_(dc, GIN_ERR_UNSUPPORTED, GIN_DEVERR_UNREACHABLE, w, -1,
                       0, (uint64_t)gin_route_path_(route), 0, 0);
}
/* Whether direct writes into peers must stop (gin_devcomm_t.gate). Read
 * by every thread of a coop, which then agrees (gin_coop_any). A put
 * reads it right after its small source load (a bulk put: before its
 * barrier and copy) and acts on it after its copy (the read then costs
 * nothing on the way: it is in flight with the source's loads), so once
 * shut its bytes may still land but no signal does, and it fails; a
 * signal and a value put read it first (in flight with the route's
 * decoding and, where there are any, the checks' table loads) and act on
 * it before they write anything; a barrier's wait acts on it first. */
GIN_DEVICE_FN int gin_dev_shut_(const gin_devcomm_t *dc) {
  return gin_load_cached_u32(dc->gate) != 0;
}
/* What a direct write to world rank w returns once shut. */
GIN_DEVICE_FN int gin_dev_shut_fail_(const gin_devcomm_t *dc, int w) {
  return gin_dev_fail_(dc, GIN_ERR_ABORTED, GIN_DEVERR_ABORTED, w, -1, 0, 0, 0,
                       1);
}
#endif
