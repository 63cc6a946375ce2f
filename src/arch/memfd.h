/* memfd-backed shareable host memory (memfd.c). */
#ifndef GIN_ARCH_MEMFD_H
#define GIN_ARCH_MEMFD_H

#include "arch/arch.h"

/* Allocates `size` bytes (rounded up to pages), zeroed, shareable. */
gin_result_t gin_memfd_alloc(size_t size, void **ptr_out,
                             gin_arch_handle_t *handle_out, void **cookie_out);
void gin_memfd_free(void *ptr, size_t size, void *cookie);
/* Maps memory a process on this host exported with gin_memfd_alloc. */
gin_result_t gin_memfd_import(const gin_arch_handle_t *handle, size_t size,
                              void **ptr_out, void **cookie_out);
void gin_memfd_unimport(void *ptr, size_t size, void *cookie);

/* Duplicates descriptor `fd` of process `pid` into this process
 * (pidfd_getfd: Linux 5.6+, and ptrace access to pid). Returns the new
 * descriptor (close-on-exec), or -1 with errno set. */
int gin_pidfd_dup(int32_t pid, int32_t fd);

#endif
