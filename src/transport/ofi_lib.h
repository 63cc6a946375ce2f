/*
 * libfabric, loaded when the ofi transport first needs it rather than
 * linked: a process that loads gin but never opens ofi does not load
 * libfabric, nor what it links (Debian's links libinfinipath, whose
 * constructor replaces the process's SIGINT, SIGTERM, SIGSEGV, SIGBUS,
 * SIGILL and SIGABRT handlers with a backtrace writer that can deadlock a
 * process being stopped: gin puts them back when it loads libfabric), and
 * gin runs where libfabric is not installed.
 *
 * The functions libfabric's headers do not inline, resolved at the
 * symbol versions this build linked against (ofi_lib.c): the headers'
 * structures are those versions' layouts.
 *
 * Layering: used by ofi.c only.
 */
#ifndef GIN_TRANSPORT_OFI_LIB_H
#define GIN_TRANSPORT_OFI_LIB_H

#include <rdma/fabric.h>

#include "gin/gin.h"

typedef struct gin_ofi_lib {
  int (*getinfo)(uint32_t version, const char *node, const char *service,
                 uint64_t flags, const struct fi_info *hints,
                 struct fi_info **info);
  void (*freeinfo)(struct fi_info *info);
  struct fi_info *(*dupinfo)(const struct fi_info *info);
  int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                void *context);
  const char *(*strerror)(int errnum);
} gin_ofi_lib_t;

/* Loads libfabric once per process (thread safe): libfabric.so.1 from the
 * loader's search path (LD_LIBRARY_PATH first), else the one this build
 * found, keeping the process's handlers of the six signals above. First,
 * where the user has not set them, sets libfabric's provider defaults gin
 * wants. Returns the functions, or NULL after recording
 * GIN_ERR_UNSUPPORTED naming what failed (no libfabric, or one without a
 * function at the version this build needs). */
const gin_ofi_lib_t *gin_ofi_lib(void);

#endif
