/* gin_mem_alloc / gin_mem_free and the registry of allocations that can
 * back windows. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

typedef struct gin_alloc {
  gin_alloc_info_t info;
  void *cookie;
  int refs;
  struct gin_alloc *next;
} gin_alloc_t;

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static gin_alloc_t *alloc_head;

gin_result_t gin_mem_alloc(size_t size, void **ptr_out) {
  GIN_ARG_CHECK(ptr_out, "gin_mem_alloc: ptr_out is NULL");
  GIN_ARG_CHECK(size > 0, "gin_mem_alloc: size is 0");
  GIN_ARG_CHECK(size <= (size_t)PTRDIFF_MAX,
                "gin_mem_alloc: size %zu is larger than PTRDIFF_MAX (a "
                "negative size converted to size_t?)",
                size);
  gin_alloc_t *a = (gin_alloc_t *)calloc(1, sizeof *a);
  if (!a) return GIN_ERROR(GIN_ERR_NOMEM, "gin_mem_alloc: no host memory");
  gin_result_t res =
      gin_arch_shm_alloc(size, &a->info.base, &a->info.handle, &a->cookie);
  if (res != GIN_SUCCESS) {
    free(a);
    return res;
  }
  a->info.size = size;
  pthread_mutex_lock(&alloc_lock);
  a->next = alloc_head;
  alloc_head = a;
  pthread_mutex_unlock(&alloc_lock);
  GIN_TRACE(MEM, "gin_mem_alloc %zu bytes at %p", size, a->info.base);
  *ptr_out = a->info.base;
  return GIN_SUCCESS;
}

gin_result_t gin_mem_free(void *ptr) {
  GIN_ARG_CHECK(ptr, "gin_mem_free: ptr is NULL");
  pthread_mutex_lock(&alloc_lock);
  gin_alloc_t **pp = &alloc_head;
  while (*pp && (*pp)->info.base != ptr)
    pp = &(*pp)->next;
  gin_alloc_t *a = *pp;
  if (a && a->refs > 0) {
    int refs = a->refs;
    pthread_mutex_unlock(&alloc_lock);
    return GIN_ERROR(GIN_ERR_STATE,
                     "gin_mem_free(%p): still backs %d registered window(s); "
                     "deregister them first",
                     ptr, refs);
  }
  if (a) *pp = a->next;
  pthread_mutex_unlock(&alloc_lock);
  if (!a)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "gin_mem_free(%p): not an allocation of gin_mem_alloc "
                     "(or freed twice)",
                     ptr);
  gin_arch_shm_free(a->info.base, a->info.size, a->cookie);
  free(a);
  return GIN_SUCCESS;
}

gin_result_t gin_mem_lookup_(const void *ptr, size_t size,
                             gin_alloc_info_t *out) {
  const char *p = (const char *)ptr;
  pthread_mutex_lock(&alloc_lock);
  gin_alloc_t *a = alloc_head;
  for (; a; a = a->next) {
    const char *b = (const char *)a->info.base;
    if (p >= b && p < b + a->info.size) break;
  }
  gin_alloc_info_t info;
  if (a) info = a->info;
  pthread_mutex_unlock(&alloc_lock);
  if (!a)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "%p was not allocated by gin_mem_alloc (or was freed)",
                     ptr);
  size_t off = (size_t)(p - (const char *)info.base);
  if (size > info.size - off)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "[%p, +%zu) runs past its allocation of %zu bytes at %p "
                     "(offset %zu)",
                     ptr, size, info.size, info.base, off);
  *out = info;
  return GIN_SUCCESS;
}

void gin_mem_ref_(void *base, int delta) {
  pthread_mutex_lock(&alloc_lock);
  for (gin_alloc_t *a = alloc_head; a; a = a->next)
    if (a->info.base == base) a->refs += delta;
  pthread_mutex_unlock(&alloc_lock);
}

gin_result_t gin_mem_copy(void *dst, const void *src, size_t bytes) {
  GIN_ARG_CHECK(dst && src, "gin_mem_copy: NULL %s", dst ? "src" : "dst");
  return gin_arch_copy(dst, src, bytes);
}

gin_result_t gin_mem_set(void *dst, int value, size_t bytes) {
  GIN_ARG_CHECK(dst, "gin_mem_set: dst is NULL");
  return gin_arch_memset(dst, value, bytes);
}
