/* Ranks sharing a time-sliced GPU (sharing.h). */
#include "comm/sharing.h"

#include <stdio.h>
#include <string.h>

/* The device rank i is on, as its lowest rank. */
static int sharing_dev(int nranks, const int *dev_of, int i) {
  int d = dev_of[i];
  return d >= 0 && d < nranks ? d : i;
}

/* Whether rank i shares its time-sliced device with another rank. */
static int sharing_hit(int nranks, const int *dev_of, const uint8_t *sliced,
                       int i) {
  if (!sliced[i]) return 0;
  int d = sharing_dev(nranks, dev_of, i);
  for (int j = 0; j < nranks; j++)
    if (j != i && sharing_dev(nranks, dev_of, j) == d) return 1;
  return 0;
}

int gin_sharing_sliced(int nranks, const int *dev_of, const uint8_t *sliced,
                       int *devices_out, int *first_out) {
  int count = 0, devices = 0, first = -1;
  for (int i = 0; i < nranks; i++) {
    if (!sharing_hit(nranks, dev_of, sliced, i)) continue;
    if (first < 0) first = i;
    count++;
    /* A device counts once, at the first of its sharing ranks: an
     * earlier rank on it that time-slices shares it with rank i. */
    int d = sharing_dev(nranks, dev_of, i), seen = 0;
    for (int j = 0; j < i && !seen; j++)
      seen = sliced[j] && sharing_dev(nranks, dev_of, j) == d;
    devices += !seen;
  }
  *devices_out = devices;
  *first_out = first;
  return count;
}

/* Appends the sharing ranks as ranges ("0-3, 8") to buf, leaving room
 * for ", ..." when they do not all fit. */
static void sharing_ranks(int nranks, const int *dev_of, const uint8_t *sliced,
                          char *buf, size_t len) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < nranks; i++) {
    if (!sharing_hit(nranks, dev_of, sliced, i)) continue;
    int j = i;
    while (j + 1 < nranks && sharing_hit(nranks, dev_of, sliced, j + 1))
      j++;
    char part[32];
    int n = j > i ? snprintf(part, sizeof part, "%s%d-%d", k ? ", " : "", i, j)
                  : snprintf(part, sizeof part, "%s%d", k ? ", " : "", i);
    if (k + (size_t)n + 6 >= len) {
      snprintf(buf + k, len - k, ", ...");
      return;
    }
    memcpy(buf + k, part, (size_t)n + 1);
    k += (size_t)n;
    i = j;
  }
}

int gin_sharing_note(int nranks, const int *dev_of, const uint8_t *sliced,
                     int rank, char *msg, size_t len) {
  int devices, first;
  if (len) msg[0] = '\0';
  int count = gin_sharing_sliced(nranks, dev_of, sliced, &devices, &first);
  if (count == 0 || rank != first || len == 0) return 0;
  char ranks[160];
  sharing_ranks(nranks, dev_of, sliced, ranks, sizeof ranks);
  snprintf(msg, len,
           "%d ranks share %d GPU%s without MPS (rank%s %s): they take turns "
           "on the GPU by time slice, so each exchange between them takes "
           "milliseconds instead of microseconds. Start the MPS daemon on "
           "each host before the job (nvidia-cuda-mps-control -d), or launch "
           "with ginrun, which starts one; GIN_MPS=0 silences this",
           count, devices, devices == 1 ? "" : "s", count == 1 ? "" : "s",
           ranks);
  return 1;
}
