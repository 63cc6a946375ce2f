/*
 * Ranks that share a GPU which takes turns between its processes by time
 * slice (no MPS): which ranks, how many GPUs, and which rank tells the
 * job. Pure (no I/O, no allocation, thread safe): comm.c feeds it the
 * all-gathered peer records, tests/unit/test_sharing.c feeds it cases.
 *
 * Layering: comm; includes nothing of gin's.
 */
#ifndef GIN_COMM_SHARING_H
#define GIN_COMM_SHARING_H

#include <stddef.h>
#include <stdint.h>

/* dev_of[i] is the lowest rank on rank i's device (i itself when it is
 * the first or alone; a value outside [0, nranks) counts as alone), and
 * sliced[i] whether rank i's device time-slices. Returns how many ranks
 * share a time-sliced device with another rank; *devices_out counts those
 * devices and *first_out is the lowest of those ranks (-1 when none). */
int gin_sharing_sliced(int nranks, const int *dev_of, const uint8_t *sliced,
                       int *devices_out, int *first_out);

/* The one warning of the job, which its lowest rank on a shared
 * time-sliced device logs: the counts, the ranks, the cost and the fix.
 * Returns 1 with the text in msg (len bytes, truncated to fit) when `rank`
 * is that rank, else 0 and msg is left empty. */
int gin_sharing_note(int nranks, const int *dev_of, const uint8_t *sliced,
                     int rank, char *msg, size_t len);

#endif
