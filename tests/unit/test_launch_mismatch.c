/*
 * A kernel compiled for the host target (by a C compiler) in a program
 * linked with gin_cuda: gin_launch refuses it and says what to rebuild,
 * where the kernel would otherwise run on the CPU over device memory.
 * Needs no GPU. Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <string.h>

#include "gin/device/gin_device.h"
#include "gin/gin.h"

typedef struct {
  int *flag;
} args_t;

GIN_KERNEL(k_touch, args_t) { *args.flag = 1; }

int main(void) {
  int flag = 0;
  args_t a = {&flag};
  gin_result_t r = gin_launch(k_touch, 1, 1, 0, &a);
  if (r != GIN_ERR_INVALID || flag != 0 ||
      !strstr(gin_last_error(), "compiled for the host target") ||
      !strstr(gin_last_error(), "linked with gin_cuda")) {
    fprintf(stderr, "launch_mismatch: got %s '%s', kernel ran: %d\n",
            gin_strerror(r), gin_last_error(), flag);
    return 1;
  }
  printf("launch_mismatch: refused: %s\n", gin_last_error());
  return 0;
}
