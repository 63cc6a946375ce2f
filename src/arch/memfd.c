/*
 * Shareable host memory through memfd, mapped by peers on the same host via
 * /proc/<pid>/fd/<fd>. No name exists in any file system, so nothing
 * outlives the processes, also after a crash. Used by both targets (the
 * host target's windows, every target's control pages).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/memfd.h"

#define HOST_HANDLE_MAGIC 0x47494e4du /* "GINM" */

typedef struct host_handle {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  uint32_t pad_;
  uint64_t size;
} host_handle_t;
_Static_assert(sizeof(host_handle_t) <= GIN_ARCH_HANDLE_BYTES, "handle size");

static size_t page_round(size_t size) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return (size + pg - 1) / pg * pg;
}

gin_result_t gin_memfd_alloc(size_t size, void **ptr_out,
                             gin_arch_handle_t *handle_out, void **cookie_out) {
  size_t len = page_round(size);
  int fd = memfd_create("gin-window", MFD_CLOEXEC);
  if (fd < 0)
    return GIN_ERROR(GIN_ERR_SYSTEM, "memfd_create(%zu bytes): %s", len,
                     strerror(errno));
  if (ftruncate(fd, (off_t)len) != 0) {
    int e = errno;
    close(fd);
    return GIN_ERROR(e == ENOMEM || e == ENOSPC ? GIN_ERR_NOMEM
                                                : GIN_ERR_SYSTEM,
                     "ftruncate(memfd, %zu): %s", len, strerror(e));
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    return GIN_ERROR(GIN_ERR_NOMEM, "mmap(%zu bytes): %s", len, strerror(e));
  }
  host_handle_t h = {HOST_HANDLE_MAGIC, (int32_t)getpid(), fd, 0, len};
  memset(handle_out, 0, sizeof *handle_out);
  memcpy(handle_out->bytes, &h, sizeof h);
  *ptr_out = p;
  *cookie_out = (void *)(intptr_t)fd;
  return GIN_SUCCESS;
}

void gin_memfd_free(void *ptr, size_t size, void *cookie) {
  munmap(ptr, page_round(size));
  close((int)(intptr_t)cookie);
}

gin_result_t gin_memfd_import(const gin_arch_handle_t *handle, size_t size,
                              void **ptr_out, void **cookie_out) {
  host_handle_t h;
  memcpy(&h, handle->bytes, sizeof h);
  if (h.magic != HOST_HANDLE_MAGIC || h.fd < 0 || h.size < size)
    return GIN_ERROR(GIN_ERR_PROTOCOL,
                     "bad memory handle (magic %#x, fd %d, size %llu < %zu)",
                     h.magic, h.fd, (unsigned long long)h.size, size);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h.pid, (int)h.fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return GIN_ERROR(GIN_ERR_SYSTEM, "cannot open peer memory %s: %s", path,
                     strerror(errno));
  void *p =
      mmap(NULL, (size_t)h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED)
    return GIN_ERROR(GIN_ERR_NOMEM, "mmap of peer memory %s (%llu bytes): %s",
                     path, (unsigned long long)h.size, strerror(e));
  *ptr_out = p;
  *cookie_out = (void *)(uintptr_t)h.size;
  return GIN_SUCCESS;
}

void gin_memfd_unimport(void *ptr, size_t size, void *cookie) {
  munmap(ptr, (size_t)(uintptr_t)cookie);
}

int gin_pidfd_dup(int32_t pid, int32_t fd) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
  if (pfd < 0) return -1;
  int out = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
  int e = errno;
  close(pfd);
  errno = e;
  return out;
#else
  errno = ENOSYS;
  return -1;
#endif
}

/* Both targets' (arch.h): their control pages are memfd memory. */
int gin_arch_shm_fd_check(const gin_arch_handle_t *handle) {
  host_handle_t h;
  memcpy(&h, handle->bytes, sizeof h);
  if (h.magic != HOST_HANDLE_MAGIC || h.fd < 0) return EINVAL;
  int fd = gin_pidfd_dup(h.pid, h.fd);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}
