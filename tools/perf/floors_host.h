/*
 * gin-perf's CPU-side floors: what two processes on this machine get with
 * no library in between. Raw TCP over loopback (ping-pong and a one-way
 * stream) and a shared-memory flag ping-pong, each between this process and
 * a forked child.
 *
 * Plain C11 + POSIX (libc and nothing of gin), so both the host and the
 * cuda build of gin-perf link the same object. Every wait is bounded
 * (FLOOR_TIMEOUT_MS); a failure prints one line to stderr, kills and reaps
 * the child, and releases every descriptor and mapping.
 *
 * Not thread-safe with respect to other fork/waitpid users of the process:
 * call from one thread, while no other thread reaps children with
 * waitpid(-1, ...). The child runs only system calls (no malloc, no stdio),
 * so calling this from a multi-threaded process is safe.
 */
#ifndef GIN_PERF_FLOORS_HOST_H
#define GIN_PERF_FLOORS_HOST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bound on any single wait (accept, recv, send, flag poll, child exit). */
#define FLOOR_TIMEOUT_MS 10000

/*
 * Raw TCP ping-pong over 127.0.0.1 with a forked child: this process sends
 * `bytes` bytes, the child receives them all and sends `bytes` bytes back.
 * TCP_NODELAY on both ends; sends block with a 10 s timeout. With `poll`
 * the receivers busy-poll the socket (non-blocking recv, a pause, a yield
 * after a while) as gin's proxy does: the strict floor. Without it they
 * sleep in recv and pay a wake-up per message, as an ordinary receiver
 * does (netperf's TCP_RR, qperf's tcp_lat). `warmup` untimed round trips,
 * then `iters` timed ones.
 *
 * bytes >= 1, iters >= 1, warmup >= 0. On success writes the median and the
 * 99th percentile round trip in microseconds to *median_us and *p99_us and
 * returns 0; on failure returns -1 (message on stderr), outputs untouched.
 */
int floor_tcp_pingpong(size_t bytes, int poll, int iters, int warmup,
                       double *median_us, double *p99_us);

/*
 * Raw TCP one-way stream over 127.0.0.1: after a 1-byte go from this
 * process, a forked child writes `total` bytes in writes of `bytes` (the
 * last may be shorter); this process reads them all and answers a 1-byte
 * ack. The time runs from the go to the last byte read; the reader
 * busy-polls with a buffer of at least 256 KiB. One untimed round of the
 * same size runs first.
 *
 * bytes >= 1, total >= 1. On success writes total / elapsed in GB/s (1e9
 * bytes per second) to *gbps and returns 0; on failure returns -1.
 */
int floor_tcp_stream(size_t bytes, size_t total, double *gbps);

/*
 * Raw shared-memory flag ping-pong with a forked child: two 64-bit flags on
 * separate cache lines of an anonymous MAP_SHARED mapping; release stores,
 * acquire loads, a busy poll with a pause instruction that yields the CPU
 * after a while (so it still makes progress with fewer cores than spinners).
 *
 * iters >= 1, warmup >= 0. On success writes the median and 99th percentile
 * round trip (us) and returns 0; on failure returns -1.
 */
int floor_shm_pingpong(int iters, int warmup, double *median_us,
                       double *p99_us);

/*
 * The tcp ping-pong in the shape of a proxy, with no library: on each side
 * a worker hands an 8-byte count to a poller through a shared cache line;
 * the poller sends it over 127.0.0.1 (TCP_NODELAY) and polls its socket
 * and the line, and hands what arrives to its worker the same way. Four
 * processes (this one is side A's worker), the polls and waits as
 * floor_tcp_pingpong's. What the design costs over floor_tcp_pingpong:
 * two hand-offs between cores each way. Wants four free cores; with fewer
 * it runs by scheduler turns. Every process is a child of this one (none
 * forks). Same arguments and results as floor_shm_pingpong.
 */
int floor_tcp_relay(int iters, int warmup, double *median_us, double *p99_us);

#ifdef __cplusplus
}
#endif

#endif
