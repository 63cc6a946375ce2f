/*
 * The library's version, and the check that a program was built against
 * it: gin_comm_init and gin_comm_init_from_env (inline in gin.h) hand over
 * the program's header version, the sizes of the structs kernels receive
 * and whether the caller was compiled by nvcc. Language bindings, which
 * compile none of gin's headers, ask for the sizes of the public structs
 * they mirror (gin_struct_size_).
 */
#include <string.h>

#include "arch/arch.h"
#include "base/base.h"
#include "comm/build.h"
#include "gin/gin_ep.h"
#include "gin/gin_ep_normal.h"

const char *gin_version(void) {
#define GIN_STR2_(x) #x
#define GIN_STR_(x) GIN_STR2_(x)
  return GIN_STR_(GIN_VERSION_MAJOR) "." GIN_STR_(
      GIN_VERSION_MINOR) "." GIN_STR_(GIN_VERSION_PATCH);
}

void gin_build_self_(gin_build_t_ *out) {
  if (!out) return;
  out->version = GIN_VERSION_NUMBER;
  out->devcomm_bytes = (uint32_t)sizeof(gin_devcomm_t);
  out->window_bytes = (uint32_t)sizeof(gin_window_t);
  out->cuda = 0;
}

size_t gin_struct_size_(const char *name) {
#define GIN_STRUCT_(t)                                                         \
  { #t, sizeof(t) }
  static const struct {
    const char *name;
    size_t size;
  } sizes[] = {
      GIN_STRUCT_(gin_build_t_),          GIN_STRUCT_(gin_unique_id_t),
      GIN_STRUCT_(gin_config_t),          GIN_STRUCT_(gin_devcomm_reqs_t),
      GIN_STRUCT_(gin_setting_t),         GIN_STRUCT_(gin_window_t),
      GIN_STRUCT_(gin_devcomm_t),         GIN_STRUCT_(gin_ep_config_t),
      GIN_STRUCT_(gin_ep_recv_t),         GIN_STRUCT_(gin_ep_dispatch_opts_t),
      GIN_STRUCT_(gin_ep_combine_opts_t), GIN_STRUCT_(gin_epn_config_t),
      GIN_STRUCT_(gin_epn_handle_t),      GIN_STRUCT_(gin_epn_dispatch_args_t),
      GIN_STRUCT_(gin_epn_combine_args_t)};
#undef GIN_STRUCT_
  for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
    if (!strcmp(name, sizes[i].name)) return sizes[i].size;
  return 0;
}

gin_result_t gin_config_check_(const gin_config_t *cfg, const char *fn) {
  GIN_ARG_CHECK(!cfg || cfg->size == 0 || cfg->size == sizeof(gin_config_t),
                "%s: cfg->size %zu is not sizeof(gin_config_t) %zu", fn,
                cfg ? cfg->size : 0, sizeof(gin_config_t));
  GIN_ARG_CHECK(!cfg || cfg->size == 0 || cfg->timeout_ms >= 0,
                "%s: cfg->timeout_ms %d is negative", fn,
                cfg ? cfg->timeout_ms : 0);
  return GIN_SUCCESS;
}

gin_result_t gin_build_check_(const gin_build_t_ *b, const char *fn) {
  const char *lib = gin_arch_device_mem_is_host() ? "gin_host" : "gin_cuda";
  GIN_ARG_CHECK(b, "%s: no build description", fn);
  /* The versioning rule (README): a patch release keeps the ABI; before
   * 1.0 a minor one may change it, from 1.0 only a major one. */
  uint32_t abi = GIN_VERSION_MAJOR ? 10000 : 100;
  if (b->version / abi != GIN_VERSION_NUMBER / abi)
    return GIN_ERROR(GIN_ERR_INVALID,
                     "%s: this program was compiled with gin's headers of "
                     "version %u.%u.%u but runs with the library %s %s: "
                     "rebuild it against that library's headers",
                     fn, b->version / 10000, b->version / 100 % 100,
                     b->version % 100, lib, gin_version());
  if (b->devcomm_bytes != sizeof(gin_devcomm_t) ||
      b->window_bytes != sizeof(gin_window_t))
    return GIN_ERROR(GIN_ERR_INVALID,
                     "%s: this program's gin_devcomm_t and gin_window_t are "
                     "%u and %u bytes, the library's (%s %s) %zu and %zu: "
                     "it was compiled with other headers; rebuild it against "
                     "the library's",
                     fn, b->devcomm_bytes, b->window_bytes, lib, gin_version(),
                     sizeof(gin_devcomm_t), sizeof(gin_window_t));
  if (b->cuda && gin_arch_device_mem_is_host())
    return GIN_ERROR(GIN_ERR_INVALID,
                     "%s: this program was compiled by nvcc for the cuda "
                     "target but is linked with gin_host, the host target's "
                     "library (its memory is host memory a GPU kernel cannot "
                     "use): link gin_cuda (CMake gin::cuda, pkg-config "
                     "gin-cuda)",
                     fn);
  return GIN_SUCCESS;
}
