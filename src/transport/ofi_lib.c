/*
 * Loading libfabric (ofi_lib.h).
 */
#define _GNU_SOURCE
#include "transport/ofi_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"

/* The versions the build's libfabric gives each symbol by default (what a
 * link against it binds; CMake reads them from the library), or "" to
 * take the loaded library's default. */
#ifndef GIN_OFI_V_GETINFO
#define GIN_OFI_V_GETINFO ""
#endif
#ifndef GIN_OFI_V_FREEINFO
#define GIN_OFI_V_FREEINFO ""
#endif
#ifndef GIN_OFI_V_DUPINFO
#define GIN_OFI_V_DUPINFO ""
#endif
#ifndef GIN_OFI_V_FABRIC
#define GIN_OFI_V_FABRIC ""
#endif
#ifndef GIN_OFI_V_STRERROR
#define GIN_OFI_V_STRERROR ""
#endif
#ifndef GIN_OFI_LIB_PATH
#define GIN_OFI_LIB_PATH ""
#endif

static gin_ofi_lib_t ofi_fns;
static void *ofi_handle; /* kept for the process's life: never closed */
static int ofi_loaded;
static char ofi_why[512];

/* Provider defaults gin sets for its process where the user has not,
 * before libfabric first reads them. tcp;ofi_rxm's shared receive pool:
 * 4096 bounce buffers of 16 KiB an endpoint by default, 64 MB that cost
 * each communicator's init 25 ms and that the first messages touch page
 * by page; the transport keeps at most OFI_TX_PEER messages in flight to
 * a peer and posts OFI_RX_BUFS receives, which 512 cover for 32 peers at
 * once (8 MB, 9 ms). A process that loaded libfabric before keeps what
 * it had. */
static void ofi_env_defaults(void) {
  if (!getenv("FI_OFI_RXM_MSG_RX_SIZE"))
    setenv("FI_OFI_RXM_MSG_RX_SIZE", "512", 0);
}

/* The signals whose handlers a library's constructor may take:
 * libinfinipath (linked by Debian's libfabric for its psm provider) puts
 * a backtrace writer on all of these when it loads. */
static const int ofi_sigs[] = {SIGINT, SIGTERM, SIGSEGV,
                               SIGBUS, SIGILL,  SIGABRT};
#define OFI_NSIGS (int)(sizeof ofi_sigs / sizeof ofi_sigs[0])

/* dlopen, the process's handlers of ofi_sigs kept as they were. */
static void *ofi_dlopen(const char *file) {
  struct sigaction kept[OFI_NSIGS];
  for (int i = 0; i < OFI_NSIGS; i++)
    sigaction(ofi_sigs[i], NULL, &kept[i]);
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  for (int i = 0; i < OFI_NSIGS; i++)
    sigaction(ofi_sigs[i], &kept[i], NULL);
  return h;
}

/* name at the version the build linked against; NULL (with ofi_why set)
 * where the library loaded lacks it: a version a build's headers do not
 * describe would misread their structures. */
static void *ofi_sym(void *h, const char *name, const char *version) {
  void *p = version[0] ? dlvsym(h, name, version) : dlsym(h, name);
  if (!p)
    snprintf(ofi_why, sizeof ofi_why,
             "ofi: the libfabric loaded has no %s%s%s (this gin was built "
             "against a libfabric that has it; load that one, e.g. through "
             "LD_LIBRARY_PATH)",
             name, version[0] ? "@" : "", version);
  return p;
}

static void ofi_load(void) {
  ofi_env_defaults();
  void *h = ofi_handle = ofi_dlopen("libfabric.so.1");
  const char *err1 = h ? "" : dlerror();
  char first[256];
  snprintf(first, sizeof first, "%s", err1 ? err1 : "");
  if (!h && GIN_OFI_LIB_PATH[0]) h = ofi_handle = ofi_dlopen(GIN_OFI_LIB_PATH);
  if (!h) {
    const char *err2 = dlerror();
    snprintf(ofi_why, sizeof ofi_why,
             "ofi: libfabric could not be loaded (%s%s%s): install libfabric "
             "(Debian: libfabric1) or put its directory in LD_LIBRARY_PATH",
             first, GIN_OFI_LIB_PATH[0] ? "; " : "",
             GIN_OFI_LIB_PATH[0] && err2 ? err2 : "");
    return;
  }
  *(void **)&ofi_fns.getinfo = ofi_sym(h, "fi_getinfo", GIN_OFI_V_GETINFO);
  *(void **)&ofi_fns.freeinfo = ofi_sym(h, "fi_freeinfo", GIN_OFI_V_FREEINFO);
  *(void **)&ofi_fns.dupinfo = ofi_sym(h, "fi_dupinfo", GIN_OFI_V_DUPINFO);
  *(void **)&ofi_fns.fabric = ofi_sym(h, "fi_fabric", GIN_OFI_V_FABRIC);
  *(void **)&ofi_fns.strerror = ofi_sym(h, "fi_strerror", GIN_OFI_V_STRERROR);
  if (!ofi_fns.getinfo || !ofi_fns.freeinfo || !ofi_fns.dupinfo ||
      !ofi_fns.fabric || !ofi_fns.strerror)
    return; /* ofi_why says which; it stays loaded: unloading a library
             * with constructors is not safe in general */
  ofi_loaded = 1;
}

static pthread_once_t ofi_once = PTHREAD_ONCE_INIT;

const gin_ofi_lib_t *gin_ofi_lib(void) {
  pthread_once(&ofi_once, ofi_load);
  if (!ofi_loaded) {
    GIN_ERROR(GIN_ERR_UNSUPPORTED, "%s", ofi_why);
    return NULL;
  }
  return &ofi_fns;
}
