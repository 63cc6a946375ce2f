/*
 * The transport registry: the transports this build has, their ids (a
 * position in the table) and names, and the choice of one for each
 * proxied peer (GIN_TRANSPORT). A new transport is its own file plus one
 * line in the table.
 */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "transport/transport.h"

GIN_PARAM_STR(param_transport, "TRANSPORT", "auto",
              "transport of proxied peers: auto (ipc where the peer's memory "
              "is mapped here, tcp to the others), ipc (the same), tcp (every "
              "peer, also those on this machine), ofi (every peer, through "
              "libfabric: GIN_OFI_PROVIDER; the one to ask for on RDMA "
              "fabrics), or null (completes at once, moves nothing: ring "
              "measurements)")

static const gin_transport_ops_t *const registry[] = {
    &gin_transport_ipc,
    &gin_transport_null,
    &gin_transport_tcp,
#ifdef GIN_HAVE_OFI
    &gin_transport_ofi,
#endif
};
#define NREGISTRY ((int)(sizeof registry / sizeof registry[0]))
_Static_assert(NREGISTRY <= GIN_TRANSPORT_MAX, "registry within the ids");

const gin_transport_ops_t *gin_transport_get(int t) {
  return t >= 0 && t < NREGISTRY ? registry[t] : NULL;
}

static int transport_by_name(const char *name) {
  for (int t = 0; t < NREGISTRY; t++)
    if (!strcmp(registry[t]->name, name)) return t;
  return -1;
}

gin_result_t gin_transport_select(int mapped, int *id_out) {
  const char *want = param_transport();
  /* ipc reaches only peers mapped here: named or auto, the others go by
   * tcp. */
  int t = strcmp(want, "auto") && (mapped || strcmp(want, "ipc"))
              ? transport_by_name(want)
              : transport_by_name(mapped ? "ipc" : "tcp");
  if (t < 0 && !strcmp(want, "ofi"))
    return GIN_ERROR(GIN_ERR_UNSUPPORTED,
                     "GIN_TRANSPORT=ofi: this build has no ofi transport "
                     "(libfabric was not found when gin was built: install "
                     "libfabric-dev and build again)");
  if (t < 0) {
    char names[128] = "auto";
    for (int i = 0; i < NREGISTRY; i++) {
      size_t n = strlen(names);
      snprintf(names + n, sizeof names - n, ", %s", registry[i]->name);
    }
    return GIN_ERROR(GIN_ERR_INVALID, "GIN_TRANSPORT=%s: expected %s", want,
                     names);
  }
  *id_out = t;
  return GIN_SUCCESS;
}
