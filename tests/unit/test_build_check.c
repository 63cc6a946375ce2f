/*
 * The check of a program's build at init (src/comm/build.c): the same
 * version or another patch release passes; another minor release (before
 * 1.0) or other struct sizes fail naming what to rebuild; the struct
 * sizes a language binding checks (gin_struct_size_). Exit 0 pass.
 */
#include <stdio.h>
#include <string.h>

#include "comm/build.h"
#include "gin/gin_ep.h"
#include "unit_check.h"

static gin_result_t check(uint32_t version, uint32_t dc, uint32_t cuda) {
  gin_build_t_ b = GIN_BUILD_INIT_;
  b.version = version;
  b.devcomm_bytes += dc;
  b.cuda = cuda;
  return gin_build_check_(&b, "test");
}

int main(void) {
  uint32_t v = GIN_VERSION_NUMBER;
  CHECK(check(v, 0, 0) == GIN_SUCCESS, "the same build");
  CHECK(check(v + 1, 0, 0) == GIN_SUCCESS, "the next patch release");
  CHECK(check(v - v % 100, 0, 0) == GIN_SUCCESS, "the first patch release");
  CHECK(check(v + 100, 0, 0) == GIN_ERR_INVALID &&
            strstr(gin_last_error(), "rebuild it"),
        "the next minor release: %s", gin_last_error());
  CHECK(check(v, 8, 0) == GIN_ERR_INVALID &&
            strstr(gin_last_error(), "gin_devcomm_t"),
        "other struct sizes: %s", gin_last_error());
  CHECK(gin_struct_size_("gin_config_t") == sizeof(gin_config_t) &&
            gin_struct_size_("gin_window_t") == sizeof(gin_window_t) &&
            gin_struct_size_("gin_ep_recv_t") == sizeof(gin_ep_recv_t) &&
            gin_struct_size_("gin_ep_dispatch_opts_t") ==
                sizeof(gin_ep_dispatch_opts_t),
        "gin_struct_size_ of known structs");
  CHECK(gin_struct_size_("gin_no_such_t") == 0 && gin_struct_size_(NULL) == 0,
        "gin_struct_size_ of unknown names");
  printf("build_check: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
