/* Internal: the check of a program's build against the library (build.c). */
#ifndef GIN_COMM_BUILD_H
#define GIN_COMM_BUILD_H

#include "gin/gin.h"

/* Whether the program that calls `fn` (gin_comm_init...) was compiled
 * with this library's headers and, if by nvcc, is linked with the cuda
 * target's library; GIN_ERR_INVALID says what to rebuild otherwise. */
gin_result_t gin_build_check_(const gin_build_t_ *b, const char *fn);

#endif
