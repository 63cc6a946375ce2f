/* The transports this build has, by id. */
#include "transport/transport.h"

const gin_transport_ops_t *gin_transport_get(int t) {
  switch (t) {
  case GIN_TRANSPORT_IPC_ID: return &gin_transport_ipc;
  case GIN_TRANSPORT_NULL_ID: return &gin_transport_null;
  case GIN_TRANSPORT_TCP_ID: return &gin_transport_tcp;
  default: return NULL;
  }
}

int gin_transport_available(int t) { return gin_transport_get(t) != NULL; }
