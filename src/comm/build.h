/* Internal: the check of a program's build against the library (build.c). */
#ifndef GIN_COMM_BUILD_H
#define GIN_COMM_BUILD_H

#include "gin/gin.h"

/* Whether the program that calls `fn` (gin_comm_init...) was compiled
 * with this library's headers and, if by nvcc, is linked with the cuda
 * target's library; GIN_ERR_INVALID says what to rebuild otherwise. */
gin_result_t gin_build_check_(const gin_build_t_ *b, const char *fn);

/* Whether cfg (NULL: defaults) is one gin_comm_init takes; GIN_ERR_INVALID
 * names the field otherwise. Checked before anything starts (a bootstrap
 * root, say). */
gin_result_t gin_config_check_(const gin_config_t *cfg, const char *fn);

#endif
