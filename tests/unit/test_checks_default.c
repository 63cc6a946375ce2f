/*
 * Whether the device headers turn the argument checks on, by how
 * GIN_DEVICE_CHECKS is defined on the compile line (CMake builds this file
 * once per case, WANT the expected answer): on when undefined, empty, 1
 * or ON; off only for 0 and OFF. Exit 0 when the answer is WANT.
 */
#include <stdio.h>

#include "gin/device/gin_device.h"

int main(void) {
  if (GIN_DEV_CHECKS_ON != WANT) {
    fprintf(stderr, "checks_default: GIN_DEV_CHECKS_ON is %d, wanted %d\n",
            GIN_DEV_CHECKS_ON, WANT);
    return 1;
  }
  printf("checks_default: %s\n", WANT ? "on" : "off");
  return 0;
}
