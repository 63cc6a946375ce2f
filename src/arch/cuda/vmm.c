/*
 * VMM windows (GIN_CUDA_VMM): shareable device memory from cuMemCreate,
 * exported as a POSIX file descriptor that peers on the host duplicate with
 * pidfd_getfd and map. Why: under MPS, a put into a peer's cudaMalloc
 * window mapped by CUDA IPC falls from ~1970 to ~1350-1380 GB/s once the
 * windows span 8.4 GB, and into a VMM window it does not
 * (docs/PERFORMANCE.md, "Design figures"). gin_cuda does not link libcuda:
 * the driver's entry points come through the runtime, so programs still
 * start (and skip) where no driver is installed.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "arch/cuda/cuda_arch.h"
#include "arch/memfd.h"

static struct {
  PFN_cuGetErrorName_v6000 GetErrorName;
  PFN_cuMemGetAllocationGranularity_v10020 MemGetAllocationGranularity;
  PFN_cuMemCreate_v10020 MemCreate;
  PFN_cuMemRelease_v10020 MemRelease;
  PFN_cuMemAddressReserve_v10020 MemAddressReserve;
  PFN_cuMemAddressFree_v10020 MemAddressFree;
  PFN_cuMemMap_v10020 MemMap;
  PFN_cuMemUnmap_v10020 MemUnmap;
  PFN_cuMemSetAccess_v10020 MemSetAccess;
  PFN_cuMemExportToShareableHandle_v10020 MemExportToShareableHandle;
  PFN_cuMemImportFromShareableHandle_v10020 MemImportFromShareableHandle;
} cu;

/* Looks up driver function `name` (its ABI as of CUDA 12.0) into *slot. */
static int cu_sym(const char *name, void *slot) {
  void *f = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !f) {
    cudaGetLastError();
    return 0;
  }
  memcpy(slot, &f, sizeof f);
  return 1;
}
#define CU_SYM(x) cu_sym("cu" #x, &cu.x)

static int cu_ok;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static void cu_load(void) {
  cu_ok = CU_SYM(GetErrorName) && CU_SYM(MemGetAllocationGranularity) &&
          CU_SYM(MemCreate) && CU_SYM(MemRelease) &&
          CU_SYM(MemAddressReserve) && CU_SYM(MemAddressFree) &&
          CU_SYM(MemMap) && CU_SYM(MemUnmap) && CU_SYM(MemSetAccess) &&
          CU_SYM(MemExportToShareableHandle) &&
          CU_SYM(MemImportFromShareableHandle);
}
/* Whether the driver's VMM entry points are loaded (loads them once). */
static int cu_ready(void) {
  pthread_once(&cu_once, cu_load);
  return cu_ok;
}

#define GIN_CU_CALL(call, what)                                                \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      const char *n_ = NULL;                                                   \
      cu.GetErrorName(r_, &n_);                                                \
      return GIN_ERROR(r_ == CUDA_ERROR_OUT_OF_MEMORY ? GIN_ERR_NOMEM          \
                                                      : GIN_ERR_CUDA,          \
                       "%s: %s", what, n_ ? n_ : "unknown CUresult");          \
    }                                                                          \
  } while (0)

/* ---------------------------------------------------------- the choice */

static atomic_int vmm_on;
static pthread_once_t decide_once = PTHREAD_ONCE_INIT;
static char decide_err[192]; /* why GIN_CUDA_VMM=1 cannot be honoured */

/* kernel.yama.ptrace_scope, 0 where Yama is absent. */
static int yama_scope(void) {
  FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
  int v = 0;
  if (f) {
    if (fscanf(f, "%d", &v) != 1) v = 3;
    fclose(f);
  }
  return v;
}

/* Whether pidfd_getfd works here at all (kernel, seccomp), on a
 * descriptor of this process: 0, or the errno. */
static int pidfd_self_check(void) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int dup = gin_pidfd_dup((int32_t)getpid(), fd);
  int e = errno;
  close(fd);
  if (dup < 0) return e;
  close(dup);
  return 0;
}

static void decide(void) {
  int64_t want = gin_arch_param_cuda_vmm();
  if (want == 0) return;
  char why[160] = "";
  int scope = yama_scope(), e = 0;
  if (want != 1 && want != -1)
    snprintf(why, sizeof why, "expected -1 (automatic), 0 or 1");
  else if (!cu_ready())
    snprintf(why, sizeof why, "the driver has no VMM entry points");
  else if (scope >= 2)
    snprintf(why, sizeof why,
             "kernel.yama.ptrace_scope is %d: peers cannot take a "
             "window's descriptor with pidfd_getfd",
             scope);
  else if ((e = pidfd_self_check()) != 0)
    snprintf(why, sizeof why, "pidfd_getfd does not work here: %s",
             strerror(e));
  if (why[0]) {
    if (want != -1)
      snprintf(decide_err, sizeof decide_err, "GIN_CUDA_VMM=%lld: %s",
               (long long)want, why);
    else
      GIN_INFO(INIT, "windows from cudaMalloc (CUDA IPC): %s", why);
    return;
  }
  /* Peers are siblings under a launcher, not this process's ancestors:
   * where Yama limits ptrace to descendants, let the launcher's
   * descendants duplicate this process's descriptors (pidfd_getfd checks
   * ptrace access); not any process of the user, so not where the parent
   * is init (the check at gin_comm_init then finds out). This replaces a
   * ptracer the program named itself. */
  pid_t parent = getppid();
  if (scope == 1 && parent > 1 &&
      prctl(PR_SET_PTRACER, (unsigned long)parent, 0, 0, 0) != 0)
    GIN_INFO(INIT, "PR_SET_PTRACER(%d): %s", (int)parent, strerror(errno));
  atomic_store(&vmm_on, 1);
  GIN_INFO(INIT, "windows from cuMemCreate (VMM), descriptors by "
                 "pidfd_getfd");
}

gin_result_t gin_cuda_vmm_init_(void) {
  pthread_once(&decide_once, decide);
  if (decide_err[0])
    return GIN_ERROR(gin_arch_param_cuda_vmm() == 1 ? GIN_ERR_UNSUPPORTED
                                                    : GIN_ERR_INVALID,
                     "%s", decide_err);
  return GIN_SUCCESS;
}

int gin_cuda_vmm_on_(void) { return atomic_load(&vmm_on); }
int gin_cuda_vmm_forced_(void) { return gin_arch_param_cuda_vmm() == 1; }
void gin_cuda_vmm_off_(void) { atomic_store(&vmm_on, 0); }

/* --------------------------------------------------------- the memory */

/* An allocation or an import: the cookie of gin_arch_shm_alloc and
 * gin_arch_shm_import for VMM memory. */
typedef struct vmm_map {
  CUmemGenericAllocationHandle mem;
  CUdeviceptr va;
  size_t size; /* a multiple of the allocation granularity */
  int fd;      /* the exported descriptor; -1 on importers */
} vmm_map_t;

/* Reserves a range for m->mem of m->size bytes, maps it and gives gin's
 * device read and write access; undone on failure. */
static gin_result_t vmm_map_in(vmm_map_t *m, int dev) {
  GIN_CU_CALL(cu.MemAddressReserve(&m->va, m->size, 0, 0, 0),
              "cuMemAddressReserve of a window's range");
  CUresult r = cu.MemMap(m->va, m->size, 0, m->mem, 0);
  if (r == CUDA_SUCCESS) {
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = dev;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cu.MemSetAccess(m->va, m->size, &a, 1);
    if (r != CUDA_SUCCESS) cu.MemUnmap(m->va, m->size);
  }
  if (r != CUDA_SUCCESS) {
    cu.MemAddressFree(m->va, m->size);
    GIN_CU_CALL(r, "cuMemMap / cuMemSetAccess of a window");
  }
  return GIN_SUCCESS;
}

/* After r = the call that made m->mem (`what`): maps it for device dev
 * (vmm_map_in). On any failure m is released and freed. */
static gin_result_t vmm_hold(vmm_map_t *m, int dev, CUresult r,
                             const char *what) {
  if (r != CUDA_SUCCESS) {
    free(m);
    GIN_CU_CALL(r, what);
  }
  gin_result_t res = vmm_map_in(m, dev);
  if (res != GIN_SUCCESS) {
    cu.MemRelease(m->mem);
    free(m);
  }
  return res;
}

void gin_cuda_vmm_release_(void *cookie) {
  vmm_map_t *m = (vmm_map_t *)cookie;
  cudaStream_t s; /* gin's device and context current on this thread */
  CUresult r = gin_cuda_thread_stream_(&s) == GIN_SUCCESS
                   ? CUDA_SUCCESS
                   : CUDA_ERROR_INVALID_CONTEXT;
  /* All three, in this order, whatever each returns; the first error.
   * Each is timed: under MPS, releasing a view of a rank whose client is
   * being torn down returns only with that teardown (docs/RELIABILITY.md);
   * a slow one is logged with where the time went. */
  uint64_t t0 = gin_now_ns();
  CUresult r1 = cu.MemUnmap(m->va, m->size);
  uint64_t t1 = gin_now_ns();
  CUresult r2 = cu.MemAddressFree(m->va, m->size);
  uint64_t t2 = gin_now_ns();
  CUresult r3 = cu.MemRelease(m->mem);
  uint64_t t3 = gin_now_ns();
  if (t3 - t0 > GIN_SLOW_RELEASE_NS)
    GIN_WARN(MEM,
             "releasing a VMM window of %zu bytes took %.1f ms (cuMemUnmap "
             "%.1f, cuMemAddressFree %.1f, cuMemRelease %.1f)",
             m->size, (double)(t3 - t0) / 1e6, (double)(t1 - t0) / 1e6,
             (double)(t2 - t1) / 1e6, (double)(t3 - t2) / 1e6);
  if (r == CUDA_SUCCESS)
    r = r1 != CUDA_SUCCESS ? r1 : r2 != CUDA_SUCCESS ? r2 : r3;
  if (r != CUDA_SUCCESS) {
    const char *n = NULL;
    cu.GetErrorName(r, &n);
    GIN_WARN(MEM,
             "releasing a VMM window of %zu bytes: %s (its memory may "
             "stay allocated)",
             m->size, n ? n : "unknown CUresult");
  }
  if (m->fd >= 0) close(m->fd);
  free(m);
}

/* The VMM calls act on gin's device with its primary context current on
 * this thread: gin_cuda_thread_stream_ makes both so. */
static gin_result_t vmm_thread_ready(int *dev_out) {
  cudaStream_t s;
  GIN_CHECK(gin_cuda_thread_stream_(&s));
  GIN_CUDA_CALL(cudaGetDevice(dev_out), "cudaGetDevice");
  return GIN_SUCCESS;
}

gin_result_t gin_cuda_vmm_alloc_(size_t size, void **ptr_out, cuda_handle_t *h,
                                 void **cookie_out) {
  int dev = 0;
  GIN_CHECK(vmm_thread_ready(&dev));
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t g = 0;
  GIN_CU_CALL(cu.MemGetAllocationGranularity(
                  &g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
              "cuMemGetAllocationGranularity");
  if (g == 0)
    return GIN_ERROR(GIN_ERR_CUDA, "cuMemGetAllocationGranularity gave 0");
  if (size > SIZE_MAX - g)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "VMM allocation of %zu bytes: rounding it up to the "
                     "granularity (%zu) overflows",
                     size, g);
  vmm_map_t *m = (vmm_map_t *)calloc(1, sizeof *m);
  if (!m) return GIN_ERROR(GIN_ERR_NOMEM, "VMM allocation record");
  m->fd = -1;
  m->size = (size + g - 1) / g * g;
  GIN_CHECK(vmm_hold(m, dev, cu.MemCreate(&m->mem, m->size, &p, 0),
                     "cuMemCreate of shareable memory"));
  CUresult r = cu.MemExportToShareableHandle(
      &m->fd, m->mem, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (r != CUDA_SUCCESS) {
    m->fd = -1;
    gin_cuda_vmm_release_(m);
    GIN_CU_CALL(r, "cuMemExportToShareableHandle (POSIX descriptor)");
  }
  fcntl(m->fd, F_SETFD, FD_CLOEXEC); /* a child's copy would pin it */
  h->magic = CUDA_VMM_MAGIC;
  h->size = m->size;
  h->u.fd = m->fd;
  *ptr_out = (void *)m->va;
  *cookie_out = m;
  return GIN_SUCCESS;
}

gin_result_t gin_cuda_vmm_import_(const cuda_handle_t *h, void **ptr_out,
                                  void **cookie_out) {
  /* The exporter chose VMM; this process may not have (GIN_CUDA_VMM
   * differs, or it fell back), so the entry points may not be loaded. */
  if (!cu_ready())
    return GIN_ERROR(GIN_ERR_CUDA, "a peer's VMM window: this driver has no "
                                   "VMM entry points");
  int dev = 0;
  GIN_CHECK(vmm_thread_ready(&dev));
  int fd = gin_pidfd_dup(h->pid, h->u.fd);
  if (fd < 0)
    return GIN_ERROR(GIN_ERR_SYSTEM,
                     "pidfd_getfd(pid %d, fd %d) of a peer's window: %s "
                     "(it needs ptrace access to the peer; GIN_CUDA_VMM=0 "
                     "uses CUDA IPC instead)",
                     (int)h->pid, (int)h->u.fd, strerror(errno));
  vmm_map_t *m = (vmm_map_t *)calloc(1, sizeof *m);
  if (!m) {
    close(fd);
    return GIN_ERROR(GIN_ERR_NOMEM, "VMM import record");
  }
  m->fd = -1;
  m->size = (size_t)h->size;
  CUresult r = cu.MemImportFromShareableHandle(
      &m->mem, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(fd);
  GIN_CHECK(
      vmm_hold(m, dev, r, "cuMemImportFromShareableHandle of a peer's window"));
  *ptr_out = (void *)m->va;
  *cookie_out = m;
  return GIN_SUCCESS;
}
