/*
 * Built against an installed gin through gin::ep_host (install_check.sh):
 * the EP header and format helpers compile and link outside the tree; it
 * prints what gin_ep_size_hint gives for DeepEP's defaults at 8 ranks and
 * one FP8 round trip.
 */
#include <stdio.h>

#include "gin/ep_format.h"
#include "gin/gin_ep.h"

int main(void) {
  gin_ep_config_t cfg = {128, 7168, 8, 288, 1};
  size_t bytes = 0;
  if (gin_ep_size_hint(&cfg, 8, &bytes) != GIN_SUCCESS) {
    fprintf(stderr, "consumer_ep: %s\n", gin_last_error());
    return 1;
  }
  float back = gin_fp8e4m3_to_float(gin_float_to_fp8e4m3(1.5f));
  printf("consumer_ep: %zu bytes a rank at 8 ranks; 1.5 -> fp8 -> %g\n", bytes,
         back);
  return back == 1.5f && bytes > 0 ? 0 : 1;
}
